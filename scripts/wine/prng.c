/* bcryptprimitives.dll for wine 8: Go's Windows runtime asks this DLL for
 * ProcessPrng, which wine 8 lacks (wine 9 has it). The export forwards to
 * advapi32's RtlGenRandom (SystemFunction036). Built by scripts/setup with
 * x86_64-w64-mingw32-gcc into the wine prefix's system32; used only to run
 * iotrace.exe and its test binaries under wine. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	return RtlGenRandom(data, (ULONG)len);
}
