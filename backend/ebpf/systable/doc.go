// Package systable is the table of the Linux system calls iotrace traces:
// one row per call (Table) saying what each argument is, which operation
// the call is, what its result means, what the kernel side must read
// beyond the six argument registers, and which named handler, if any,
// does what the argument roles cannot say (a new descriptor, a rename of
// open files, a dup). Every architecture's number for a call comes from
// the generated numbers.go (go generate), so a row names its call once.
//
// The package knows no BPF: Row.Decode turns the raw argument registers
// of a call into the event's fields and the references a tracer must
// resolve itself (descriptors, directories, strings in the caller's
// memory), so a backend that reads registers another way (ptrace) decodes
// a call from the same row. The eBPF backend turns a row into the BPF
// programs' per-call descriptor (backend/ebpf, cookie) and implements the
// handlers (backend/ebpf/handlers.go). docs/linux.md, "Adding a system
// call", shows the edits a call needs.
//
// Hand-written rather than taken from strace or a library: strace's
// tables are C and describe printing, not the event model; x/sys/unix
// gives the numbers, which numbers.go is generated from.
package systable
