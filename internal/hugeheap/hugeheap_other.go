//go:build !linux

package hugeheap

// Advise does nothing: transparent huge pages are Linux's.
func Advise(size int) (lo, hi uintptr, err error) { return 0, 0, nil }
