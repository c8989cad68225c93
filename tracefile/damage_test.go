package tracefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// chunkInfo locates a chunk of a well-formed file and the events and
// facts it holds.
type chunkInfo struct {
	off, end       int
	typ            byte
	events, facts  int // counts
	firstEv, first int // index of its first event and first fact
}

func chunkMap(t *testing.T, b []byte) []chunkInfo {
	t.Helper()
	var out []chunkInfo
	ev, fa := 0, 0
	version := binary.LittleEndian.Uint16(b[len(Magic):])
	for off := fileHeaderSize; off < len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+8:]))
		c := chunkInfo{off: off, end: off + chunkHeaderSize + n, typ: b[off+4], firstEv: ev, first: fa}
		if c.typ == chunkRecords {
			p := b[off+chunkHeaderSize : c.end]
			if version == 1 {
				d := ldec{cursor{b: p}}
				d.bytes(d.uvarint())
				fs := ldec{cursor{b: d.bytes(d.uvarint())}}
				c.facts, c.events = int(fs.uvarint()), int(d.uvarint())
				if d.err != nil || fs.err != nil {
					t.Fatal("bad chunk")
				}
			} else {
				d := dec{cursor{b: p}}
				d.bytes(d.uvarint())
				fs := dec{cursor{b: d.bytes(d.uvarint())}}
				c.facts, c.events = int(fs.uvarint()), int(d.uvarint())
				if d.err != nil || fs.err != nil {
					t.Fatal("bad chunk")
				}
			}
		}
		ev += c.events
		fa += c.facts
		out = append(out, c)
		off = c.end
	}
	return out
}

func damageOf(t *testing.T, err error) *DamageError {
	t.Helper()
	var de *DamageError
	if !errors.As(err, &de) {
		t.Fatalf("got %v (%T), want a *DamageError", err, err)
	}
	return de
}

func lostCount(tr *event.Trailer) uint64 { return tr.Stats.Total(event.CountLost) }

// eachVersion runs fn for every format version the writer can write.
func eachVersion(t *testing.T, fn func(t *testing.T, version int)) {
	for v := 1; v <= Version; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { fn(t, v) })
	}
}

func TestTruncatedEverywhere(t *testing.T) { eachVersion(t, testTruncatedEverywhere) }

func testTruncatedEverywhere(t *testing.T, version int) {
	want := synth.Trace(synth.Options{OS: "linux", Seed: 9, Events: 90})
	b := write(t, want, WriterOptions{ChunkRecords: 15, Version: version})
	chunks := chunkMap(t, b)
	if len(chunks) < 6 {
		t.Fatalf("only %d chunks", len(chunks))
	}
	for cut := 0; cut < len(b); cut++ {
		got, err := read(t, b[:cut])
		if cut == 0 {
			if !errors.Is(err, ErrNotTrace) || !strings.Contains(err.Error(), "empty") {
				t.Fatalf("empty file: %v", err)
			}
			continue
		}
		de := damageOf(t, err)
		if !got.Began || !got.Ended {
			t.Fatalf("cut %d: began %v ended %v", cut, got.Began, got.Ended)
		}
		if lostCount(&got.Trailer) == 0 {
			t.Fatalf("cut %d: the trailer does not count the damage: %+v", cut, got.Trailer)
		}
		// Every chunk that ends before the cut is delivered, nothing else.
		nev, nfa, damageAt := 0, 0, cut
		if cut < fileHeaderSize {
			damageAt = cut
		}
		for _, c := range chunks {
			if c.end <= cut {
				nev, nfa = c.firstEv+c.events, c.first+c.facts
				continue
			}
			if c.off < cut {
				damageAt = c.off
			}
			break
		}
		if len(got.Events) != nev || len(got.Facts) != nfa {
			t.Fatalf("cut %d: %d events and %d facts, want %d and %d", cut, len(got.Events), len(got.Facts), nev, nfa)
		}
		for i := range got.Events {
			if got.Events[i] != want.Events[i] {
				t.Fatalf("cut %d: event %d differs", cut, i)
			}
		}
		if int(de.Offset) != damageAt {
			t.Fatalf("cut %d: damage reported at %d, want %d (%v)", cut, de.Offset, damageAt, de)
		}
		if !strings.Contains(de.Error(), "truncated") {
			t.Fatalf("cut %d: %v", cut, de)
		}
	}
}

