package tracefile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// FuzzReader feeds arbitrary bytes to the reader. It must never panic; a
// file it cannot open is "not a trace" or "newer version"; a file it
// opens delivers Begin and End, and either reads cleanly (then writing
// what it delivered and reading that back gives the same trace, and
// ScanFacts sees the same facts, and ScanFactsWhere the selected ones)
// or returns a *DamageError with the
// damage counted in the trailer.
//
// The seed corpus in testdata/fuzz/FuzzReader holds real written files;
// regenerate it with IOTRACE_WRITE_CORPUS=1 go test -run TestWriteCorpus.
func FuzzReader(f *testing.F) {
	for _, b := range corpus(f) {
		f.Add(b)
	}
	f.Fuzz(checkFile)
}

// checkFile checks what FuzzReader and FuzzRecords require of the reader
// on the file b.
func checkFile(t *testing.T, b []byte) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		var ve *VersionError
		if !errors.Is(err, ErrNotTrace) && !errors.As(err, &ve) {
			t.Fatalf("NewReader: unexpected error %v", err)
		}
		return
	}
	rec := synth.NewRecorder()
	err = r.Run(context.Background(), rec)
	got := rec.Trace()
	if !got.Began || !got.Ended {
		t.Fatalf("began %v ended %v (err %v)", got.Began, got.Ended, err)
	}
	if err != nil {
		var de *DamageError
		if !errors.As(err, &de) {
			t.Fatalf("Run: unexpected error %v", err)
		}
		if de.Offset < 0 || de.Offset > int64(len(b)) {
			t.Fatalf("damage offset %d outside a %d-byte file", de.Offset, len(b))
		}
		counted := got.Trailer.Stats.Total(event.CountLost)
		if de.NoneLost {
			counted = got.Trailer.Stats.Get(event.CountInfo, "iotrace file damaged regions (no event lost)")
		}
		if counted == 0 {
			t.Fatalf("damage not counted in the trailer: %v", err)
		}
		return
	}
	for v := minVersion(got); v <= Version; v++ {
		again, err := read(t, write(t, got, WriterOptions{Version: v}))
		if err != nil {
			t.Fatalf("re-read version %d: %v", v, err)
		}
		if err := synth.Compare(got, again); err != nil {
			t.Fatalf("re-encoding as version %d differs:\n%v", v, err)
		}
	}
	r2, _ := NewReader(bytes.NewReader(b))
	var facts []event.Fact
	if err := r2.ScanFacts(context.Background(), func(f *event.Fact) error {
		facts = append(facts, *f)
		return nil
	}); err != nil {
		t.Fatalf("ScanFacts: %v", err)
	}
	if len(facts) != len(got.Facts) || (len(facts) > 0 && !reflect.DeepEqual(facts, got.Facts)) {
		t.Fatalf("ScanFacts saw %d facts, Run %d", len(facts), len(got.Facts))
	}
	var some, want []event.Fact
	for _, f := range got.Facts {
		if f.Rundown == (f.Kind%2 == 0) {
			f.Name, f.Image, f.Detail = "", "", ""
		}
		want = append(want, f)
	}
	r3, _ := NewReader(bytes.NewReader(b))
	if err := r3.ScanFactsWhere(context.Background(), func(k event.FactKind, rundown bool) bool {
		return rundown != (k%2 == 0)
	}, func(f *event.Fact) error {
		some = append(some, *f)
		return nil
	}); err != nil {
		t.Fatalf("ScanFactsWhere: %v", err)
	}
	if len(some) != len(want) || (len(some) > 0 && !reflect.DeepEqual(some, want)) {
		t.Fatalf("ScanFactsWhere saw %d facts, want %d", len(some), len(want))
	}
}

// minVersion returns the first format version that can hold r: 4 with a
// read's page-cache provenance, 3 with stacks or a fact's stack or module
// fields, else 1.
func minVersion(r *synth.Recorded) int {
	v := 1
	for i := range r.Events {
		if eventMask(&r.Events[i], 0)&mProvenance != 0 {
			return 4
		}
		if r.Events[i].Stack != 0 {
			v = 3
		}
	}
	for i := range r.Facts {
		if factMask(&r.Facts[i])&^fAllV2 != 0 {
			v = 3
		}
	}
	return v
}

// withoutProvenance returns a copy of r without its reads' page-cache
// provenance, which format versions before 4 cannot hold (the writer
// refuses it): what tests that write an older version write and compare.
func withoutProvenance(r *synth.Recorded) *synth.Recorded {
	c := *r
	c.Events = slices.Clone(r.Events)
	for i := range c.Events {
		e := &c.Events[i]
		e.ReadCached, e.ReadAhead, e.ReadDisk, e.ReadWaited, e.ReadAheadFrom = 0, 0, 0, 0, 0
	}
	return &c
}

