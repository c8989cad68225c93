package tracefile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/bounded"
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

// syncEvery returns garbage of n bytes with a plausible records chunk
// header every 16 bytes, each with a wrong CRC and a length that runs to
// end (the offset where the garbage will end, plus tail bytes): a reader
// that checks each candidate's CRC over its payload does quadratic work.
func syncEvery(n, tail int) []byte {
	b := make([]byte, n)
	for off := 0; off+chunkHeaderSize <= n; off += 16 {
		h := b[off:]
		copy(h, chunkSync)
		h[4] = chunkRecords
		binary.LittleEndian.PutUint32(h[8:], uint32(n+tail-off-chunkHeaderSize))
		binary.LittleEndian.PutUint32(h[12:], uint32(off)) // not the CRC
	}
	return b
}

// TestResyncLinear: 1 and 2 MB of plausible chunk headers every 16 bytes
// between two intact chunks: the reader finds the intact one after them,
// in well under 2 s and 100 MB.
func TestResyncLinear(t *testing.T) {
	want := synth.Trace(synth.Options{Events: 300})
	b := write(t, want, WriterOptions{ChunkRecords: 100})
	chunks := chunkMap(t, b)
	c := chunks[2]
	for _, mb := range []int{1, 2} {
		rest := b[c.off:]
		bad := append(bytes.Clone(b[:c.off]), syncEvery(mb<<20, len(rest))...)
		bad = append(bad, rest...)
		var got *synth.Recorded
		var err error
		bounded.Check(t, fmt.Sprintf("%d MB of chunk headers", mb), bounded.Default, func() { got, err = read(t, bad) })
		de := damageOf(t, err)
		if int(de.Offset) != c.off || de.Skipped != int64(mb<<20) || len(got.Events) != len(want.Events) {
			t.Errorf("%d MB: %v (skipped %d), %d events of %d", mb, de, de.Skipped, len(got.Events), len(want.Events))
		}
	}
}

// endless is a stream that never ends: head, then cycle over and over.
type endless struct {
	head, cycle []byte
	off         int
}

func (e *endless) Read(p []byte) (int, error) {
	if len(e.head) > 0 {
		n := copy(p, e.head)
		e.head = e.head[n:]
		return n, nil
	}
	n := copy(p, e.cycle[e.off:])
	e.off = (e.off + n) % len(e.cycle)
	return n, nil
}

// TestResyncCancelled: a search for an intact chunk through endless
// damage stops within a second of the cancel.
func TestResyncCancelled(t *testing.T) {
	b := write(t, &synth.Recorded{Began: true, Ended: true}, WriterOptions{})
	chunks := chunkMap(t, b)
	src := &endless{head: bytes.Clone(b[:chunks[1].off]), cycle: syncEvery(1<<16, 1<<20)}
	r, err := NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	err = bounded.Cancelled(t, "reading endless damage", 200*time.Millisecond, time.Second, func(ctx context.Context) error {
		return r.Run(ctx, discardSink{})
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v, want context.Canceled", err)
	}
}
