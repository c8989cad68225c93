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
	begun int
}

func (s *beginSink) Begin(*event.Header) error { s.begun++; return nil }

// TestStartupMemory: the collector's target is startupGCPercent from the
// start until the trace begins, then what it was; Begin is passed on; a
// restore after Begin changes nothing; a GOGC the user set is kept.
func TestStartupMemory(t *testing.T) {
	t.Setenv("GOGC", "")
	prev := gcPercent()
	inner := &beginSink{}
	sink, restore := startupMemory(inner)
	defer restore()
	if p := gcPercent(); p != startupGCPercent {
		t.Fatalf("during start-up: GOGC %d, want %d", p, startupGCPercent)
	}
	// A second start-up meanwhile leaves the target to the first's restore.
	other, restoreOther := startupMemory(inner)
	restoreOther()
	if p := gcPercent(); p != startupGCPercent || other != event.Sink(inner) {
		t.Fatalf("a second start-up: GOGC %d after its restore (want %d), sink wrapped: %v", p, startupGCPercent, other != event.Sink(inner))
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

	t.Setenv("GOGC", "200")
	same, restore2 := startupMemory(inner)
	defer restore2()
	if p := gcPercent(); p != prev || same != event.Sink(inner) {
		t.Errorf("with GOGC set: target %d (want %d), sink wrapped: %v", p, prev, same != event.Sink(inner))
	}
}
