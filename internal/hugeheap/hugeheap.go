// Package hugeheap asks Linux to back part of the Go heap with transparent
// huge pages, where the kernel gives them only to memory that asks (the
// "madvise" policy, Debian's and most distributions' default).
//
// Why: a live trace's start-up grows the heap fast (the kernel's BTF, two
// BPF objects), and each 4 KiB page first touched is a page fault. Where
// faults are dear, in virtual machines whose guest page tables are
// shadowed, one cost 18 µs on the machine this was measured on: 3,400 of
// them, about 60 ms of `record -- /bin/true`'s 220 ms. One 2 MiB fault for
// 512 of them made the whole command 0.88x (docs/benchmarks.md). The Go
// runtime stopped asking for huge pages itself in Go 1.21.1 (its GODEBUG
// disablethp only refuses them where the kernel gives them to all memory).
//
// What is advised is bounded: the size asked, once. Memory the collector
// returns there may come back as huge pages (khugepaged), so the process
// may keep that much resident: a bound, not a leak. Written by hand: it is
// one allocation and one system call.
package hugeheap

// hugePage is the size of a transparent huge page on amd64 and arm64 with
// 4 KiB pages: the unit the advice is given in.
const hugePage = 2 << 20
