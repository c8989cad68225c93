package hugeheap

import (
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Advise asks for huge pages for the Go heap's mapping that a new block of
// size bytes lands in (the block is dropped: the collector takes it back
// and the mapping stays advised), when the kernel's policy is madvise.
// Under "always" the heap has them already, under "never" none can be
// had: Result says so. An error is one of reading the policy or the maps,
// or of madvise itself; nothing is changed then.
func Advise(size int) (Result, error) {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if os.IsNotExist(err) {
		return Result{Why: "this kernel has no transparent huge pages"}, nil
	}
	if err != nil {
		return Result{}, err
	}
	mode, err := parseMode(b)
	if err != nil {
		return Result{}, err
	}
	r := Result{Mode: mode}
	if mode != ModeMadvise {
		r.Why = "the kernel's policy is " + string(mode)
		return r, nil
	}
	block := make([]byte, size)
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(block))))
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return Result{}, err
	}
	lo, hi, err := mappingOf(maps, addr)
	if err != nil {
		return Result{}, err
	}
	// The range is the runtime's, not a slice of ours: the raw call.
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), unix.MADV_HUGEPAGE); e != 0 {
		return Result{}, &os.SyscallError{Syscall: "madvise", Err: e}
	}
	runtime.KeepAlive(block)
	// Collected now, the block's pages are the heap's lowest free ones,
	// and what start-up allocates next goes there; left to the next
	// cycle, the heap grows past it first.
	block = nil
	runtime.GC()
	r.Lo, r.Hi = lo, hi
	return r, nil
}