func TestBitFlipsAreCaught(t *testing.T) { eachVersion(t, testBitFlipsAreCaught) }

func testBitFlipsAreCaught(t *testing.T, version int) {
	want := synth.Trace(synth.Options{OS: "windows", Seed: 3, Events: 70})
	b := write(t, want, WriterOptions{ChunkRecords: 15, Version: version})
	chunks := chunkMap(t, b)
	step := 1
	if testing.Short() {
		step = 7
	}
	for pos := 0; pos < len(b); pos += step {
		bad := bytes.Clone(b)
		bad[pos] ^= 1 << (pos % 8)
		got, err := read(t, bad)
		switch {
		case pos < len(Magic):
			if !errors.Is(err, ErrNotTrace) {
				t.Fatalf("flip in magic at %d: %v", pos, err)
			}
			continue
		case pos < len(Magic)+2:
			if v := binary.LittleEndian.Uint16(bad[len(Magic):]); (v == 2 || v == 3) && (version == 2 || version == 3 || version == 0) {
				// Versions 2 and 3 differ only in fields this trace
				// (without stacks) does not have: it reads the same.
				if err != nil || len(got.Events) != len(want.Events) {
					t.Fatalf("flip in version at %d (to %d): %v, %d events", pos, v, err, len(got.Events))
				}
				continue
			}
			var ve *VersionError
			if !errors.As(err, &ve) && !errors.Is(err, ErrNotTrace) {
				t.Fatalf("flip in version at %d: %v", pos, err)
			}
			continue
		case pos < fileHeaderSize:
			// Reserved file flags: ignored.
			if err != nil || synth.Compare(want, got) != nil {
				t.Fatalf("flip in reserved flags at %d: %v", pos, err)
			}
			continue
		}
		var c chunkInfo
		for _, c = range chunks {
			if pos < c.end {
				break
			}
		}
		de := damageOf(t, err)
		if int(de.Offset) != c.off {
			t.Fatalf("flip at %d (chunk at %d): damage reported at %d: %v", pos, c.off, de.Offset, de)
		}
		if !got.Began || !got.Ended || lostCount(&got.Trailer) == 0 {
			t.Fatalf("flip at %d: began %v ended %v trailer %+v", pos, got.Began, got.Ended, got.Trailer)
		}
		// Everything but the damaged chunk arrives, in order.
		wantEv := append(append([]event.Event(nil), want.Events[:c.firstEv]...), want.Events[c.firstEv+c.events:]...)
		wantFa := append(append([]event.Fact(nil), want.Facts[:c.first]...), want.Facts[c.first+c.facts:]...)
		if len(got.Events) != len(wantEv) || len(got.Facts) != len(wantFa) {
			t.Fatalf("flip at %d in chunk type %d: %d events, %d facts; want %d, %d", pos, c.typ, len(got.Events), len(got.Facts), len(wantEv), len(wantFa))
		}
		for i := range wantEv {
			if got.Events[i] != wantEv[i] {
				t.Fatalf("flip at %d: event %d differs", pos, i)
			}
		}
		switch c.typ {
		case chunkHeader:
			if got.Header != (event.Header{}) {
				t.Fatalf("flip in header at %d: header %+v", pos, got.Header)
			}
		case chunkRecords:
			if got.Header != want.Header || got.Trailer.Stats.Get(event.CountLost, "events in damaged iotrace file chunks") != uint64(c.events) {
				t.Fatalf("flip at %d: trailer %+v, want %d events lost", pos, got.Trailer, c.events)
			}
		}
	}
}

