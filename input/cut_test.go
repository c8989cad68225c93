package input

import (
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// TestCutSink: a stack of 10,000 frames (an .etl's stack walks can join
// several records of 8,192 frames each) reaches the sink cut to
// event.MaxStackFrames, flagged and counted; the reader's own fact is left
// whole; what needs no cut passes as it is.
func TestCutSink(t *testing.T) {
	deep := make([]uint64, 10_000)
	rec := synth.NewRecorder()
	s := newCutSink(rec)
	h := event.Header{OS: "windows"}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Begin(&h))
	f := event.Fact{Kind: event.FactStack, Handle: 1, Kernel: deep, User: deep[:3]}
	must(s.Fact(&f))
	small := event.Fact{Kind: event.FactName, Handle: 2, Name: `C:\x`}
	must(s.Fact(&small))
	must(s.End(&event.Trailer{}))
	got := rec.Trace()
	if k := got.Facts[0].Kernel; len(k) != event.MaxStackFrames || got.Facts[0].Flags != event.FactKernelTruncated || len(f.Kernel) != len(deep) {
		t.Errorf("stack of %d frames (flags %v), the reader's left with %d", len(k), got.Facts[0].Flags, len(f.Kernel))
	}
	if g := got.Facts[1]; g.Name != small.Name || g.Handle != small.Handle {
		t.Errorf("a fact within the limits changed: %+v", got.Facts[1])
	}
	if n := got.Trailer.Stats.Get(event.CountDropped, event.StatFramesCut); n != uint64(len(deep)-event.MaxStackFrames) {
		t.Errorf("%d frames counted cut", n)
	}
}
