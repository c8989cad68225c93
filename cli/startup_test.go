package cli

import (
	"runtime/debug"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// gcPercent reads the collector's target (SetGCPercent is the only
// reader).
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

type beginSink struct {
	event.Sink
	begun   int
	trailer *event.Trailer
}

func (s *beginSink) Begin(*event.Header) error  { s.begun++; return nil }
func (s *beginSink) End(t *event.Trailer) error { s.trailer = t; return nil }

// TestStartupMemory: the collector's target is startupGCPercent from the
// start until the trace begins, then what it was; Begin is passed on; a
// restore after Begin changes nothing; a second start-up meanwhile leaves
// the target to the first; a GOGC the user set is kept; the trailer
// counts the time taken.
func TestStartupMemory(t *testing.T) {
	t.Setenv("GOGC", "")
	prev := gcPercent()
	inner := &beginSink{}
	sink, restore := startupMemory(inner)
	defer restore()
	if p := gcPercent(); p != startupGCPercent {
		t.Fatalf("during start-up: GOGC %d, want %d", p, startupGCPercent)
	}
	_, restoreOther := startupMemory(inner)
	restoreOther()
	if p := gcPercent(); p != startupGCPercent {
		t.Fatalf("a second start-up: GOGC %d after its restore, want %d", p, startupGCPercent)
	}
	if err := sink.Begin(&event.Header{}); err != nil || inner.begun != 1 {
		t.Fatalf("Begin: %v, passed on %d times", err, inner.begun)
	}
	if p := gcPercent(); p != prev {
		t.Fatalf("after Begin: GOGC %d, want %d", p, prev)
	}
	debug.SetGCPercent(prev + 1)
	restore()
	if p := gcPercent(); p != prev+1 {
		t.Errorf("a restore after Begin set GOGC %d", p)
	}
	debug.SetGCPercent(prev)
	var tr event.Trailer
	if err := sink.End(&tr); err != nil || inner.trailer != &tr {
		t.Fatalf("End: %v, passed on: %v", err, inner.trailer == &tr)
	}
	found := false
	for _, c := range tr.Stats.Counters {
		found = found || (c.Kind == event.CountInfo && c.Name == statStartupMemory)
	}
	if !found {
		t.Errorf("trailer without %q: %+v", statStartupMemory, tr.Stats)
	}

	t.Setenv("GOGC", "200")
	_, restore2 := startupMemory(inner)
	defer restore2()
	if p := gcPercent(); p != prev {
		t.Errorf("with GOGC set: target %d, want %d", p, prev)
	}
}
