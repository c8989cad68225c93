package cli

import (
	"os"
	"runtime/debug"
	"sync"

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

// startupMemory sets the start-up memory policy and returns sink wrapped
// so that its Begin restores the collector's target, and a restore to
// call when the backend returns (Begin may never come: an error before).
// The huge page advice stays: it is bounded (package hugeheap).
func startupMemory(sink event.Sink) (event.Sink, func()) {
	// Where the kernel gives no huge pages nothing changes, so the
	// advice's result is not shown.
	_, _, _ = hugeheap.Advise(liveHeapAdvised)
	if os.Getenv("GOGC") != "" {
		return sink, func() {}
	}
	prev := debug.SetGCPercent(startupGCPercent)
	if prev == startupGCPercent {
		// Another live start-up of this process set it (tests run
		// several): its restore is the one that counts.
		return sink, func() {}
	}
	var once sync.Once
	restore := func() { once.Do(func() { debug.SetGCPercent(prev) }) }
	return beginHook{Sink: sink, begin: restore}, restore
}

// beginHook is a sink that calls begin before passing Begin on.
type beginHook struct {
	event.Sink
	begin func()
}

func (b beginHook) Begin(h *event.Header) error {
	b.begin()
	return b.Sink.Begin(h)
}
