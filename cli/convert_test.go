package cli

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/tracefile"
)

// writeIOT writes tr as a .iot file and returns its path.
func writeIOT(t *testing.T, tr *synth.Recorded) string {
	t.Helper()
	return writeIOTChunks(t, tr, 0)
}

// writeIOTChunks writes tr as a .iot file with at most records events and
// facts per chunk (0: the default).
func writeIOTChunks(t *testing.T, tr *synth.Recorded, records int) string {
	t.Helper()
	path := filepath.Join(testenv.TempDir(t), "trace.iot")
	w, err := tracefile.Create(path, tracefile.WriterOptions{ChunkRecords: records})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRoundTripEveryField is the foundation's "done when": synthetic
// traces with every op and layer (and the trace with every field set)
// written to .iot, printed as jsonl, text and csv: the jsonl parses back
// into exactly the source, the text has one line per event, the csv one
// row per event with the source's values.
func TestRoundTripEveryField(t *testing.T) {
	traces := map[string]*synth.Recorded{
		"linux":      resolvedTrace("linux"),
		"windows":    resolvedTrace("windows"),
		"all fields": synth.AllFieldsTrace(),
	}
	for name, src := range traces {
		ops := map[event.Op]bool{}
		layers := map[event.Layer]bool{}
		for _, e := range src.Events {
			ops[e.Op], layers[e.Layer] = true, true
		}
		if name != "all fields" && len(ops) != len(synth.Ops(src.Header.OS)) || len(layers) != 3 {
			t.Fatalf("%s: the source has %d ops and %d layers", name, len(ops), len(layers))
		}
		path := writeIOT(t, src)

		out, errOut, code := runCLI(t, "print", path, "--format", "jsonl", "--facts")
		if code != 0 {
			t.Fatalf("%s: print jsonl: exit %d: %s", name, code, errOut)
		}
		if err := synth.Compare(src, withoutResolverCount(t, src, readJSONL(t, out))); err != nil {
			t.Errorf("%s: .iot → jsonl differs from the source:\n%v", name, err)
		}

		out, errOut, code = runCLI(t, "print", path)
		if code != 0 {
			t.Fatalf("%s: print text: exit %d: %s", name, code, errOut)
		}
		lines := 0
		for _, l := range strings.Split(out, "\n") {
			if l != "" && l[0] != '#' {
				lines++
			}
		}
		if lines != len(src.Events) {
			t.Errorf("%s: %d text lines for %d events", name, lines, len(src.Events))
		}
		if !strings.Contains(out, "# "+strconv.Itoa(len(src.Events))+" events (") {
			t.Errorf("%s: text summary does not count %d events", name, len(src.Events))
		}

		out, errOut, code = runCLI(t, "print", path, "-f", "csv")
		if code != 0 {
			t.Fatalf("%s: print csv: exit %d: %s", name, code, errOut)
		}
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatalf("%s: csv: %v", name, err)
		}
		if len(rows) != len(src.Events)+1 {
			t.Fatalf("%s: %d csv rows for %d events", name, len(rows)-1, len(src.Events))
		}
		col := map[string]int{}
		for i, c := range rows[0] {
			col[c] = i
		}
		for i, e := range src.Events {
			r := rows[i+1]
			checks := map[string]string{
				"id": strconv.FormatUint(e.ID, 10), "pid": strconv.Itoa(int(e.Pid)), "tid": strconv.Itoa(int(e.Tid)),
				"operation": e.Op.String(), "native": e.Native, "path": e.Path, "path2": e.Path2, "process": e.Comm,
				"duration_ns": strconv.FormatInt(e.Duration, 10), "status": e.Status.String(), "layer": e.Layer.String(),
			}
			for c, want := range checks {
				if r[col[c]] != want {
					t.Errorf("%s: csv row %d column %s = %q, want %q", name, i, c, r[col[c]], want)
				}
			}
		}
	}
}

