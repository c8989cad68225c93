package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
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

// runCLI runs iotrace in-process and returns what it printed and its exit
// code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// writeJSONL writes tr as a jsonl trace file and returns its path.
func writeJSONL(t *testing.T, tr *synth.Recorded) string {
	t.Helper()
	path := filepath.Join(testenv.TempDir(t), "trace.jsonl")
	var buf bytes.Buffer
	if err := tr.Replay(output.NewJSONL(&buf)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readJSONL parses jsonl output back into a trace.
func readJSONL(t *testing.T, data string) *synth.Recorded {
	t.Helper()
	rec := synth.NewRecorder()
	if err := output.ReadJSONL(context.Background(), strings.NewReader(data), "output", rec); err != nil {
		t.Fatalf("reading the jsonl output back: %v", err)
	}
	return rec.Trace()
}

// resolverCounter is the counter the read-time resolver adds for the
// events it could not name.
const resolverCounter = "events with a handle but no path (resolver)"

// withoutResolverCount returns tr with the read-time resolver's counter
// removed, after checking that it counts no more events than the source
// itself marked unresolved: a source resolved at capture has nothing left
// for the reader to name.
func withoutResolverCount(t *testing.T, src, tr *synth.Recorded) *synth.Recorded {
	t.Helper()
	n := tr.Trailer.Stats.Get(event.CountUnresolved, resolverCounter)
	if max := src.Trailer.Stats.Total(event.CountUnresolved); n > max {
		t.Errorf("the reader left %d events unresolved; the source had %d", n, max)
	}
	var cs []event.Counter
	for _, c := range tr.Trailer.Stats.Counters {
		if c.Name != resolverCounter {
			cs = append(cs, c)
		}
	}
	tr.Trailer.Stats.Counters = cs
	return tr
}

// resolvedTrace is a synthetic trace with every op and layer whose names
// are resolved at capture, so that reading it back changes nothing.
func resolvedTrace(os string) *synth.Recorded {
	return synth.Trace(synth.Options{OS: os, Events: 1500, Seed: 11, Resolved: true})
}

func TestPrintJSONLInput(t *testing.T) {
	src := resolvedTrace("linux")
	path := writeJSONL(t, src)
	out, errOut, code := runCLI(t, "print", path, "-f", "jsonl", "--facts")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if err := synth.Compare(src, withoutResolverCount(t, src, readJSONL(t, out))); err != nil {
		t.Errorf("print -f jsonl of a jsonl trace differs from the source:\n%v", err)
	}
	if !strings.Contains(errOut, "warning: the trace is incomplete") || !strings.Contains(errOut, "ring buffer full") {
		t.Errorf("problem counters not reported on stderr: %q", errOut)
	}
}

func TestPrintFilters(t *testing.T) {
	src := resolvedTrace("linux")
	path := writeJSONL(t, src)
	out, errOut, code := runCLI(t, "print", path, "-f", "jsonl", "--op", "open", "--failed")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := readJSONL(t, out)
	want := 0
	for _, e := range src.Events {
		if e.Op == event.OpOpen && e.Failed() {
			want++
		}
	}
	if want == 0 || len(got.Events) != want {
		t.Fatalf("%d failed opens printed, want %d", len(got.Events), want)
	}
	for _, e := range got.Events {
		if e.Op != event.OpOpen || !e.Failed() {
			t.Errorf("filter let through %v %v", e.Op, e.Status)
		}
	}
	if n := got.Trailer.Stats.Get(event.CountInfo, "events left out by the filter"); n != uint64(len(src.Events)-want) {
		t.Errorf("filtered-out counter %d, want %d", n, len(src.Events)-want)
	}

	_, errOut, code = runCLI(t, "print", path, "--op", "frobnicate")
	if code == 0 || !strings.Contains(errOut, `unknown op "frobnicate"`) || !strings.Contains(errOut, "bdiscard") {
		t.Errorf("bad --op: exit %d, %q", code, errOut)
	}
}

func TestPrintText(t *testing.T) {
	src := resolvedTrace("windows")
	path := writeJSONL(t, src)
	out, errOut, code := runCLI(t, "print", path, "--pid", strconv.Itoa(int(src.Events[1].Pid)))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if errOut != "" {
		t.Errorf("text to stdout repeats the summary on stderr: %q", errOut)
	}
	for _, want := range []string{"# iotrace trace from synthetic: windows", "FileIo/Create", "# PROBLEMS", "events left out by the filter"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
}

func TestPrintCSVToFile(t *testing.T) {
	src := resolvedTrace("linux")
	path := writeJSONL(t, src)
	outPath := filepath.Join(testenv.TempDir(t), "out.csv")
	stdout, errOut, code := runCLI(t, "print", path, "-o", outPath)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout, errOut)
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(src.Events)+1 || rows[0][0] != "id" {
		t.Errorf("%d csv rows for %d events (format from the .csv extension)", len(rows)-1, len(src.Events))
	}
	if !strings.Contains(errOut, "warning: the trace is incomplete") {
		t.Errorf("csv output: problems not reported on stderr: %q", errOut)
	}
}

func TestPrintBadInput(t *testing.T) {
	dir := testenv.TempDir(t)
	random := filepath.Join(dir, "random.bin")
	os.WriteFile(random, []byte("\x7fELF\x02\x01\x01\x00garbage that is not a trace"), 0o644)
	empty := filepath.Join(dir, "empty.iot")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct{ path, want string }{
		{random, `not a trace file iotrace can read: it begins with 7f 45 4c 46`},
		{empty, "empty file"},
		{filepath.Join(dir, "missing.iot"), notExist},
		{dir, "is a directory"},
	} {
		_, errOut, code := runCLI(t, "print", c.path)
		if code == 0 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, c.path) {
			t.Errorf("print %s: exit %d, stderr %q; want an error naming the file and %q", c.path, code, errOut, c.want)
		}
	}
}

func TestPrintDamagedJSONL(t *testing.T) {
	src := resolvedTrace("linux")
	path := writeJSONL(t, src)
	data, _ := os.ReadFile(path)
	cut := len(data) * 2 / 3
	os.WriteFile(path, data[:cut], 0o644)
	out, errOut, code := runCLI(t, "print", path, "-f", "jsonl")
	if code != 2 || !strings.Contains(errOut, "byte offset") {
		t.Fatalf("damaged file: exit %d, stderr %q; want exit 2 naming the byte offset", code, errOut)
	}
	got := readJSONL(t, out)
	if len(got.Events) == 0 || len(got.Events) >= len(src.Events) {
		t.Fatalf("%d of %d events printed from a file cut at 2/3", len(got.Events), len(src.Events))
	}
	for i := range got.Events {
		if got.Events[i] != src.Events[i] {
			t.Fatalf("intact event %d differs", i)
		}
	}
}

// notExist is how this OS says a file does not exist.
var notExist = func() string {
	_, err := os.Open(filepath.Join(os.TempDir(), "iotrace-no-such-file"))
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return "no such file"
}()

// TestPrintInTimeOrder: print passes a recorded trace's events on in time
// order (a live recording holds them in buffer order) (#19).
func TestPrintInTimeOrder(t *testing.T) {
	var buf bytes.Buffer
	j := output.NewJSONL(&buf)
	h := event.Header{Source: event.SourceEBPF, OS: "linux", Clock: event.Clock{Kind: event.ClockBoottime, Freq: 1e9}}
	if err := j.Begin(&h); err != nil {
		t.Fatal(err)
	}
	for i, tm := range []int64{30, 10, 20, 50, 40} {
		e := event.Event{ID: uint64(i + 1), Time: tm, Source: event.SourceEBPF, Layer: event.LayerFile, Op: event.OpRead,
			Native: "read", Pid: 1, Tid: 1, FD: -1, Path: "/x", Status: event.StatusOK}
		if err := j.Event(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.End(&event.Trailer{End: 60}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testenv.TempDir(t), "t.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "print", path, "-f", "jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var times []int64
	for _, e := range readJSONL(t, out).Events {
		times = append(times, e.Time)
	}
	want := []int64{10, 20, 30, 40, 50}
	if fmt.Sprint(times) != fmt.Sprint(want) {
		t.Errorf("printed in order %v, want %v", times, want)
	}
}

// TestDidYouMean: a mistyped op, layer or field is named with the one it
// most likely meant, wherever it is parsed: filter flags, --where, a
// script's filter and a script's code.
func TestDidYouMean(t *testing.T) {
	path := writeJSONL(t, resolvedTrace("linux"))
	dir := testenv.TempDir(t)
	code := filepath.Join(dir, "code.star")
	os.WriteFile(code, []byte("def on_event(e):\n    print(e.latncy)\n"), 0o600)
	flt := filepath.Join(dir, "filter.star")
	os.WriteFile(flt, []byte("FILTER = 'op == \"raed\"'\ndef on_event(e):\n    pass\n"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"print", path, "--op", "reed"}, `unknown op "reed" (did you mean "read"?)`},
		{[]string{"report", path, "--layer", "blok"}, `unknown layer "blok" (did you mean "block"?)`},
		{[]string{"run", code, "--input", path, "-w", "latncy > 1"}, `unknown field "latncy" (did you mean "latency"?)`},
		{[]string{"run", code, "--input", path, "-w", `op == "wirte"`}, `(did you mean "write"?)`},
		{[]string{"run", flt, "--input", path}, `(did you mean "read"?)`},
		{[]string{"run", code, "--input", path}, `did you mean .latency?`},
	} {
		_, errOut, exit := runCLI(t, c.args...)
		if exit == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args[:len(c.args)-2], exit, errOut, c.want)
		}
	}
}
