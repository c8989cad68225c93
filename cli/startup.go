package cli

import (
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/hugeheap"
)

// A live backend's start-up allocates tens of MiB within a tenth of a
// second (the kernel's BTF and its index, the BPF objects' parse), most of
// it garbage within the same tenth: the process's memory policy differs
// while it lasts, until the trace begins (the sink's Begin).
const (
	// liveHeapAdvised is how much of the heap's address space asks for
	// huge pages (package hugeheap): about what the eBPF backend's
	// start-up touches (32 MiB gave the fewest faults of 16, 32, 64 and
	// 128).
	liveHeapAdvised = 32 << 20
	// startupGCPercent is the collector's target meanwhile: at the
	// default 100 it ran four cycles during `record -- /bin/true`'s
	// start-up, at 400 one (0.95x of its wall time, docs/benchmarks.md).
	// A GOGC the user set is left alone.
	startupGCPercent = 400
)

// statStartupMemory counts, in the trace's own counters beside the
// backend's start-up phases, the time startupMemory took (the wait for the
// collector to free hugeheap's block, at most 20 ms), which comes before
// the backend starts its own clock.
const statStartupMemory = "startup µs: heap: huge pages asked, collector target set (before the backend)"

// startupMemory sets the start-up memory policy and returns sink wrapped
// so that its Begin restores the collector's target and its End counts
// the time this took (statStartupMemory), and a restore to call when the
// backend returns (Begin may never come: an error before). The huge page
// advice stays: it is bounded (package hugeheap).
func startupMemory(sink event.Sink) (event.Sink, func()) {
	t0 := time.Now()
	// Where the kernel gives no huge pages nothing changes, so the
	// advice's result is not shown.
	_, _, _ = hugeheap.Advise(liveHeapAdvised)
	restore := func() {}
	if os.Getenv("GOGC") == "" {
		prev := debug.SetGCPercent(startupGCPercent)
		if prev != startupGCPercent {
			var once sync.Once
			restore = func() { once.Do(func() { debug.SetGCPercent(prev) }) }
		}
		// Else another live start-up of this process set it (tests run
		// several): its restore is the one that counts.
	}
	return startupSink{Sink: sink, begin: restore, took: time.Since(t0)}, restore
}

// startupSink is a sink that calls begin before passing Begin on and adds
// statStartupMemory to the trailer.
type startupSink struct {
	event.Sink
	begin func()
	took  time.Duration
}

func (s startupSink) Begin(h *event.Header) error {
	s.begin()
	return s.Sink.Begin(h)
}

func (s startupSink) End(t *event.Trailer) error {
	t.Stats.Add(event.CountInfo, statStartupMemory, uint64(s.took.Microseconds()))
	return s.Sink.End(t)
}
