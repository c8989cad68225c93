package tracefile

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

type discardSink struct{}

func (discardSink) Begin(*event.Header) error { return nil }
func (discardSink) Event(*event.Event) error  { return nil }
func (discardSink) Fact(*event.Fact) error    { return nil }
func (discardSink) End(*event.Trailer) error  { return nil }

// TestNoAllocPerEvent checks that steady-state encoding and decoding do
// not allocate per event: only per chunk (string copies, buffers) and per
// file.
func TestNoAllocPerEvent(t *testing.T) {
	tr := synth.Trace(synth.Options{OS: "linux", Seed: 2, Events: 20000})
	w := NewWriter(io.Discard, WriterOptions{})
	h := tr.Header
	must(t, w.Begin(&h))
	feed := func() {
		for i := range tr.Events {
			if err := w.Event(&tr.Events[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	feed() // warm up: buffers grow, strings are copied once
	per := testing.AllocsPerRun(5, feed) / float64(len(tr.Events))
	t.Logf("encoding: %.4f allocations per event", per)
	if per > 0.01 {
		t.Errorf("encoding allocates %.3f times per event", per)
	}

	for v := 1; v <= Version; v++ {
		b := write(t, tr, WriterOptions{Version: v})
		allocs := testing.AllocsPerRun(5, func() {
			r, err := NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Run(context.Background(), discardSink{}); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("decoding version %d: %.0f allocations for %d events (%.4f per event)", v, allocs, len(tr.Events), allocs/float64(len(tr.Events)))
		if per := allocs / float64(len(tr.Events)); per > 0.05 {
			t.Errorf("decoding version %d allocates %.3f times per event (%.0f per file)", v, per, allocs)
		}
	}
}
