package input

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/output"
)

// readJSONLBytes writes data to a file and reads it through Open and Run:
// the fact pre-pass, then the replay.
func readJSONLBytes(t *testing.T, data []byte) (*synth.Recorded, error) {
	t.Helper()
	path := filepath.Join(testenv.TempDir(t), "t.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := synth.NewRecorder()
	err = r.Run(context.Background(), rec)
	return rec.Trace(), err
}

// prepassFacts counts the facts the pre-pass of a jsonl trace delivers.
func prepassFacts(t *testing.T, data []byte) int {
	t.Helper()
	path := filepath.Join(testenv.TempDir(t), "t.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := openJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	err = r.(factScanner).ScanFacts(context.Background(), func(*event.Fact) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestJSONLPrepassKeepsDisguisedFacts: the fact pre-pass skips event lines
// by their prefix, but a line that begins like an event and is a fact for
// the decoder (a repeated "type" key, in another letter case or spelled
// with an escape) must still reach it. Every fact line must reach the
// pre-pass; and end to end, the Windows trace's rundowns come at
// the end, so the events before them are named only by the pre-pass: if it
// skipped the disguised rundowns, those events would lose their names.
func TestJSONLPrepassKeepsDisguisedFacts(t *testing.T) {
	raw := synth.Trace(synth.Options{OS: "windows", Events: 2000, Seed: 9})
	plain, err := os.ReadFile(writeJSONL(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	want, err := readJSONLBytes(t, plain)
	if err != nil {
		t.Fatal(err)
	}
	disguises := []string{
		`{"type":"event","type":"fact",`,
		`{"type":"event","TYPE":"fact",`,
		`{"type":"event","tYpE" : "fact",`,
		`{"type":"event","typ\u0065":"fact",`,
		`{"type":"event","x":"\"","type":"fact",`,
	}
	for _, disguise := range disguises {
		var out bytes.Buffer
		facts := 0
		for _, l := range bytes.SplitAfter(plain, []byte("\n")) {
			if rest, ok := bytes.CutPrefix(l, []byte(`{"type":"fact",`)); ok {
				out.WriteString(disguise)
				out.Write(rest)
				facts++
				continue
			}
			out.Write(l)
		}
		if facts < 100 {
			t.Fatalf("only %d facts in the trace", facts)
		}
		got, err := readJSONLBytes(t, out.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", disguise, err)
		}
		if n := prepassFacts(t, out.Bytes()); n != facts {
			t.Errorf("%s: the pre-pass delivered %d facts, want %d", disguise, n, facts)
		}
		if len(got.Events) != len(want.Events) || len(got.Facts) != len(want.Facts) {
			t.Fatalf("%s: %d events, %d facts; want %d, %d", disguise, len(got.Events), len(got.Facts), len(want.Events), len(want.Facts))
		}
		named, bad := 0, 0
		for i := range want.Events {
			if want.Events[i].Path != "" {
				named++
			}
			if got.Events[i] != want.Events[i] {
				if bad++; bad <= 3 {
					t.Errorf("%s: event %d: got path %q comm %q, want %q %q", disguise, i, got.Events[i].Path, got.Events[i].Comm, want.Events[i].Path, want.Events[i].Comm)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d events differ once the facts are disguised", disguise, bad, len(want.Events))
		}
		if named < len(want.Events)/2 {
			t.Fatalf("only %d of %d events named: the test shows nothing", named, len(want.Events))
		}
	}
}

// TestJSONLDamageCountedOnce: damaged and repeated lines are counted and
// named once, by the replay, whether the pre-pass skipped them (a damaged
// event line with the writer's prefix), decoded them (a damaged fact line)
// or passed over them (a repeated event line); every intact event is read.
func TestJSONLDamageCountedOnce(t *testing.T) {
	tr := synth.Trace(synth.Options{Events: 1000, Seed: 5})
	plain, err := os.ReadFile(writeJSONL(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(plain, []byte("\n"))
	var out bytes.Buffer
	var firstEvent, firstFact []byte
	damagedAt := 0
	for i, l := range lines {
		out.Write(l)
		switch {
		case firstEvent == nil && bytes.HasPrefix(l, []byte(`{"type":"event"`)):
			firstEvent = l
		case firstFact == nil && i > 0 && bytes.HasPrefix(l, []byte(`{"type":"fact"`)):
			firstFact = l
		case i == len(lines)/2:
			damagedAt = bytes.Count(out.Bytes(), []byte("\n")) + 1
			out.WriteString(`{"type":"event","id":999999999,"op":"read",` + "\n") // cut short
			out.WriteString(`{"type":"fact","kind":"no-such-kind"}` + "\n")
			out.Write(firstEvent) // a repeated line
		}
	}
	if firstEvent == nil || firstFact == nil || damagedAt == 0 {
		t.Fatal("trace without events or facts")
	}
	want, err := readJSONLBytes(t, plain)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readJSONLBytes(t, out.Bytes())
	if err == nil {
		t.Fatal("damaged trace read without an error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "line "+strconv.Itoa(damagedAt)+" ") || !strings.Contains(msg, "and 2 more damaged lines") {
		t.Errorf("error %q: want line %d named and 2 more damaged lines", msg, damagedAt)
	}
	if n := got.Trailer.Stats.Get(event.CountLost, output.StatJSONLDamaged); n != 2 {
		t.Errorf("%d damaged lines counted, want 2", n)
	}
	if n := got.Trailer.Stats.Get(event.CountInfo, output.StatJSONLRepeated); n != 1 {
		t.Errorf("%d repeated lines counted, want 1", n)
	}
	if len(got.Events) != len(want.Events) || len(got.Facts) != len(want.Facts) {
		t.Errorf("%d events, %d facts read; want %d, %d", len(got.Events), len(got.Facts), len(want.Events), len(want.Facts))
	}
	for i := range min(len(got.Events), len(want.Events)) {
		if got.Events[i] != want.Events[i] {
			t.Fatalf("event %d differs: %+v, want %+v", i, got.Events[i], want.Events[i])
		}
	}
}

// TestJSONLWrittenByPythonOpens: a jsonl trace that Python's json module
// wrote (output/testdata/python, keys reversed, CRLF, blank lines) is
// recognised by Open and read whole; two of them concatenated, and one
// after iotrace's own, are three traces to OpenAll. On main these files
// were "not a trace file iotrace can read".
func TestJSONLWrittenByPythonOpens(t *testing.T) {
	py, err := os.ReadFile(filepath.Join("..", "output", "testdata", "python", "all-fields.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := synth.AllFieldsTrace()
	got, err := readJSONLBytes(t, py)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != len(want.Events) || len(got.Facts) != len(want.Facts) || !got.Ended {
		t.Fatalf("read %d events, %d facts (ended %v); want %d, %d", len(got.Events), len(got.Facts), got.Ended, len(want.Events), len(want.Facts))
	}
	var own bytes.Buffer
	if err := want.Replay(output.NewJSONL(&own)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testenv.TempDir(t), "cat.jsonl")
	if err := os.WriteFile(path, append(append(bytes.Clone(py), py...), own.Bytes()...), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := OpenAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d traces, want 3", len(rs))
	}
	for i, r := range rs {
		rec := synth.NewRecorder()
		if err := r.Run(context.Background(), rec); err != nil {
			t.Errorf("trace %d: %v", i+1, err)
		}
		if n := len(rec.Trace().Events); n != len(want.Events) {
			t.Errorf("trace %d: %d events, want %d", i+1, n, len(want.Events))
		}
		r.Close()
	}
}
