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
		bounded.Check(t, fmt.Sprintf("%d MB of chunk headers", mb), bounded.Default, func(func()) { got, err = read(t, bad) })
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

// recordsChunkFile returns a file of one records chunk of the given
// sections (strings, facts and events, each with its count), written
// raw: a file the writer cannot make.
func recordsChunkFile(t *testing.T, os string, strs, facts, events []byte) []byte {
	t.Helper()
	b := write(t, &synth.Recorded{Began: true, Ended: true, Header: event.Header{OS: os}}, WriterOptions{})
	chunks := chunkMap(t, b)
	out := bytes.Clone(b[:chunks[1].off])
	out = appendChunk(out, chunkRecords, func(p []byte) []byte {
		p = appendUvarint(p, uint64(len(strs)))
		p = append(p, strs...)
		p = appendUvarint(p, uint64(len(facts)))
		p = append(p, facts...)
		return append(p, events...)
	})
	return appendChunk(out, chunkTrailer, func(p []byte) []byte { return appendTagI(p, tEnd, 0) })
}

// minimalFacts returns a facts section of n facts of 4 bytes each.
func minimalFacts(n int) []byte {
	b := appendUvarint(nil, uint64(n))
	for range n {
		b = append(b, 1, byte(event.FactThread), 1, 1) // pos +0, kind, no fields, time +0
	}
	return b
}

// TestDecodeBudget: chunks whose counts claim as much as their bytes
// allow are read within about twice their size (memory for the facts and
// strings they claim is not taken up front), or found to be damage when
// their tables would take more than a writer's ever do.
func TestDecodeBudget(t *testing.T) {
	const mb = 1 << 20
	noEvents := appendUvarint(nil, 0)
	run := func(what string, file []byte, l bounded.Limits) (n int, err error) {
		t.Helper()
		bounded.Check(t, what, l, func(tick func()) {
			r, rerr := NewReader(bytes.NewReader(file))
			if rerr != nil {
				t.Fatal(rerr)
			}
			err = r.Run(context.Background(), counter(func() { n++; tick() }))
		})
		return n, err
	}
	twice := func(file []byte) bounded.Limits {
		return bounded.Limits{CPU: bounded.Default.CPU, Live: uint64(2*len(file) + 2*mb), Alloc: uint64(4*len(file) + 2*mb)}
	}
	// 4 MB of minimal facts: delivered one at a time.
	file := recordsChunkFile(t, "linux", appendUvarint(nil, 0), minimalFacts(mb), noEvents)
	if n, err := run("4 MB of minimal facts", file, twice(file)); n != mb || err != nil {
		t.Errorf("%d facts delivered (%v), want %d", n, err, mb)
	}
	// 2 MB of empty strings, 2 MB of facts after them: no entry per
	// string up front.
	strs := appendUvarint(nil, 2*mb)
	strs = append(strs, bytes.Repeat([]byte{1}, 2*mb)...)
	file = recordsChunkFile(t, "linux", strs, minimalFacts(mb/2), noEvents)
	if n, err := run("2 MB of empty strings", file, twice(file)); n != mb/2 || err != nil {
		t.Errorf("%d facts delivered (%v), want %d", n, err, mb/2)
	}
	// The same strings with nothing after them to refer to them: damage.
	file = recordsChunkFile(t, "linux", strs, appendUvarint(nil, 0), noEvents)
	if _, err := run("2 MB of strings nothing refers to", file, twice(file)); err == nil || !strings.Contains(err.Error(), "to refer to them") {
		t.Errorf("2 MB of strings no event refers to: %v", err)
	}
	// 8 MB of events each defining a new thread: their table would take
	// 40 bytes for every 10 of the chunk.
	const threads = 800_000
	ev := appendUvarint(nil, threads)
	for i := range threads {
		ev = append(ev, 1) // template 0
		if i == 0 {
			ev = append(ev, 0, 0, 0, 0, 1, 1, 1) // source, layer, op, status; flags 0, native (string 0), mask 0
		}
		ev = appendUvarint(ev, uint64(i)) // thread i, defined here:
		ev = append(ev, 1, 1, 1, 1, 1)    // cpu, pid, tid, procstart 0, comm (string 0)
		ev = append(ev, 1)                // time +0
	}
	file = recordsChunkFile(t, "linux", append(appendUvarint(nil, 1), 1), appendUvarint(nil, 0), ev)
	n, err := run("8 MB of thread definitions", file, bounded.Limits{CPU: bounded.Default.CPU, Live: uint64(4*len(file) + 2*mb)})
	if de := damageOf(t, err); !strings.Contains(de.Reason, "3 bytes per byte of the chunk") || n == 0 || n == threads {
		t.Errorf("thread definitions beyond the budget: %v, %d events", err, n)
	}
}

// counter is a sink that calls fn for every event and fact.
type counter func()

func (counter) Begin(*event.Header) error  { return nil }
func (c counter) Event(*event.Event) error { c(); return nil }
func (c counter) Fact(*event.Fact) error   { c(); return nil }
func (counter) End(*event.Trailer) error   { return nil }

// TestCutToLimits: a stack of 100,000 frames (a byte each) and paths of
// 60 KB in a Linux trace are cut at decode to event.MaxStackFrames and
// PATH_MAX, flagged and counted.
func TestCutToLimits(t *testing.T) {
	deep := make([]uint64, 100_000)
	for i := range deep {
		deep[i] = 0xffffffff81000000
	}
	long := "/" + strings.Repeat("x", 60_000)
	tr := &synth.Recorded{Began: true, Ended: true, Header: event.Header{OS: "linux"}}
	tr.Facts = append(tr.Facts, event.Fact{Kind: event.FactStack, Handle: 1, Kernel: deep, User: deep[:10]})
	for i := range 1000 {
		e := event.New()
		e.ID, e.Op, e.Path, e.Stack = uint64(i+1), event.OpRead, long, 1
		tr.Events = append(tr.Events, e)
	}
	b := write(t, tr, WriterOptions{ChunkRecords: 1 << 20})
	var got *synth.Recorded
	var err error
	bounded.Check(t, fmt.Sprintf("%d KB of deep stacks and long paths", len(b)>>10), bounded.Default, func(func()) { got, err = read(t, b) })
	if err != nil {
		t.Fatal(err)
	}
	f := got.Facts[0]
	if len(f.Kernel) != event.MaxStackFrames || len(f.User) != 10 || f.Flags != event.FactKernelTruncated {
		t.Errorf("stack of %d+%d frames, flags %v; want %d+10, kernel-truncated", len(f.Kernel), len(f.User), f.Flags, event.MaxStackFrames)
	}
	for _, e := range got.Events {
		if len(e.Path) != event.MaxPathLinux || !strings.HasPrefix(long, e.Path) {
			t.Fatalf("path of %d bytes, want the first %d", len(e.Path), event.MaxPathLinux)
		}
	}
	st := got.Trailer.Stats
	if st.Get(event.CountDropped, event.StatPathsCut) != 1000 || st.Get(event.CountDropped, event.StatStacksCut) != 1 ||
		st.Get(event.CountDropped, event.StatFramesCut) != uint64(len(deep)-event.MaxStackFrames) {
		t.Errorf("cuts not counted: %+v", st.Counters)
	}
}
