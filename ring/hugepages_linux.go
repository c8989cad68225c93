package ring

import "golang.org/x/sys/unix"

// hugePages asks for the arena in huge pages where the kernel gives them
// on request (transparent_hugepage "madvise" or "always"): filling the
// ring then takes a page fault per 2 MiB, not per 4 KiB, which a virtual
// machine makes costly (BenchmarkRingEvent). Without them nothing
// changes.
func hugePages(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
