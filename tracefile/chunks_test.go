package tracefile

import (
	"bytes"
	"context"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// chunkSink encodes a stream into chunks of about size bytes, writing each
// to w as it is sealed, and decodes each with d into back.
type chunkSink struct {
	enc  *ChunkEncoder
	size int
	w    *Writer
	d    ChunkDecoder
	back event.Sink
	err  error
}

func (c *chunkSink) Begin(h *event.Header) error { c.back.Begin(h); return c.w.Begin(h) }
func (c *chunkSink) Event(e *event.Event) error  { c.enc.Event(e); return c.maybeSeal(false) }
func (c *chunkSink) Fact(f *event.Fact) error    { c.enc.Fact(f); return c.maybeSeal(false) }
func (c *chunkSink) End(t *event.Trailer) error {
	if err := c.maybeSeal(true); err != nil {
		return err
	}
	c.back.End(t)
	return c.w.End(t)
}

func (c *chunkSink) maybeSeal(always bool) error {
	if c.enc.Size() < c.size && !always {
		return nil
	}
	if ev, fa := c.enc.Len(); ev+fa == 0 {
		return nil
	}
	b, ev, fa := c.enc.Seal()
	if err := c.d.Decode(b, c.back, false); err != nil {
		return err
	}
	return c.w.WriteChunk(b, ev, fa)
}

// TestChunkEncoderRoundTrip: a trace encoded into chunks in memory, and
// written as they are, reads back identical (events, facts, their order,
// the trailer's counts: no loss reported); each chunk also decodes on its
// own to the same stream.
func TestChunkEncoderRoundTrip(t *testing.T) {
	for _, os := range []string{"linux", "windows"} {
		want := synth.Trace(synth.Options{Seed: 5, Events: 5000, OS: os})
		var file bytes.Buffer
		decoded := synth.NewRecorder()
		cs := &chunkSink{enc: NewChunkEncoder(), size: 4 << 10, w: NewWriter(&file, WriterOptions{}), back: decoded}
		if err := want.Replay(cs); err != nil {
			t.Fatal(err)
		}
		if err := synth.Compare(want, decoded.Trace()); err != nil {
			t.Errorf("%s: chunks decoded one by one: %v", os, err)
		}
		r, err := NewReader(bytes.NewReader(file.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		got := synth.NewRecorder()
		if err := r.Run(context.Background(), got); err != nil {
			t.Fatalf("%s: read: %v", os, err)
		}
		if err := synth.Compare(want, got.Trace()); err != nil {
			t.Errorf("%s: file of written chunks: %v", os, err)
		}
	}
}

// TestChunkDecoderRefusesOther: anything but a sealed records chunk is an
// error, not a panic.
func TestChunkDecoderRefusesOther(t *testing.T) {
	var d ChunkDecoder
	enc := NewChunkEncoder()
	e := event.New()
	enc.Event(&e)
	good, _, _ := enc.Seal()
	for _, b := range [][]byte{nil, []byte("IOTc"), good[:len(good)-1], append([]byte("XXXX"), good[4:]...)} {
		if err := d.Decode(b, &countSink{}, false); err == nil {
			t.Errorf("% x...: decoded", b[:min(8, len(b))])
		}
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{Version: 2})
	w.Begin(&event.Header{})
	if err := w.WriteChunk(good, 1, 0); err == nil {
		t.Error("a version-3 chunk written into a version-2 file")
	}
}

// FuzzChunkDecoder: a records chunk of any payload decodes or is an
// error, never a panic; one that decodes, encoded again by a
// ChunkEncoder, decodes to the same records.
func FuzzChunkDecoder(f *testing.F) {
	enc := NewChunkEncoder()
	tr := synth.Trace(synth.Options{Seed: 2, Events: synth.MinEvents})
	for i := range tr.Facts[:min(20, len(tr.Facts))] {
		enc.Fact(&tr.Facts[i])
	}
	for i := range tr.Events[:40] {
		enc.Event(&tr.Events[i])
	}
	b, _, _ := enc.Seal()
	f.Add(bytes.Clone(b[chunkHeaderSize:]))
	f.Fuzz(func(t *testing.T, payload []byte) {
		raw := appendChunk(nil, chunkRecords, func(p []byte) []byte { return append(p, payload...) })
		var d ChunkDecoder
		first := synth.NewRecorder()
		first.Begin(&event.Header{})
		if err := d.Decode(raw, first, false); err != nil {
			return
		}
		enc := NewChunkEncoder()
		got := first.Trace()
		if err := got.Replay(chunkFeeder{enc}); err != nil {
			t.Fatal(err)
		}
		again, _, _ := enc.Seal()
		second := synth.NewRecorder()
		second.Begin(&event.Header{})
		if err := d.Decode(again, second, false); err != nil {
			t.Fatalf("re-encoded chunk: %v", err)
		}
		if len(got.Events) != len(second.Trace().Events) || len(got.Facts) != len(second.Trace().Facts) {
			t.Fatalf("re-encoded: %d events %d facts, first %d %d", len(second.Trace().Events), len(second.Trace().Facts), len(got.Events), len(got.Facts))
		}
	})
}

// chunkFeeder feeds a stream's records to a ChunkEncoder.
type chunkFeeder struct{ enc *ChunkEncoder }

func (chunkFeeder) Begin(*event.Header) error    { return nil }
func (c chunkFeeder) Event(e *event.Event) error { c.enc.Event(e); return nil }
func (c chunkFeeder) Fact(f *event.Fact) error   { c.enc.Fact(f); return nil }
func (chunkFeeder) End(*event.Trailer) error     { return nil }
