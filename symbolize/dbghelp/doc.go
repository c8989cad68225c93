// Package dbghelp names addresses in Windows modules through the system's
// own symbol engine, dbghelp.dll, after the process that loaded them is
// gone: a module is loaded into a private dbghelp session by the identity
// the trace stored for it (the PDB name, GUID and age of its CodeView
// record, symbolize.PDBID), not from the process, and dbghelp finds the
// PDB along a symbol path made of the user's --symbols directories and
// _NT_SYMBOL_PATH.
//
// What dbghelp adds to the pure-Go PDB reader (package pdb, used on every
// OS): every function of a full PDB (static ones too, not only the public
// symbols), undecorated C++ names, source lines, and the symbol servers
// of _NT_SYMBOL_PATH when symsrv.dll sits beside dbghelp.dll.
//
// The Win32 calls (dbghelp_windows.go, dbghelp.dll loaded from the system
// directory on first use, no cgo) sit behind the small API interface; the
// rest is portable and tested on Linux with a fake: the identity and its
// CodeView record, the symbol path, the per-module cache, and the mapping
// of dbghelp's answers to counted outcomes. A Resolver never reports a
// name from a PDB whose GUID and age differ from the module's identity.
//
// dbghelp is single-threaded: every call goes through one process-wide
// lock (in the Windows binding), and a Resolver serializes its own
// sequences of calls.
package dbghelp
