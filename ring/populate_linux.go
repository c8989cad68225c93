package ring

import "golang.org/x/sys/unix"

// populateStep is how much of the arena populate backs at a time (a huge
// page): Close waits at most for one step.
const populateStep = 2 << 20

// populate backs the arena with memory on a goroutine of its own, ahead
// of the recording (MADV_POPULATE_WRITE, Linux 5.14; on an older kernel
// the pages are backed as the ring fills, as before). Otherwise the
// reader that hands events over takes the page faults itself while the
// ring fills: on this project's virtual machine a 4 KiB fault cost about
// 15 µs, and a huge page's (zeroing 2 MiB, compacting memory to find it)
// up to 15 ms under load, while the kernel's buffer filled. The window's
// memory is then resident from the start: the budget is taken at once.
// The returned stop ends it early and waits for it.
func populate(b []byte) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for off := 0; off < len(b); off += populateStep {
			select {
			case <-quit:
				return
			default:
			}
			if !populateStepOf(b[off:min(off+populateStep, len(b))]) {
				return
			}
		}
	}()
	return func() { close(quit); <-done }
}

// populateStepOf backs one step. A signal interrupts MADV_POPULATE_WRITE
// (EINTR), and Go's runtime signals its threads (preemption, the
// collector): under load a step was interrupted and the rest of the arena
// was left to the page faults of the filling ring. The step is tried
// again then; false: the kernel cannot populate (too old, or out of
// memory).
func populateStepOf(b []byte) bool {
	for range 1000 {
		switch err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err {
		case nil:
			return true
		case unix.EINTR, unix.EAGAIN:
			continue
		default:
			return false
		}
	}
	return false
}
