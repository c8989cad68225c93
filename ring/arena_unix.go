//go:build unix

package ring

import "golang.org/x/sys/unix"

// newArena maps n bytes of anonymous memory outside the Go heap: the
// garbage collector neither scans it nor counts it in the heap whose
// growth paces it (a ring of the Go heap would let the heap grow to twice
// the ring before a collection). Pages are touched only as the ring fills.
func newArena(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err == nil {
		hugePages(b)
	}
	return b, err
}

func freeArena(b []byte) error { return unix.Munmap(b) }