func TestVersionRefused(t *testing.T) {
	b := write(t, synth.Trace(synth.Options{Events: 10}), WriterOptions{})
	binary.LittleEndian.PutUint16(b[len(Magic):], 5)
	_, err := read(t, b)
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != 5 || ve.Supported != Version {
		t.Fatalf("got %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "written by a newer iotrace: format version 5, this reader supports up to 4") {
		t.Errorf("message: %s", msg)
	}
}

func TestNotATrace(t *testing.T) {
	for _, in := range [][]byte{[]byte("hello, world\n"), {0x89, 'P', 'N', 'G'}, bytes.Repeat([]byte{0}, 100)} {
		_, err := read(t, in)
		if !errors.Is(err, ErrNotTrace) || !strings.Contains(err.Error(), "not an iotrace trace file (bad magic at offset 0)") {
			t.Errorf("%q: %v", in, err)
		}
	}
	if Match([]byte("hello")) || !Match([]byte(Magic+"xx")) || !Match([]byte(Magic[:3])) {
		t.Error("Match")
	}
}

func TestCutShortWithoutTrailer(t *testing.T) {
	want := synth.Trace(synth.Options{Events: 100})
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{ChunkRecords: 30})
	h := want.Header
	must(t, w.Begin(&h))
	for i := range want.Events {
		must(t, w.Event(&want.Events[i]))
	}
	must(t, w.Close()) // no End: a recording that was killed
	got, err := read(t, buf.Bytes())
	de := damageOf(t, err)
	if len(got.Events) != len(want.Events) || !strings.Contains(de.Reason, "without a trailer") || int(de.Offset) != buf.Len() {
		t.Fatalf("%d events, %v", len(got.Events), de)
	}
	if got.Trailer.End != want.Events[len(want.Events)-1].End() && got.Trailer.End < want.Events[0].Time {
		t.Errorf("made-up trailer end %d", got.Trailer.End)
	}
	if !de.End || de.NoneLost {
		t.Errorf("a file cut short: End %v NoneLost %v, want reading stopped there, losses unknown", de.End, de.NoneLost)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// insertChunk inserts a chunk of type typ before the trailer.
func insertChunk(t *testing.T, b []byte, typ byte) []byte {
	chunks := chunkMap(t, b)
	last := chunks[len(chunks)-1]
	c := appendChunk(nil, typ, func(p []byte) []byte { return append(p, "future data"...) })
	return append(append(append([]byte(nil), b[:last.off]...), c...), b[last.off:]...)
}

func TestUnknownChunks(t *testing.T) {
	want := synth.Trace(synth.Options{Events: 100})
	b := write(t, want, WriterOptions{ChunkRecords: 30})
	// An optional chunk of a newer writer is skipped silently.
	got, err := read(t, insertChunk(t, b, 0x81))
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.Compare(want, got); err != nil {
		t.Fatal(err)
	}
	// A required one is damage, but everything else still arrives.
	got, err = read(t, insertChunk(t, b, 0x05))
	de := damageOf(t, err)
	if !strings.Contains(de.Reason, "unknown chunk type 5") || len(got.Events) != len(want.Events) {
		t.Fatalf("%v, %d events", de, len(got.Events))
	}
	// Garbage after the trailer is reported.
	_, err = read(t, append(bytes.Clone(b), "trailing garbage"...))
	if de := damageOf(t, err); int(de.Offset) != len(b) {
		t.Fatalf("garbage: %v", de)
	}
}

func TestDamageInTheMiddleResumes(t *testing.T) { eachVersion(t, testDamageInTheMiddleResumes) }

func testDamageInTheMiddleResumes(t *testing.T, version int) {
	want := synth.Trace(synth.Options{Events: 1000})
	b := write(t, want, WriterOptions{ChunkRecords: 100, Version: version})
	chunks := chunkMap(t, b)
	// Overwrite three whole chunks with garbage.
	bad := bytes.Clone(b)
	from, to := chunks[3].off+5, chunks[6].off-2
	for i := from; i < to; i++ {
		bad[i] = byte(i * 7)
	}
	got, err := read(t, bad)
	de := damageOf(t, err)
	if int(de.Offset) != chunks[3].off || de.Chunk != 3 {
		t.Fatalf("damage %+v, want chunk 3 at %d", de.Damage, chunks[3].off)
	}
	lost := chunks[3].events + chunks[4].events + chunks[5].events
	if len(got.Events) != len(want.Events)-lost {
		t.Fatalf("%d events, want %d", len(got.Events), len(want.Events)-lost)
	}
	if n := got.Trailer.Stats.Get(event.CountLost, "events in damaged iotrace file chunks"); n != uint64(lost) {
		t.Errorf("trailer counts %d lost events, want %d", n, lost)
	}
	if got.Trailer.Stats.Get(event.CountLost, "iotrace file bytes skipped as damaged") != uint64(chunks[6].off-chunks[3].off) {
		t.Errorf("skipped bytes: %+v", got.Trailer.Stats)
	}
	if de.End || de.NoneLost || de.Lossless {
		t.Errorf("damage in the middle: %+v NoneLost %v, want read on past it, events lost", de.Damage, de.NoneLost)
	}
}

func TestDuplicatedChunk(t *testing.T) { eachVersion(t, testDuplicatedChunk) }

// testDuplicatedChunk: a records chunk repeated byte for byte (a
// duplicated region) is damage: its events are not delivered twice.
func testDuplicatedChunk(t *testing.T, version int) {
	want := synth.Trace(synth.Options{Events: 1000})
	b := write(t, want, WriterOptions{ChunkRecords: 100, Version: version})
	chunks := chunkMap(t, b)
	c := chunks[4]
	var bad []byte
	bad = append(bad, b[:chunks[6].off]...)
	bad = append(bad, b[c.off:c.end]...) // chunk 4 again, after chunk 5
	bad = append(bad, b[chunks[6].off:]...)
	got, err := read(t, bad)
	de := damageOf(t, err)
	if int(de.Offset) != chunks[6].off || !strings.Contains(de.Reason, "repeats") || !strings.Contains(de.Reason, fmt.Sprint(c.off)) {
		t.Errorf("damage %+v, want the repeat at %d of the chunk at %d", de.Damage, chunks[6].off, c.off)
	}
	if len(got.Events) != len(want.Events) || len(got.Facts) != len(want.Facts) {
		t.Errorf("%d events, %d facts; want %d, %d (nothing twice)", len(got.Events), len(got.Facts), len(want.Events), len(want.Facts))
	}
	// Nothing was lost: the repeat is damage, counted, but not as lost
	// events, and the reader read on.
	if !de.NoneLost || !de.Lossless || de.End || len(de.More) != 0 {
		t.Errorf("damage %+v NoneLost %v, want one lossless region read past", de.Damage, de.NoneLost)
	}
	if n := lostCount(&got.Trailer); n != lostCount(&want.Trailer) {
		t.Errorf("%d lost in the trailer, the source had %d: %+v", n, lostCount(&want.Trailer), got.Trailer.Stats)
	}
	if n := got.Trailer.Stats.Get(event.CountInfo, "iotrace file bytes skipped as damaged (no event lost)"); n != uint64(c.end-c.off) {
		t.Errorf("%d bytes skipped counted, want the %d of the repeat", n, c.end-c.off)
	}
}

func TestStrayTrailer(t *testing.T) { eachVersion(t, testStrayTrailer) }

// testStrayTrailer: a trailer in the middle of a file does not hide the
// intact chunks after it: they are read, and the stray trailer is damage.
func testStrayTrailer(t *testing.T, version int) {
	want := synth.Trace(synth.Options{Events: 1000})
	b := write(t, want, WriterOptions{ChunkRecords: 100, Version: version})
	chunks := chunkMap(t, b)
	tr := chunks[len(chunks)-1]
	if tr.typ != chunkTrailer {
		t.Fatal("the last chunk is not the trailer")
	}
	var bad []byte
	bad = append(bad, b[:chunks[3].off]...)
	bad = append(bad, b[tr.off:tr.end]...) // a trailer after chunk 2
	bad = append(bad, b[chunks[3].off:]...)
	got, err := read(t, bad)
	de := damageOf(t, err)
	if int(de.Offset) != chunks[3].off || !strings.Contains(de.Reason, "before the end of the file") {
		t.Errorf("damage %+v, want the stray trailer at %d", de.Damage, chunks[3].off)
	}
	if len(got.Events) != len(want.Events) || !got.Ended {
		t.Errorf("%d events of %d after a stray trailer", len(got.Events), len(want.Events))
	}
	if !de.NoneLost || de.End || lostCount(&got.Trailer) != lostCount(&want.Trailer) {
		t.Errorf("a stray trailer: NoneLost %v End %v, %d lost (source %d); want nothing lost", de.NoneLost, de.End, lostCount(&got.Trailer), lostCount(&want.Trailer))
	}
}
