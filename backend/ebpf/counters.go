package ebpf

import (
	"fmt"
	"sort"
	"strings"
	"time"

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
	cSlotsFull
	cStateStorage
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
	cInflightFull:   {event.CountLost, "syscall events lost: no state for the thread (its slot taken, no task storage: memory)", false},
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
	cSlotsFull:      {event.CountInfo, "system-call records sent through the ring buffer: their CPU's slots full (the reader behind)", false},
	cStateStorage:   {event.CountInfo, "threads whose state went to task storage, not a thread slot (the slot another thread's, an exec by a non-leader thread, or an asynchronous request first)", false},
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

// StatSkipped prefixes a program's name in the counter of its runs the
// kernel skipped: a BPF program does not run while the same program is
// already running on that CPU (an interrupt's tracepoint firing inside
// it), and the kernel counts each such run (recursion_misses, read with
// BPF_OBJ_GET_INFO_BY_FD). Block programs are counted by package blockio
// (blockio.StatMissed).
const StatSkipped = "BPF program runs skipped by the kernel (nested on one CPU): "

// skipMeaning says, for each program of the object, how its skipped runs
// are counted and what they mean for the trace (docs/linux.md, "Loss
// accounting"). TestSkipMeaningCoversEveryProgram keeps it complete.
var skipMeaning = map[string]struct {
	kind event.CounterKind
	what string
}{
	"sys_enter":      {event.CountLost, "system calls not recorded (their exits count as without their enter)"},
	"sys_exit":       {event.CountLost, "system call exits missed (the enter is left unpaired, the call not reported)"},
	"sched_fork":     {event.CountUnresolved, "forks missed (the child is named from /proc, or not followed)"},
	"sched_exec":     {event.CountUnresolved, "execs missed (the process keeps its old name)"},
	"sched_exit":     {event.CountUnresolved, "process exits missed (its calls in flight stay unpaired)"},
	"task_rename":    {event.CountUnresolved, "thread renames missed (the old name stays)"},
	"sched_switch":   {event.CountUnresolved, "I/O waits missed (a read that waited may show as a cache hit)"},
	"uring_submit":   {event.CountLost, "io_uring submissions missed (their completions count as without submission)"},
	"uring_complete": {event.CountLost, "io_uring completions missed (the request has no completion)"},
	"dio_begin":      {event.CountUnresolved, "direct I/O starts missed (its block I/O is not linked to its request)"},
	"dio_queued":     {event.CountUnresolved, "direct I/O hand-offs missed (later block I/O of the thread may be linked to the request)"},
	"dio_complete":   {event.CountUnresolved, "direct I/O completions missed (later block I/O of the thread may be linked to the request)"},
	"wb_queue":       {event.CountUnresolved, "writeback requests of sync calls missed (their block I/O is not linked to the call)"},
	"wb_start":       {event.CountUnresolved, "writeback starts missed (the flusher's block I/O is not linked to the sync call)"},
	"wb_written":     {event.CountUnresolved, "writeback ends missed (later flusher block I/O may be linked to the sync call)"},
	"dump_inflight":  {event.CountInfo, "in-flight iterator runs skipped"},
	"pc_evict":       {event.CountUnresolved, "page-cache evictions missed (a later read of those pages may be credited to the fill that brought them in before)"},
}

// skippedName returns the counter name and kind of program prog's skipped
// runs.
func skippedName(prog string) (string, event.CounterKind) {
	m, ok := skipMeaning[prog]
	if !ok {
		return StatSkipped + prog, event.CountLost
	}
	return StatSkipped + prog + ": " + m.what, m.kind
}

// addSkipped adds the programs' skipped runs (by program name) to s; a
// program that skipped none adds nothing.
func addSkipped(s *event.Stats, runs map[string]uint64) {
	for prog, n := range runs {
		if n != 0 {
			name, kind := skippedName(prog)
			s.Add(kind, name, n)
		}
	}
}

// lossWarning is the warning of records lost so far to a full ring buffer
// of size bytes (the caller's Warn names the backend).
func lossWarning(lost uint64, size uint32) string {
	return fmt.Sprintf("%d records lost so far: the ring buffer (%s) is full; raise --buffer-size or narrow the filters", lost, sizeText(size))
}

// sizeText writes a byte count in the largest binary unit that divides it.
func sizeText(n uint32) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// growthWarner decides when a count that only grows is warned about: the
// first time it is above 0, then at most every Interval while it grows.
type growthWarner struct {
	Interval time.Duration // 0: a minute
	warned   uint64        // the count last warned about
	next     time.Time     // no warning before then
}

// due reports whether count, read at now, is to be warned about.
func (g *growthWarner) due(now time.Time, count uint64) bool {
	if count <= g.warned || now.Before(g.next) {
		return false
	}
	interval := g.Interval
	if interval == 0 {
		interval = time.Minute
	}
	g.warned, g.next = count, now.Add(interval)
	return true
}

// skippedWarning is the warning of the programs' skipped runs so far.
func skippedWarning(runs map[string]uint64) string {
	names := make([]string, 0, len(runs))
	for name, n := range runs {
		if n != 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", name, runs[name])
	}
	return "the kernel skipped runs of BPF programs already running on their CPU (counted in the trace): " + b.String()
}
