package ebpf

import (
	"fmt"

	"github.com/iotrace/iotrace/event"
)

// Kernel-side counters (enum counter in bpf/records.h), summed per CPU.
const (
	cLostSyscall = iota
	cLostPath
	cLostProc
	cLostURing
	cExitNoEnter
	cEnterNoExit
	cKindMismatch
	cInflightFull
	cPathRetry
	cPathFailed
	cURingNoSubmit
	cURingFull
	cPidsFull
	cLostAIO
	cAIONoSubmit
	cAIOFull
	cAIOOverCap
	cAIOReapOverCap
	cLostStack
	cLostPC
	cLostUStackCopy
	numCounters
)

// counterDesc says how a kernel counter is reported in event.Stats.
var counterDesc = [numCounters]struct {
	kind   event.CounterKind
	name   string
	perCPU bool
}{
	cLostSyscall:    {event.CountLost, "syscall events lost: ring buffer full", true},
	cLostPath:       {event.CountLost, "path strings lost: ring buffer full", true},
	cLostProc:       {event.CountLost, "process fork/exec/exit records lost: ring buffer full", true},
	cLostURing:      {event.CountLost, "io_uring events lost: ring buffer full", true},
	cExitNoEnter:    {event.CountUnpaired, "syscall exits without their enter (started before tracing)", false},
	cEnterNoExit:    {event.CountUnpaired, "syscalls without exit (thread exited inside)", false},
	cKindMismatch:   {event.CountUnpaired, "syscall exits of another syscall than entered", false},
	cInflightFull:   {event.CountLost, "syscall events lost: no task storage for the thread (memory)", false},
	cPathRetry:      {event.CountInfo, "paths not resident at enter, read at exit", false},
	cPathFailed:     {event.CountUnresolved, "paths unreadable at enter and exit", false},
	cURingNoSubmit:  {event.CountUnpaired, "io_uring completions without submission", false},
	cURingFull:      {event.CountLost, "io_uring events lost: in-flight map full", false},
	cPidsFull:       {event.CountLost, "children not followed: pid map full", false},
	cLostAIO:        {event.CountLost, "AIO events lost: ring buffer full", true},
	cAIONoSubmit:    {event.CountUnpaired, "AIO completions reaped without their submission (submitted before tracing, or not read at submission)", false},
	cAIOFull:        {event.CountLost, "AIO requests not traced: in-flight map full", false},
	cAIOOverCap:     {event.CountLost, "AIO requests not traced: beyond the 64 read per io_submit call", false},
	cAIOReapOverCap: {event.CountLost, "AIO completions not traced: beyond the 4096 read per io_getevents call", false},
	cLostStack:      {event.CountUnresolved, "user stacks sent inline lost: ring buffer full (their events have no user stack)", false},
	cLostPC:         {event.CountLost, "page-cache eviction records lost: ring buffer full (reads of those pages may be misclassified)", false},
	cLostUStackCopy: {event.CountUnresolved, "user stack copies lost: ring buffer full (their events have no user stack)", false},
}

// addCounters adds the per-CPU kernel counters vals[counter][cpu] to s.
// Loss counters are reported per CPU, the rest summed.
func addCounters(s *event.Stats, vals [numCounters][]uint64) {
	for i := range vals {
		d := counterDesc[i]
		var total uint64
		for cpu, v := range vals[i] {
			total += v
			if d.perCPU && v != 0 {
				s.Add(d.kind, fmt.Sprintf("%s (cpu %d)", d.name, cpu), v)
			}
		}
		if !d.perCPU || total == 0 {
			if total != 0 || d.kind != event.CountInfo {
				s.Add(d.kind, d.name, total)
			}
		}
	}
}

// sum adds up one counter's per-CPU values.
func sum(vals []uint64) uint64 {
	var t uint64
	for _, v := range vals {
		t += v
	}
	return t
}

// lostTotal returns the sum of every ring-buffer loss counter.
func lostTotal(vals [numCounters][]uint64) uint64 {
	var t uint64
	for _, i := range []int{cLostSyscall, cLostPath, cLostProc, cLostURing, cInflightFull, cLostAIO, cAIOFull, cLostPC} {
		for _, v := range vals[i] {
			t += v
		}
	}
	return t
}
