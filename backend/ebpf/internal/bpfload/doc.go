// Package bpfload loads a BPF collection with its programs verified side
// by side: the kernel's verifier runs once per program, in the loading
// thread, so cilium/ebpf's LoadAndAssign, which loads them one after the
// other, waits for each in turn; with ~30 programs that was most of
// iotrace's start-up (issue 28). Hand-written because the library loads
// a collection's programs serially by design.
package bpfload
