package tracefile

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
)

// openFile writes b to a temporary file and opens it.
func openFile(t *testing.T, b []byte) *Reader {
	t.Helper()
	path := filepath.Join(testenv.TempDir(t), "t.iot")
	must(t, os.WriteFile(path, b, 0o644))
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func factStrings(f *event.Fact) []string { return []string{f.Name, f.Image, f.Detail} }

// TestScanFactsWhere: every fact is delivered, in order, the selected ones
// with their strings and the others without; keep sees every fact's kind
// and rundown flag; the strings of the facts left out are not interned;
// Run afterwards replays everything.
func TestScanFactsWhere(t *testing.T) {
	eachVersion(t, func(t *testing.T, version int) {
		want := synth.Trace(synth.Options{OS: "windows", Seed: 5, Events: 3000})
		r := openFile(t, write(t, want, WriterOptions{ChunkRecords: 100, Version: version}))
		var seen []event.Fact
		var got []event.Fact
		keep := func(k event.FactKind, rundown bool) bool {
			seen = append(seen, event.Fact{Kind: k, Rundown: rundown})
			return rundown && k == event.FactName
		}
		if err := r.ScanFactsWhere(context.Background(), keep, func(f *event.Fact) error {
			got = append(got, *f)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var wantKept []event.Fact
		keptStr := map[string]bool{}
		for i, f := range want.Facts {
			if i >= len(seen) || !reflect.DeepEqual(seen[i], event.Fact{Kind: f.Kind, Rundown: f.Rundown}) {
				t.Fatalf("keep saw %d facts, fact %d is %v rundown %v", len(seen), i, f.Kind, f.Rundown)
			}
			if f.Rundown && f.Kind == event.FactName {
				for _, s := range factStrings(&f) {
					keptStr[s] = true
				}
			} else {
				f.Name, f.Image, f.Detail = "", "", ""
			}
			wantKept = append(wantKept, f)
		}
		if len(seen) != len(want.Facts) {
			t.Fatalf("keep saw %d facts, the trace has %d", len(seen), len(want.Facts))
		}
		if n := len(keptStr); n < 2 {
			t.Fatalf("the test trace has %d rundown names: the filter tests nothing", n)
		}
		if !reflect.DeepEqual(got, wantKept) {
			t.Fatalf("ScanFactsWhere delivered %d facts, want %d", len(got), len(wantKept))
		}
		skipped := 0
		for _, f := range want.Facts {
			for _, s := range factStrings(&f) {
				if s != "" && !keptStr[s] {
					skipped++
					if interned(r.dc.intern, s) {
						t.Fatalf("%q, only in facts left out, was interned", s)
					}
				}
			}
		}
		if skipped == 0 {
			t.Fatal("no string only in facts left out: the test checks nothing")
		}
		rec := synth.NewRecorder()
		if err := r.Run(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if err := synth.Compare(want, rec.Trace()); err != nil {
			t.Fatalf("Run after ScanFactsWhere:\n%v", err)
		}
	})
}

// TestScanFactsWhereDamage: a bad string index in a fact that is left out
// still makes its chunk damaged, exactly as for ScanFacts and Run: none
// of the chunk's facts are delivered, later chunks are.
func TestScanFactsWhereDamage(t *testing.T) {
	eachVersion(t, func(t *testing.T, version int) {
		a := event.Fact{Kind: event.FactName, Rundown: true, Space: event.SpaceFD, Pid: 7, Handle: 3, Name: "/kept/a"}
		b := event.Fact{Kind: event.FactName, Space: event.SpaceFD, Pid: 7, Handle: 4, Name: "/left-out/b"}
		c := event.Fact{Kind: event.FactName, Rundown: true, Space: event.SpaceFD, Pid: 8, Handle: 5, Name: "/kept/c"}
		e := event.New()
		e.Op, e.Pid, e.Tid, e.Comm = event.OpRead, 7, 7, "app"
		var buf bytes.Buffer
		w := NewWriter(&buf, WriterOptions{Version: version})
		h := event.Header{}
		must(t, w.Begin(&h))
		must(t, w.Fact(&a))
		must(t, w.Event(&e))
		must(t, w.Fact(&b))
		must(t, w.Flush())
		must(t, w.Fact(&c))
		must(t, w.Event(&e))
		must(t, w.End(&event.Trailer{}))
		file := buf.Bytes()
		// b is the last fact of the first records chunk and its name
		// index the last byte of the facts section: make it 127, past
		// the end of the string table.
		patchRecords(t, file, version, func(p []byte, factsEnd int) { p[factsEnd-1] = oneByte(version, 127) })

		got, err := read(t, file)
		de := damageOf(t, err)
		if !strings.Contains(de.Reason, "string index 127 out of") || len(got.Facts) != 1 || !reflect.DeepEqual(got.Facts[0], c) {
			t.Fatalf("Run: %v, facts %+v", de, got.Facts)
		}
		for _, keep := range []func(event.FactKind, bool) bool{nil, func(_ event.FactKind, rundown bool) bool { return rundown }} {
			var facts []event.Fact
			r := openFile(t, file)
			if err := r.ScanFactsWhere(context.Background(), keep, func(f *event.Fact) error {
				facts = append(facts, *f)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(facts) != 1 || !reflect.DeepEqual(facts[0], c) {
				t.Fatalf("keep %v: facts %+v, want only the later chunk's", keep != nil, facts)
			}
			_ = b
		}
	})
}

// TestRunDeliversFactsOfDamagedEvents: a chunk whose events section does
// not decode (CRC intact: a writer bug or a forged file) still delivers
// all its facts in Run, the same facts ScanFacts sees, so that readers
// counting stream positions across both passes stay aligned.
func TestRunDeliversFactsOfDamagedEvents(t *testing.T) {
	eachVersion(t, func(t *testing.T, version int) {
		var buf bytes.Buffer
		w := NewWriter(&buf, WriterOptions{Version: version})
		must(t, w.Begin(&event.Header{}))
		e := event.New()
		e.Op, e.Pid, e.Tid, e.Comm = event.OpRead, 7, 7, "app"
		for i := range 4 {
			f := event.Fact{Kind: event.FactName, Space: event.SpaceFD, Pid: 7, Handle: uint64(i), Name: fmt.Sprintf("/f%d", i)}
			must(t, w.Fact(&f))
			must(t, w.Event(&e))
		}
		must(t, w.End(&event.Trailer{}))
		file := buf.Bytes()
		// An event count larger than what follows (100 events in a few
		// bytes) makes the events section undecodable.
		patchRecords(t, file, version, func(p []byte, factsEnd int) { p[factsEnd] = oneByte(version, 100) })

		got, err := read(t, file)
		damageOf(t, err)
		var scanned []event.Fact
		r := openFile(t, file)
		must(t, r.ScanFacts(context.Background(), func(f *event.Fact) error {
			scanned = append(scanned, *f)
			return nil
		}))
		if len(got.Facts) != 4 || !reflect.DeepEqual(got.Facts, scanned) {
			t.Fatalf("Run delivered %d facts, ScanFacts %d; want the chunk's 4 in both", len(got.Facts), len(scanned))
		}
	})
}

// patchRecords lets patch change the payload of the first records chunk of
// file (factsEnd is the offset of the end of its facts section, where the
// event count begins) and fixes the chunk's CRC, so that the change reads
// as content, not as damage to the bytes.
func patchRecords(t *testing.T, file []byte, version int, patch func(p []byte, factsEnd int)) {
	t.Helper()
	ch := chunkMap(t, file)[1]
	p := file[ch.off+chunkHeaderSize : ch.end]
	var factsEnd int
	if version == 1 {
		in := ldec{cursor{b: p}}
		in.bytes(in.uvarint())
		n := in.uvarint()
		factsEnd = in.off + int(n)
	} else {
		in := dec{cursor{b: p}}
		in.bytes(in.uvarint())
		n := in.uvarint()
		factsEnd = in.off + int(n)
	}
	patch(p, factsEnd)
	hdr := file[ch.off : ch.off+chunkHeaderSize]
	crc := crc32.Update(crc32.Update(0, castagnoli, hdr[4:12]), castagnoli, p)
	binary.LittleEndian.PutUint32(hdr[12:], crc)
}

// oneByte returns the one-byte varint of v (< 128) in the given format
// version.
func oneByte(version int, v byte) byte {
	if version == 1 {
		return v
	}
	return v<<1 | 1
}

// interned reports whether t holds s.
func interned(t *interner, s string) bool { return slices.Contains(t.slots[:], s) }