// TestTruncatedIOT: a cut .iot prints every intact event and exits non-zero
// naming the byte offset of the damage.
func TestTruncatedIOT(t *testing.T) {
	src := synth.Trace(synth.Options{Events: 20000, Seed: 8, Resolved: true})
	path := writeIOTChunks(t, src, 1000)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(data) / 2
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "print", path, "-f", "jsonl")
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "offset") || !strings.Contains(errOut, path) {
		t.Errorf("the error does not name the file and the byte offset: %q", errOut)
	}
	got := readJSONL(t, out)
	if len(got.Events) == 0 || len(got.Events) >= len(src.Events) {
		t.Fatalf("%d of %d events from a file cut in half", len(got.Events), len(src.Events))
	}
	for i := range got.Events {
		if got.Events[i] != src.Events[i] {
			t.Fatalf("intact event %d differs:\n got %+v\nwant %+v", i, got.Events[i], src.Events[i])
		}
	}
	if got.Trailer.Stats.Total(event.CountLost) == 0 {
		t.Error("the damage is not counted in the trailer")
	}
	// The text output says so too.
	out, _, code = runCLI(t, "print", path)
	if code != 2 || !strings.Contains(out, "# PROBLEMS") || !strings.Contains(out, "iotrace file") {
		t.Errorf("text of a damaged file: exit %d, summary:\n%s", code, out[max(0, len(out)-600):])
	}
}

func TestConvert(t *testing.T) {
	src := resolvedTrace("windows")
	in := writeIOT(t, src)
	dir := testenv.TempDir(t)

	// iot → jsonl → iot → jsonl keeps everything.
	j1 := filepath.Join(dir, "a.jsonl")
	if _, errOut, code := runCLI(t, "convert", in, "-o", j1); code != 0 {
		t.Fatalf("convert to jsonl: exit %d: %s", code, errOut)
	}
	i2 := filepath.Join(dir, "b.iot")
	if _, errOut, code := runCLI(t, "convert", j1, "-o", i2); code != 0 {
		t.Fatalf("convert jsonl to iot: exit %d: %s", code, errOut)
	}
	head, _ := os.ReadFile(i2)
	if !bytes.HasPrefix(head, []byte(tracefile.Magic)) {
		t.Fatalf("%s is not a .iot file", i2)
	}
	out, errOut, code := runCLI(t, "convert", i2, "-o", "-", "-f", "jsonl")
	if code != 0 {
		t.Fatalf("convert to stdout: exit %d: %s", code, errOut)
	}
	if err := synth.Compare(src, withoutResolverCount(t, src, readJSONL(t, out))); err != nil {
		t.Errorf("iot → jsonl → iot → jsonl differs:\n%v", err)
	}

	// A filtered conversion to csv, format from the extension.
	c := filepath.Join(dir, "writes.csv")
	if _, errOut, code := runCLI(t, "convert", in, "-o", c, "--op", "write"); code != 0 {
		t.Fatalf("convert to csv: exit %d: %s", code, errOut)
	}
	data, _ := os.ReadFile(c)
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, e := range src.Events {
		if e.Op == event.OpWrite {
			writes++
		}
	}
	if len(rows)-1 != writes {
		t.Errorf("%d csv rows, want the %d writes", len(rows)-1, writes)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", in}, "needs an output file"},
		{[]string{"convert", in, "-o", filepath.Join(dir, "x.dat")}, `cannot tell the output format from`},
		{[]string{"convert", in, "-o", filepath.Join(dir, "x.dat"), "-f", "xml"}, `unknown output format "xml"`},
		{[]string{"convert", in, "-o", in}, "same file"},
	} {
		_, errOut, code := runCLI(t, bad.args...)
		if code == 0 || !strings.Contains(errOut, bad.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", bad.args, code, errOut, bad.want)
		}
	}
	if _, err := os.Stat(in); err != nil {
		t.Errorf("the input was lost: %v", err)
	}
}

// TestNullIsNoTerminal: /dev/null is a character device, not a terminal:
// output sent there is not seen, so it neither takes the terminal rule
// nor keeps the progress line off stderr.
func TestNullIsNoTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer null.Close()
	if isTerminal(null) || toTerminal("-", null) {
		t.Errorf("%s taken for a terminal", os.DevNull)
	}
	if progressShown(null, "out.jsonl", null) {
		t.Errorf("progress on a stderr that is %s", os.DevNull)
	}
}