// FuzzRecords feeds arbitrary records chunk payloads to the decoders,
// behind a valid chunk header and CRC (which FuzzReader's mutations
// rarely get past), with the checks of FuzzReader. The first byte selects
// the format version (odd: 1, even: the current one), the rest is the
// payload. The seed corpus in testdata/fuzz/FuzzRecords holds the records
// chunks of FuzzReader's intact seed files.
func FuzzRecords(f *testing.F) {
	for _, b := range recordsCorpus(f) {
		f.Add(b)
	}
	empty := map[int][]byte{}
	for v := 1; v <= Version; v++ {
		empty[v] = write(f, &synth.Recorded{Began: true, Ended: true}, WriterOptions{Version: v})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		v := Version
		if data[0]&1 != 0 {
			v = 1
		}
		checkFile(t, recordsFile(empty[v], data[1:]))
	})
}

// recordsFile returns file (a trace without records) with a records chunk
// of the given payload in place of its trailer, then a trailer without
// the counts of events and facts written (the chunk's are not known).
func recordsFile(file, payload []byte) []byte {
	end := fileHeaderSize
	for off := fileHeaderSize; off+chunkHeaderSize <= len(file); {
		end = off
		off += chunkHeaderSize + int(binary.LittleEndian.Uint32(file[off+8:]))
	}
	out := append([]byte(nil), file[:end]...)
	out = appendChunk(out, chunkRecords, func(p []byte) []byte { return append(p, payload...) })
	return appendChunk(out, chunkTrailer, func(p []byte) []byte { return appendTagI(p, tEnd, 0) })
}

// recordsCorpus returns the records chunk payloads of the intact corpus
// files, each after its version byte (FuzzRecords' input).
func recordsCorpus(t testing.TB) [][]byte {
	var out [][]byte
	for i, b := range corpus(t) {
		name := corpusNames[i]
		if strings.Contains(name, "truncated") || strings.Contains(name, "bitflip") || len(b) <= fileHeaderSize {
			continue
		}
		v := byte(0)
		if binary.LittleEndian.Uint16(b[len(Magic):]) == 1 {
			v = 1
		}
		for off := fileHeaderSize; off+chunkHeaderSize <= len(b); {
			end := off + chunkHeaderSize + int(binary.LittleEndian.Uint32(b[off+8:]))
			if b[off+4] == chunkRecords {
				out = append(out, append([]byte{v}, b[off+chunkHeaderSize:end]...))
			}
			off = end
		}
	}
	return out
}

// corpusNames names the files corpus returns.
var corpusNames = []string{"linux", "windows", "allfields", "empty", "random", "truncated", "bitflip", "magic-only", "stacks",
	"v1-linux", "v1-windows", "v1-allfields", "v1-empty", "v1-random", "v1-truncated", "v1-bitflip"}

// corpus returns small real files: every kind of content, and damage, in
// the current format version, then in version 1.
func corpus(t testing.TB) [][]byte {
	var out [][]byte
	for _, v := range []int{Version, 1} {
		linux := write(t, synth.Trace(synth.Options{OS: "linux", Seed: 11, Events: synth.MinEvents}), WriterOptions{ChunkRecords: 40, Version: v})
		windows := write(t, synth.Trace(synth.Options{OS: "windows", Seed: 12, Events: synth.MinEvents}), WriterOptions{ChunkRecords: 40, Version: v})
		allFields := synth.AllFieldsTrace()
		if v < 4 {
			allFields = withoutProvenance(allFields)
		}
		all := write(t, allFields, WriterOptions{ChunkRecords: 10, Version: v})
		empty := write(t, &synth.Recorded{Began: true, Ended: true}, WriterOptions{Version: v})
		random := write(t, randomTrace(5, 16), WriterOptions{ChunkRecords: 4, Version: v})
		flipped := bytes.Clone(linux)
		flipped[len(flipped)/2] ^= 0x10
		out = append(out, linux, windows, all, empty, random, linux[:len(linux)*2/3], flipped)
		if v == Version {
			out = append(out, []byte(Magic), write(t, synth.StacksTrace(), WriterOptions{ChunkRecords: 4}))
		}
	}
	return out
}

// TestWriteCorpus regenerates the committed seed corpus.
func TestWriteCorpus(t *testing.T) {
	if os.Getenv("IOTRACE_WRITE_CORPUS") != "1" {
		t.Skip("set IOTRACE_WRITE_CORPUS=1 to regenerate testdata/fuzz/FuzzReader and FuzzRecords")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	must(t, os.MkdirAll(dir, 0o755))
	for i, b := range corpus(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		must(t, os.WriteFile(filepath.Join(dir, corpusNames[i]), []byte(body), 0o644))
	}
	dir = filepath.Join("testdata", "fuzz", "FuzzRecords")
	must(t, os.MkdirAll(dir, 0o755))
	for i, b := range recordsCorpus(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("chunk-%02d", i)), []byte(body), 0o644))
	}
}
