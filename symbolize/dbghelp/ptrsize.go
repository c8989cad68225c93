package dbghelp

import "unsafe"

// ptrSize is the size of a pointer (and size_t) in this process's
// dbghelp structures.
const ptrSize = int(unsafe.Sizeof(uintptr(0)))
