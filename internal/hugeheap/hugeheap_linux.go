package hugeheap

import (
	"os"
	"runtime"
	"runtime/metrics"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// settleWait bounds the wait for the cycle that frees the block.
const settleWait = 20 * time.Millisecond

// Advise asks for huge pages for the Go heap's pages where a block of
// size bytes lay, allocated and dropped at once, and returns when the
// collector has freed it: the heap's next pages are taken from there, the
// lowest free ones. The block is never touched. The kernel's policy is not
// read: under "always" the heap has huge pages anyway, under "never" the
// advice does nothing. It returns the range advised.
func Advise(size int) (lo, hi uintptr, err error) {
	if size < hugePage {
		return 0, 0, nil
	}
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(gc)
	cycles := gc[0].Value.Uint64()
	// Allocated and dropped by a goroutine that ends at once, so that no
	// stack holds the block when the cycle its allocation starts marks:
	// kept only as a number, it is freed in that cycle.
	addr := make(chan uintptr)
	go func() {
		b := make([]byte, size)
		addr <- uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	}()
	lo = <-addr
	hi = lo + uintptr(size)
	// Whole 2 MiB pages only: a partial one would be split off with the
	// mapping's other pages, which stay as they are.
	lo = (lo + hugePage - 1) &^ (hugePage - 1)
	hi &^= hugePage - 1
	// The range is the runtime's, not a slice of ours: the raw call.
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE); e != 0 {
		return 0, 0, &os.SyscallError{Syscall: "madvise", Err: e}
	}
	// Wait for that cycle (about a millisecond on a small heap, with this
	// goroutine's processor left to it), at most settleWait: with the
	// collector off (GOGC=off) none comes. A cycle already running when
	// the block came marked it as new: it survives that one, and the
	// next would come only when the heap had doubled past it. In either
	// case one is forced (the live heap at start-up is a few MiB, so one
	// as large as the block means the block is in it).
	deadline := time.Now().Add(settleWait)
	for {
		metrics.Read(gc)
		if gc[0].Value.Uint64() > cycles {
			break
		}
		if time.Now().After(deadline) {
			runtime.GC()
			return lo, hi, nil
		}
		time.Sleep(50 * time.Microsecond)
	}
	if gc[1].Value.Uint64() >= uint64(size) {
		runtime.GC()
	}
	return lo, hi, nil
}
