// Package bounded checks, for tests, that reading a hostile input stays
// within a budget of CPU time and memory: the regression tests of files
// built on purpose from a format's size and count fields use it. CPU time,
// not wall time, so that a loaded machine does not fail them; memory as
// the bytes allocated in all (which bounds the peak whatever the collector
// does) and as the live heap, measured after a collection at the points
// the work reports (a sink's calls).
package bounded

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/cputime"
)

// Limits is a budget. A zero field is not checked.
type Limits struct {
	// CPU is the most CPU time (user + system, of the whole process) the
	// work may take; not checked where the OS does not report it.
	CPU time.Duration
	// Alloc is the most bytes the work may allocate, in all.
	Alloc uint64
	// Live is the most the live heap may grow, at the points the work
	// reports (see Measure).
	Live uint64
}

// Default is the budget of issue 35: 2 s and 100 MB.
var Default = Limits{CPU: 2 * time.Second, Alloc: 100 << 20}

// Usage is what a piece of work took.
type Usage struct {
	CPU, Wall   time.Duration
	Alloc, Live uint64
}

// TickEvery is how many calls of a work's tick go between two
// measurements of the live heap (each a collection).
const TickEvery = 1 << 15

// Measure runs fn and returns what it took. fn calls tick where the live
// heap is worth measuring (a sink calls it for every event and fact):
// every TickEvery calls, the heap is collected and its live size noted.
func Measure(fn func(tick func())) Usage {
	var before, after, ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var n int
	var top uint64
	tick := func() {
		if n++; n%TickEvery == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			top = max(top, ms.HeapAlloc)
		}
	}
	cpu, wall := cputime.Process(), time.Now()
	fn(tick)
	u := Usage{CPU: cputime.Process() - cpu, Wall: time.Since(wall)}
	runtime.ReadMemStats(&after)
	u.Alloc = after.TotalAlloc - before.TotalAlloc
	if top = max(top, after.HeapAlloc); top > before.HeapAlloc {
		u.Live = top - before.HeapAlloc
	}
	return u
}

// Check runs fn as Measure does and fails t when it takes more than l;
// what names the work in the message. It returns what fn took.
func Check(t testing.TB, what string, l Limits, fn func(tick func())) Usage {
	t.Helper()
	u := Measure(fn)
	t.Logf("%s: %v CPU (%v wall), %.1f MB allocated, %.1f MB live at most", what, u.CPU, u.Wall, mb(u.Alloc), mb(u.Live))
	if l.CPU > 0 && u.CPU > l.CPU {
		t.Errorf("%s took %v of CPU, more than %v", what, u.CPU, l.CPU)
	}
	if l.Alloc > 0 && u.Alloc > l.Alloc {
		t.Errorf("%s allocated %.1f MB, more than %.1f MB", what, mb(u.Alloc), mb(l.Alloc))
	}
	if l.Live > 0 && u.Live > l.Live {
		t.Errorf("%s held %.1f MB live, more than %.1f MB", what, mb(u.Live), mb(l.Live))
	}
	return u
}

func mb(n uint64) float64 { return float64(n) / (1 << 20) }

// Cancelled runs fn(ctx), cancels ctx after delay, and fails t when fn
// has not returned within limit of the cancel (an interrupted command
// must stop within a second), or returned before it. It returns fn's
// error. A fn that does not return fails the test at limit; its
// goroutine is left behind.
func Cancelled(t testing.TB, what string, delay, limit time.Duration, fn func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("%s: finished (%v) before the cancel: nothing was interrupted", what, err)
		return err
	case <-time.After(delay):
	}
	cancel()
	at := time.Now()
	select {
	case err := <-done:
		t.Logf("%s: returned %v after the cancel", what, time.Since(at))
		return err
	case <-time.After(limit):
		t.Fatalf("%s: still running %v after the cancel", what, limit)
		return nil
	}
}
