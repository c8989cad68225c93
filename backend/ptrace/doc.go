// Package ptrace is iotrace's backend that needs no privilege: it traces
// a command it starts, and all its descendants, with ptrace(2), the way
// strace --seccomp-bpf does, and produces the same file-layer events as
// the eBPF backend for every call both trace.
//
// The command is started through a helper (iotrace itself, re-executed:
// child_linux.go) that the tracer seizes (PTRACE_SEIZE with
// TRACESYSGOOD, TRACEFORK, TRACEVFORK, TRACECLONE, TRACEEXEC,
// TRACESECCOMP and EXITKILL), that installs a seccomp filter (filter.go)
// returning SECCOMP_RET_TRACE for the traced calls only, and that then
// executes the command: untraced calls never stop the command, a traced
// one stops it twice (its seccomp stop at entry, its exit stop). The
// calls are read with PTRACE_GET_SYSCALL_INFO (Linux 5.3), their strings
// and structures with process_vm_readv, and decoded into events by the
// eBPF backend's decoder (ebpf.Decoder: the same systable rows, handlers
// and fdtable), so the two backends cannot drift apart.
//
// File layer only: ptrace sees system calls, not block I/O, page-cache
// provenance, io_uring or AIO requests (the calls that submit them are
// counted). docs/linux.md, "Without root: the ptrace backend", says
// what differs and how faults (a setuid program, a tracee killed, the
// tracer killed, Ctrl-C) are handled.
//
// Hand-written on golang.org/x/sys/unix rather than on a ptrace library:
// none does seccomp-filtered tracing of descendants without cgo.
package ptrace
