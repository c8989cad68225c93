package tracefile

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// Files built on purpose from the format's own size and count fields
// (issue 35): each is generated here, never stored.

// TestRemovedChunk: a records chunk removed cleanly (the file's framing
// intact, every CRC right) is damage: the trailer's counts say events
// and facts are missing, and how many.
func TestRemovedChunk(t *testing.T) { eachVersion(t, testRemovedChunk) }

func testRemovedChunk(t *testing.T, version int) {
	want := synth.Trace(synth.Options{Events: 1000})
	b := write(t, want, WriterOptions{ChunkRecords: 100, Version: version})
	chunks := chunkMap(t, b)
	c := chunks[4]
	bad := append(bytes.Clone(b[:c.off]), b[c.end:]...)
	got, err := read(t, bad)
	de := damageOf(t, err)
	if len(got.Events) != len(want.Events)-c.events {
		t.Fatalf("%d events, want %d", len(got.Events), len(want.Events)-c.events)
	}
	if de.NoneLost || de.Lossless || de.End {
		t.Errorf("a removed chunk: %+v NoneLost %v, want events lost, read past", de.Damage, de.NoneLost)
	}
	if !strings.Contains(de.Reason, fmt.Sprintf("%d events", c.events)) {
		t.Errorf("reason %q does not say how many events are missing (%d)", de.Reason, c.events)
	}
	if n := got.Trailer.Stats.Get(event.CountLost, "events in damaged iotrace file chunks"); n != uint64(c.events) {
		t.Errorf("trailer counts %d lost events, want %d: %+v", n, c.events, got.Trailer.Stats)
	}
	if n := got.Trailer.Stats.Get(event.CountLost, "facts in damaged iotrace file chunks"); n != uint64(c.facts) {
		t.Errorf("trailer counts %d lost facts, want %d", n, c.facts)
	}
}

// withTrailer returns b with its trailer chunk replaced by one saying
// events and facts were written.
func withTrailer(t *testing.T, b []byte, events, facts uint64) []byte {
	t.Helper()
	chunks := chunkMap(t, b)
	tr := chunks[len(chunks)-1]
	if tr.typ != chunkTrailer {
		t.Fatal("the last chunk is not the trailer")
	}
	out := bytes.Clone(b[:tr.off])
	return appendChunk(out, chunkTrailer, func(p []byte) []byte {
		return appendTrailer(p, &event.Trailer{End: 1}, events, facts)
	})
}

// TestAbsurdTrailer: a trailer claiming more events or facts than the
// file could hold (2^60) is damage, not "2^60 events lost".
func TestAbsurdTrailer(t *testing.T) {
	want := synth.Trace(synth.Options{Events: 300})
	b := write(t, want, WriterOptions{ChunkRecords: 100})
	for _, c := range []struct{ events, facts uint64 }{{1 << 60, uint64(len(want.Facts))}, {uint64(len(want.Events)), 1 << 60}} {
		got, err := read(t, withTrailer(t, b, c.events, c.facts))
		de := damageOf(t, err)
		if !strings.Contains(de.Reason, "more than") || len(got.Events) != len(want.Events) {
			t.Errorf("%+v: %v, %d events", c, de, len(got.Events))
		}
		if n := got.Trailer.Stats.Get(event.CountLost, "events in damaged iotrace file chunks") +
			got.Trailer.Stats.Get(event.CountLost, "facts in damaged iotrace file chunks"); n != 0 {
			t.Errorf("%+v: %d events or facts counted lost from an absurd trailer", c, n)
		}
	}
	// More events read than the trailer says were written: damage that
	// lost nothing.
	got, err := read(t, withTrailer(t, b, uint64(len(want.Events)-5), uint64(len(want.Facts))))
	de := damageOf(t, err)
	if !de.NoneLost || !strings.Contains(de.Reason, "5 events and 0 facts more") || len(got.Events) != len(want.Events) {
		t.Errorf("more events than written: %v NoneLost %v", de, de.NoneLost)
	}
}
