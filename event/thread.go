package event

import "fmt"

// NoCPU is the CPU field of a ThreadKey whose TID is not 0.
const NoCPU = ^uint32(0)

// ThreadKey identifies a thread for grouping, pairing and ordering.
//
// TID 0 is not one thread: every CPU has its own idle thread with TID 0
// (Windows CID 0:0, Linux swapper/N). The key of a TID-0 thread therefore
// includes its CPU; for every other thread CPU is [NoCPU] so that a thread
// that migrates between CPUs keeps one key. Always build keys with
// [MakeThreadKey].
type ThreadKey struct {
	Pid, Tid uint32
	CPU      uint32
}

// MakeThreadKey returns the key for thread tid of process pid observed on
// cpu.
func MakeThreadKey(pid, tid, cpu uint32) ThreadKey {
	if tid != 0 {
		cpu = NoCPU
	}
	return ThreadKey{Pid: pid, Tid: tid, CPU: cpu}
}

// IsIdle reports whether the key is a per-CPU idle thread.
func (k ThreadKey) IsIdle() bool { return k.Tid == 0 }

func (k ThreadKey) String() string {
	if k.Tid == 0 {
		return fmt.Sprintf("%d/0@cpu%d", k.Pid, k.CPU)
	}
	return fmt.Sprintf("%d/%d", k.Pid, k.Tid)
}

// ProcessKey identifies a process across pid reuse: its pid and start time
// (nanoseconds from the trace start; negative or 0 when it started before
// the trace and the exact time is unknown).
type ProcessKey struct {
	Pid   uint32
	Start int64
}

func (k ProcessKey) String() string { return fmt.Sprintf("%d@%d", k.Pid, k.Start) }
