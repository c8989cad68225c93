package tracefile

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

func TestStacksRoundTrip(t *testing.T) {
	want := synth.StacksTrace()
	for _, cr := range []int{0, 1, 3} {
		got, err := read(t, write(t, want, WriterOptions{ChunkRecords: cr}))
		if err != nil {
			t.Fatal(err)
		}
		if err := synth.Compare(want, got); err != nil {
			t.Fatalf("chunk records %d:\n%v", cr, err)
		}
	}
}

// TestStacksNeedVersion3: the writers of versions 1 and 2 refuse an event
// with a stack and a fact with stack or module fields (not sticky: what
// they can hold is still written); a trace without them is written.
func TestStacksNeedVersion3(t *testing.T) {
	for v := 1; v <= 2; v++ {
		var buf bytes.Buffer
		w := NewWriter(&buf, WriterOptions{Version: v})
		h := event.Header{}
		if err := w.Begin(&h); err != nil {
			t.Fatal(err)
		}
		e := event.New()
		e.Stack = 7
		if err := w.Event(&e); err == nil || !strings.Contains(err.Error(), "it needs version 3") {
			t.Fatalf("v%d event with a stack: %v", v, err)
		}
		f := event.Fact{Kind: event.FactStack, Handle: 7, User: []uint64{1}}
		if err := w.Fact(&f); err == nil || !strings.Contains(err.Error(), "it needs version 3") {
			t.Fatalf("v%d stack fact: %v", v, err)
		}
		e.Stack = 0
		if err := w.Event(&e); err != nil {
			t.Fatal(err)
		}
		if err := w.End(&event.Trailer{}); err != nil {
			t.Fatal(err)
		}
		got, err := read(t, buf.Bytes())
		if err != nil || len(got.Events) != 1 || len(got.Facts) != 0 {
			t.Fatalf("v%d: %v, %d events %d facts", v, err, len(got.Events), len(got.Facts))
		}
	}
}

// TestStacksInOlderVersionAreDamage: a version-2 file whose records use
// the bits of version 3 (only a forged file can) is damage, not misread.
func TestStacksInOlderVersionAreDamage(t *testing.T) {
	b := write(t, synth.StacksTrace(), WriterOptions{})
	binary.LittleEndian.PutUint16(b[len(Magic):], 2)
	got, err := read(t, b)
	de := damageOf(t, err)
	if !strings.Contains(de.Reason, "unknown field bits") {
		t.Fatalf("%v", de)
	}
	for _, e := range got.Events {
		if e.Stack != 0 {
			t.Fatalf("event %d read with stack %d from a version-2 file", e.ID, e.Stack)
		}
	}
}

// TestStacksCostNothingWithout: a trace without stacks is the same bytes
// in versions 2 and 3 but for the version field.
func TestStacksCostNothingWithout(t *testing.T) {
	tr := synth.Trace(synth.Options{OS: "linux", Seed: 5, Events: 2000})
	v2 := write(t, tr, WriterOptions{Version: 2})
	v3 := write(t, tr, WriterOptions{Version: 3})
	v2[len(Magic)] = 3
	if !bytes.Equal(v2, v3) {
		t.Fatalf("version 3 (%d bytes) differs from version 2 (%d bytes) beyond the version field", len(v3), len(v2))
	}
}

// TestProvenanceNeedsVersion4: a read's page-cache provenance round-trips
// in version 4, and a version-3 writer refuses it rather than drop it.
func TestProvenanceNeedsVersion4(t *testing.T) {
	e := event.New()
	e.ID, e.Op, e.Layer, e.Bytes = 40, event.OpRead, event.LayerFile, 1<<20
	e.ReadCached, e.ReadAhead, e.ReadDisk, e.ReadWaited, e.ReadAheadFrom = 4096, 1<<19, 8192, 12288, 8
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	h := event.Header{}
	if err := w.Begin(&h); err != nil {
		t.Fatal(err)
	}
	if err := w.Event(&e); err != nil {
		t.Fatal(err)
	}
	if err := w.End(&event.Trailer{}); err != nil {
		t.Fatal(err)
	}
	got, err := read(t, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 1 || got.Events[0] != e {
		t.Fatalf("read back %+v, want %+v", got.Events, e)
	}
	w3 := NewWriter(io.Discard, WriterOptions{Version: 3})
	if err := w3.Begin(&h); err != nil {
		t.Fatal(err)
	}
	if err := w3.Event(&e); err == nil || !strings.Contains(err.Error(), "it needs version 4") {
		t.Fatalf("v3 event with provenance: %v", err)
	}
}
