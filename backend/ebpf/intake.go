package ebpf

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/iotrace/iotrace/backend/ebpf/reorder"
	"github.com/iotrace/iotrace/backend/ebpf/slots"
	"github.com/iotrace/iotrace/event"
)

// holdBack is how far behind the clock a release goes (package reorder):
// a program reads the clock a few hundred ns before its record is
// readable; 2 ms covers a virtual CPU descheduled meanwhile, and what
// still comes later is counted as late.
const holdBack = 2_000_000

// errSink reports that the tracker's sink failed (Run reports its error).
var errSink = errors.New("ebpf: the sink failed")

// Counter names of the intake (the trace's trailer).
const (
	statFromSlots = "system-call records read from the per-CPU slots"
	statLate      = "records handed over out of time order (written more than 2 ms after their time: a CPU stalled)"
	statKicks     = "reader wake-ups by the per-CPU slots' writers (none while it polls)"
)

// intake puts the records of the ring buffer and of the per-CPU slots
// into the tracker in time order (package reorder). Source 0 is the ring
// buffer's records, copied as read (they are few: the hot calls go to the
// slots); source 1+cpu the slots of cpu, read in place and freed once
// handed over.
type intake struct {
	sl     *slots.Reader
	queue  reorder.Queue
	mg     *reorder.Merger
	handle func([]byte) error
	kicked bool // a REC_KICK came: a CPU's slots are filling

	// Polling (wait): whether the reader polls, and the slots' records
	// read when it last chose.
	polling  bool
	lastRead uint64
	since    time.Time
	kicks    uint64 // REC_KICKs received
}

// While the slots fill, the reader polls them every pollBusy and tells the
// writers so, and they do not wake it: a wake-up (the writer's irq_work,
// then an IPI to the reader's CPU) cost the writing CPU about 14 µs on a
// KVM guest, 13 ns a call at one per quarter ring (docs/benchmarks.md).
// It polls while at least busyRecords are read per pollBusy. pollBusy is
// well within the time a CPU fills a quarter ring (1,024 slots) at one
// call a microsecond.
const (
	pollBusy    = time.Millisecond
	busyRecords = 64
)

func newIntake(sl *slots.Reader, handle func([]byte) error) *intake {
	in := &intake{sl: sl, handle: handle}
	srcs := []reorder.Source{&in.queue}
	for cpu := range sl.Layout().CPUs {
		srcs = append(srcs, sl.CPU(cpu))
	}
	in.mg = reorder.New(recordTime, srcs...)
	return in
}

// recordTime is the time a record was written, by its header: a system
// call's exit (its start plus its duration), else the header's time (0
// for a record sent ahead of another, which the merge keeps behind the
// record before it in its source).
func recordTime(b []byte) uint64 {
	if len(b) < hdrSize {
		return 0
	}
	t := binary.LittleEndian.Uint64(b[8:])
	if b[0] == recSyscall && len(b) >= 32 {
		t += binary.LittleEndian.Uint64(b[24:])
	}
	return t
}

// ring takes a record read from the ring buffer.
func (in *intake) ring(b []byte) {
	if len(b) > 0 && b[0] == recKick {
		in.kicked = true
		in.kicks++
		return
	}
	in.queue.Add(b)
}

// release hands the tracker the records written before upTo, in time
// order; errSink when the sink failed.
func (in *intake) release(upTo uint64) error {
	in.kicked = false
	err := in.mg.Release(upTo, in.handle)
	in.sl.Flush()
	if err != nil {
		return errSink
	}
	return nil
}

// wait returns how long the reader may sleep, at now, before it looks
// again: idle while the slots are quiet. While they fill (busyRecords or
// more read per pollBusy) it polls every pollBusy and tells the writers;
// it judges once per pollBusy at most, so that a wake-up for the ring
// buffer between two polls does not make it stop (each wake-up hands the
// slots' records over too).
func (in *intake) wait(now time.Time, idle time.Duration) time.Duration {
	// Not the rest of the interval: the ring buffer's reader waits in
	// whole milliseconds.
	if in.polling && now.Sub(in.since) < pollBusy {
		return pollBusy
	}
	n := in.sl.Read()
	busy := n-in.lastRead >= busyRecords
	in.lastRead, in.since = n, now
	if busy != in.polling {
		in.sl.SetPolling(busy)
		in.polling = busy
	}
	if busy {
		return min(pollBusy, idle)
	}
	return idle
}

// stats adds the intake's counters to s.
func (in *intake) stats(s *event.Stats) {
	s.Add(event.CountInfo, statFromSlots, in.sl.Read())
	s.Add(event.CountInfo, statKicks, in.kicks)
	if n := in.mg.Late(); n != 0 {
		s.Add(event.CountInfo, statLate, n)
	}
}
