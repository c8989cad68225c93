package script

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"go.starlark.net/starlark"
)

// DefaultMaxMemory bounds how much the process's heap may grow while a
// script runs (its lists, dicts, strings and aggregations) when
// Options.MaxMemory is 0: 1 GiB.
const DefaultMaxMemory = 1 << 30

// maxRangeLen bounds range(): list(range(n)) would build n values in one
// step, out of the memory watch's reach between steps.
const maxRangeLen = 1 << 24

// memWatch enforces the memory limit. Starlark counts steps but not
// allocations, so a goroutine samples the heap (runtime/metrics, no
// stop-the-world) every few milliseconds while the script is loaded and
// cancels the interpreter's thread once the heap has grown by more than
// the limit since the script was loaded (after a garbage collection
// confirms it). The thread stops at its next step with the error; every
// later call fails with it, on_end included once it would pass the limit
// again. One step can still allocate past the limit before the next check:
// Starlark caps a single repetition at 1 GiB, and range() is capped at
// maxRangeLen elements here.
type memWatch struct {
	limit, base uint64
	thread      *starlark.Thread
	over        atomic.Bool
	heap        atomic.Uint64 // the heap when the limit was passed
	wanted      atomic.Uint64 // what the step refused asked for (0: the watch saw the limit passed)
	stop        chan struct{}
	wg          sync.WaitGroup
}

// heapBytes returns the bytes of heap objects, live or not yet collected.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// liveHeap collects garbage and returns the live heap.
func liveHeap() uint64 {
	runtime.GC()
	return heapBytes()
}

func startMemWatch(t *starlark.Thread, limit uint64) *memWatch {
	w := &memWatch{limit: limit, base: liveHeap(), thread: t, stop: make(chan struct{})}
	w.wg.Add(1)
	go w.run()
	return w
}

func (w *memWatch) run() {
	defer w.wg.Done()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		if heapBytes() < w.base+w.limit {
			continue
		}
		if h := liveHeap(); h >= w.base+w.limit {
			w.heap.Store(h)
			w.over.Store(true)
			w.thread.Cancel(w.message())
		}
	}
}

// reserve checks that the heap can grow by need more bytes within the
// limit, after a garbage collection if it seems it cannot; past it, the
// limit is passed (as if the watch had seen it) and its error returned:
// the allocation is never made.
func (w *memWatch) reserve(need uint64) error {
	grown := func(h uint64) uint64 { return h - min(h, w.base) }
	if satAdd(grown(heapBytes()), need) <= w.limit {
		return nil
	}
	g := grown(liveHeap())
	if satAdd(g, need) <= w.limit {
		return nil
	}
	w.heap.Store(w.base + g)
	w.wanted.Store(need)
	w.over.Store(true)
	return w.error()
}

func (w *memWatch) message() string {
	return w.error().limitMessage()
}

func (w *memWatch) error() *MemoryLimitError {
	return &MemoryLimitError{Limit: w.limit, Grown: w.heap.Load() - w.base, Wanted: w.wanted.Load()}
}

// err returns the limit's error once it was passed, else nil.
func (w *memWatch) err() error {
	if w == nil || !w.over.Load() {
		return nil
	}
	return w.error()
}

// MemoryLimitError is the error of a script stopped because its data
// grew the heap past Options.MaxMemory: a failure of the script, not of
// its input.
type MemoryLimitError struct {
	// Limit is Options.MaxMemory, Grown how much the heap had grown when
	// the script was stopped (bytes).
	Limit, Grown uint64
	// Wanted is what one step asked for that would have passed the
	// limit (refused before it was allocated); 0 when the watch saw the
	// heap past the limit.
	Wanted uint64
}

func (e *MemoryLimitError) Error() string {
	return "script stopped: " + e.limitMessage()
}

func (e *MemoryLimitError) limitMessage() string {
	if e.Wanted > 0 {
		return fmt.Sprintf("memory limit exceeded: one step of the script asked for %s with the heap grown by %s, past its limit of %s; raise it with --max-memory",
			fmtSize(e.Wanted), fmtSize(e.Grown), fmtSize(e.Limit))
	}
	return fmt.Sprintf("memory limit exceeded: the script's data grew the heap by %s, past its limit of %s; raise it with --max-memory",
		fmtSize(e.Grown), fmtSize(e.Limit))
}

func (w *memWatch) close() {
	if w == nil {
		return
	}
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func fmtSize(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

// rangeBuiltin is Starlark's range with a bounded length.
func rangeBuiltin(universe starlark.Value) *starlark.Builtin {
	return starlark.NewBuiltin("range", func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		v, err := starlark.Call(t, universe, args, kwargs)
		if err != nil {
			return nil, err
		}
		if s, ok := v.(starlark.Sequence); ok && s.Len() > maxRangeLen {
			return nil, fmt.Errorf("range of %d elements: scripts may iterate at most %d at once (memory limit)", s.Len(), maxRangeLen)
		}
		return v, nil
	})
}
