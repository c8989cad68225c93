package output

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// otherToolTraces are the traces rewritten as other tools would write them.
func otherToolTraces() map[string]*synth.Recorded {
	return map[string]*synth.Recorded{
		"all fields": synth.AllFieldsTrace(),
		"stacks":     synth.StacksTrace(),
		"linux":      synth.Trace(synth.Options{Events: 600, Seed: 3}),
		"windows":    synth.Trace(synth.Options{OS: "windows", Events: 600, Seed: 4}),
	}
}

// redump rewrites a jsonl trace with Python's json module
// (testdata/python/redump.py, mode default, sorted or reversed).
func redump(t *testing.T, jsonl []byte, mode string) []byte {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if runtime.GOOS == "windows" {
			t.Skip("no python3 here (TestJSONLPythonFixture reads what it wrote)")
		}
		t.Fatalf("python3 (scripts/setup installs it): %v", err)
	}
	cmd := exec.Command(py, "-B", filepath.Join("testdata", "python", "redump.py"), mode)
	cmd.Stdin = bytes.NewReader(jsonl)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("redump.py %s: %v\n%s", mode, err, stderr.Bytes())
	}
	return out
}

// readAllWays reads data with ReadJSONL, ReadJSONLBytes and the generic
// reader, checks each read the trace want without an error, and checks
// the fact pre-pass delivers its facts.
func readAllWays(t *testing.T, name string, data []byte, want *synth.Recorded) {
	t.Helper()
	ctx := context.Background()
	reads := map[string]func(*synth.Recorder) error{
		"ReadJSONL":      func(r *synth.Recorder) error { return ReadJSONL(ctx, bytes.NewReader(data), name, r) },
		"ReadJSONLBytes": func(r *synth.Recorder) error { return ReadJSONLBytes(ctx, data, name, r, nil) },
		"generic":        func(r *synth.Recorder) error { return ReadJSONLGeneric(ctx, bytes.NewReader(data), name, r) },
	}
	for how, read := range reads {
		rec := synth.NewRecorder()
		if err := read(rec); err != nil {
			t.Fatalf("%s, %s: %v", name, how, err)
		}
		if err := synth.Compare(want, rec.Trace()); err != nil {
			t.Fatalf("%s, %s: read differs from what iotrace wrote:\n%v", name, how, err)
		}
	}
	n := 0
	countFacts := func(*event.Fact) error { n++; return nil }
	if err := ScanJSONLFacts(ctx, bytes.NewReader(data), name, countFacts); err != nil {
		t.Fatalf("%s: fact pre-pass: %v", name, err)
	}
	if n != len(want.Facts) {
		t.Errorf("%s: fact pre-pass: %d facts, want %d", name, n, len(want.Facts))
	}
}

// TestJSONLWrittenByPython reads traces that Python's json module wrote
// again from iotrace's jsonl (json.dumps: spaces after ':' and ',',
// non-ASCII escaped; keys sorted; keys reversed with CRLF, blank and
// indented lines, escaped '/'): the same trace as iotrace's own file, by
// every reader.
func TestJSONLWrittenByPython(t *testing.T) {
	for name, want := range otherToolTraces() {
		var buf bytes.Buffer
		if err := want.Replay(NewJSONL(&buf)); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"default", "sorted", "reversed"} {
			data := redump(t, buf.Bytes(), mode)
			if bytes.HasPrefix(data, []byte(JSONLMagic)) {
				t.Fatalf("%s %s: python wrote iotrace's own layout: %.80q", name, mode, data)
			}
			readAllWays(t, name+" ("+mode+")", data, want)
		}
	}
}

// TestJSONLPythonFixture reads testdata/python/all-fields.jsonl, made by
// redump.py (mode reversed) from the all-fields trace, on every OS.
// Regenerate it with IOTRACE_UPDATE_FIXTURES=1.
func TestJSONLPythonFixture(t *testing.T) {
	want := synth.AllFieldsTrace()
	path := filepath.Join("testdata", "python", "all-fields.jsonl")
	if os.Getenv("IOTRACE_UPDATE_FIXTURES") != "" {
		var buf bytes.Buffer
		if err := want.Replay(NewJSONL(&buf)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, redump(t, buf.Bytes(), "reversed"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readAllWays(t, path, data, want)
	if !MaybeJSONL(data[:min(len(data), 512)]) {
		t.Errorf("MaybeJSONL refuses the fixture's first bytes %.80q", data)
	}
}

// TestJSONLHandWritten reads a small trace typed by hand: spaces and tabs
// around everything, keys in any order, escapes in strings, a key in
// another letter case, blank lines and CRLF.
func TestJSONLHandWritten(t *testing.T) {
	const text = "\r\n" +
		"{ \"os\" : \"linux\", \"source\":\"ebpf\" ,\t\"type\" : \"header\" }\r\n" +
		"\r\n" +
		"  { \"path\": \"\\/tmp\\/caf\\u00e9 \\\"x\\\"\", \"op\": \"read\", \"type\": \"event\", \"id\": 7, \"source\": \"ebpf\", \"layer\": \"file\", \"status\": \"ok\", \"Bytes\": 10 }\r\n" +
		"{\"end\": 99, \"type\": \"trailer\"}\r\n"
	rec := synth.NewRecorder()
	if err := ReadJSONL(context.Background(), strings.NewReader(text), "hand.jsonl", rec); err != nil {
		t.Fatal(err)
	}
	tr := rec.Trace()
	if len(tr.Events) != 1 || !tr.Began || !tr.Ended {
		t.Fatalf("read %+v", tr)
	}
	e := tr.Events[0]
	if e.Path != `/tmp/café "x"` || e.ID != 7 || e.Bytes != 10 || e.Op.String() != "read" || tr.Header.OS != "linux" || tr.Trailer.End != 99 {
		t.Errorf("event %+v, header %+v, trailer %+v", e, tr.Header, tr.Trailer)
	}
}

// TestJSONLOtherToolsBadInput: a line of another layout that is damaged
// is named by line and field, what came before it kept; a file whose
// first object is not a header is refused.
func TestJSONLOtherToolsBadInput(t *testing.T) {
	const hdr = `{"os": "linux", "type": "header", "source": "ebpf"}` + "\n"
	const ev = `{"type": "event", "id": %d, "source": "ebpf", "layer": "file", "op": "read", "status": "ok", "pid": %s}` + "\n"
	for _, c := range []struct {
		name, text string
		want       []string
		events     int
	}{
		{"bad field", hdr + fmt.Sprintf(ev, 1, "5") + fmt.Sprintf(ev, 2, `"five"`) + fmt.Sprintf(ev, 3, "6") + `{"type": "trailer"}` + "\n",
			[]string{"line 3", "pid"}, 2},
		{"bad json", hdr + fmt.Sprintf(ev, 1, "5") + `{"type": "event", "id": 2,` + "\n" + `{"type": "trailer"}` + "\n",
			[]string{"line 3"}, 1},
		{"not a header", `{"type": "event", "id": 1}` + "\n", []string{errNotJSONL, "line 1", `"event" object`}, 0},
		{"not json", "{type: header}\n", []string{errNotJSONL, "line 1"}, 0},
	} {
		rec := synth.NewRecorder()
		err := ReadJSONL(context.Background(), strings.NewReader(c.text), "t.jsonl", rec)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
		if n := len(rec.Trace().Events); n != c.events {
			t.Errorf("%s: %d events kept, want %d", c.name, n, c.events)
		}
	}
}
