package ring

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// newArena reserves and commits n bytes outside the Go heap (see
// arena_unix.go); Windows backs the pages as they are touched.
func newArena(n int) ([]byte, error) {
	p, err := windows.VirtualAlloc(0, uintptr(n), windows.MEM_RESERVE|windows.MEM_COMMIT, windows.PAGE_READWRITE)
	if err != nil {
		return nil, err
	}
	// The slice's words set directly: memory the Go runtime does not own
	// (as unix.Mmap's slice is).
	var b []byte
	words := (*[3]uintptr)(unsafe.Pointer(&b))
	words[0], words[1], words[2] = p, uintptr(n), uintptr(n)
	return b, nil
}

func freeArena(b []byte) error {
	return windows.VirtualFree(uintptr(unsafe.Pointer(unsafe.SliceData(b))), 0, windows.MEM_RELEASE)
}
