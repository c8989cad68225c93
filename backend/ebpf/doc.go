// Package ebpf is iotrace's Linux backend: file system calls traced with
// eBPF on the syscalls tracepoints, paired in the kernel by thread into one
// record per call (enter time, duration, arguments, result, path strings),
// the process life cycle from the sched tracepoints, io_uring requests,
// and, through package blockio, block I/O linked to the system call that
// caused it.
//
// User space keeps each process's descriptor table and working directory
// (package fdtable), seeded by a /proc rundown at the start (package
// procfs), so every event carries a resolved path and the trace carries
// the facts to resolve it again anywhere. Ring-buffer losses and unpaired
// enters and exits are counted per CPU and reported in the trailer's
// Stats. docs/linux.md describes the design.
package ebpf
