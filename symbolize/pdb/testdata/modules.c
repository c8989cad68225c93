/* modules.c: a freestanding Windows program for the PDB reader's tests,
 * built by the tests with clang (--target=*-pc-windows-msvc -gcodeview)
 * and lld-link /debug. */
static volatile int sink;
__declspec(noinline) int inner_fn(int x) { sink = x; return x + 1; }
__declspec(noinline) int outer_fn(int x) { return inner_fn(x) * 2; }
const char message[] = "iotrace";
int mainCRTStartup(void) { return outer_fn(3) + message[0]; }
