//go:build !linux

package hugeheap

// Advise does nothing: transparent huge pages are Linux's.
func Advise(size int) (Result, error) {
	return Result{Why: "not Linux"}, nil
}
