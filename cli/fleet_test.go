package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/report"
)

// TestReportManyInputs: report over several traces (named and by glob)
// and report --merge over their per-trace JSON reports give the same fleet
// report. The two Linux traces are of one host but two boots (a day
// apart): not one time line, so they merge as separate traces do.
func TestReportManyInputs(t *testing.T) {
	dir := testenv.TempDir(t)
	var paths []string
	const day = 86_400_000_000_000
	for i, o := range []synth.Options{{Seed: 21, Events: 4000}, {Seed: 22, Events: 3000, OS: "windows"},
		{Seed: 23, Events: 2000, StartWall: 1741944413_000000000 + day}} {
		p, _ := writeSynthJSONL(t, dir, "t"+string(rune('a'+i))+".jsonl", o)
		paths = append(paths, p)
	}
	together, errs, code := runIotrace(t, append([]string{"report", "--format", "json"}, paths...)...)
	if code != 0 {
		t.Fatalf("report of three traces: exit %d: %s", code, errs)
	}
	globbed, errs, code := runIotrace(t, "report", "--format", "json", filepath.Join(dir, "t*.jsonl"))
	if code != 0 || globbed != together {
		t.Fatalf("report of a glob: exit %d: %s (same output: %v)", code, errs, globbed == together)
	}
	var jsons []string
	for i, p := range paths {
		out, errs, code := runIotrace(t, "report", "--format", "json", p)
		if code != 0 {
			t.Fatalf("report %s: exit %d: %s", p, code, errs)
		}
		j := filepath.Join(dir, "r"+string(rune('a'+i))+".json")
		if err := os.WriteFile(j, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		jsons = append(jsons, j)
	}
	merged, errs, code := runIotrace(t, append([]string{"report", "--merge", "--format", "json"}, jsons...)...)
	if code != 0 {
		t.Fatalf("report --merge: exit %d: %s", code, errs)
	}
	if merged != together {
		t.Errorf("report --merge of the per-trace reports differs from the report of the traces together")
	}
	var res report.Result
	if err := json.Unmarshal([]byte(merged), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Traces) != 3 || len(res.Hosts) != 2 || res.Trace.OS != "mixed" || res.Trace.Events != 9000 {
		t.Errorf("merged: %d traces, %d hosts, os %q, %d events", len(res.Traces), len(res.Hosts), res.Trace.OS, res.Trace.Events)
	}
	text, errs, code := runIotrace(t, append([]string{"report"}, paths...)...)
	if code != 0 || !strings.Contains(text, "HOSTS (3 traces)") {
		t.Errorf("text: exit %d %s\n%.600s", code, errs, text)
	}

	// Trace files of both .iot format versions in one report.
	v1 := filepath.Join(testenv.RepoRoot(t), "tracefile", "testdata", "v1", "linux.iot")
	v2 := filepath.Join(dir, "v2.iot")
	if _, errs, code := runIotrace(t, "convert", paths[2], "-o", v2); code != 0 { // another boot than the v1 file's
		t.Fatalf("convert: %s", errs)
	}
	if out, errs, code := runIotrace(t, "report", "--format", "json", v1, v2); code != 0 || !strings.Contains(out, `"traces"`) {
		t.Errorf("report of a v1 and a v2 file: exit %d: %s", code, errs)
	}

	// Bad inputs: clear errors, exit 1.
	for _, args := range [][]string{
		{"report", filepath.Join(dir, "none*.iot")},
		{"report", "--merge", paths[0]},
		{"report", "--merge", jsons[0], "--op", "read"},
		{"report", paths[0], paths[1], "--heatmap", filepath.Join(dir, "h.svg")},
	} {
		if _, errs, code := runIotrace(t, args...); code != 1 || errs == "" {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

// TestPrintManyInputs: print of several traces prints each whole, in
// order; a damaged one prints what it holds and the command exits 2 after
// the others printed.
func TestPrintManyInputs(t *testing.T) {
	dir := testenv.TempDir(t)
	a, ta := writeSynthJSONL(t, dir, "a.jsonl", synth.Options{Seed: 31, Events: 500})
	b, tb := writeSynthJSONL(t, dir, "b.jsonl", synth.Options{Seed: 32, Events: 700, OS: "windows"})
	out, errs, code := runIotrace(t, "print", "-f", "csv", a, b)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := strings.Count(out, "\n"); n < len(ta.Events)+len(tb.Events) {
		t.Errorf("%d lines for %d events", n, len(ta.Events)+len(tb.Events))
	}
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code = runIotrace(t, "print", "-f", "csv", bad, b)
	if code != 2 || !strings.Contains(errs, "bad.jsonl") || strings.Count(out, "\n") < len(tb.Events) {
		t.Errorf("damaged first input: exit %d, %d lines\n%s", code, strings.Count(out, "\n"), errs)
	}
}

// TestConcatenatedJSONLTraces: jsonl traces concatenated with cat read
// back as several traces in print, report and convert.
func TestConcatenatedJSONLTraces(t *testing.T) {
	dir := testenv.TempDir(t)
	a, ta := writeSynthJSONL(t, dir, "a.jsonl", synth.Options{Seed: 51, Events: 900})
	b, tb := writeSynthJSONL(t, dir, "b.jsonl", synth.Options{Seed: 52, Events: 700, OS: "windows"})
	var all []byte
	for _, p := range []string{a, b} {
		d, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, d...)
	}
	cat := filepath.Join(dir, "cat.jsonl")
	if err := os.WriteFile(cat, all, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runIotrace(t, "report", "--format", "json", cat)
	var res report.Result
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Traces) != 2 || res.Trace.Events != uint64(len(ta.Events)+len(tb.Events)) {
		t.Fatalf("report of two concatenated traces: exit %d, %d traces, %d events: %s", code, len(res.Traces), res.Trace.Events, errs)
	}
	// print -f jsonl of it is again two concatenated traces.
	out, errs, code = runIotrace(t, "print", "-f", "jsonl", cat)
	if code != 0 || strings.Count(out, `{"type":"header"`) != 2 {
		t.Fatalf("print: exit %d, %d headers: %s", code, strings.Count(out, `{"type":"header"`), errs)
	}
	again := filepath.Join(dir, "again.jsonl")
	if _, errs, code := runIotrace(t, "convert", cat, "-o", again); code != 0 {
		t.Fatalf("convert to jsonl: %s", errs)
	}
	if _, errs, code := runIotrace(t, "report", again); code != 0 || errs != "" {
		t.Errorf("report of the converted concatenation: exit %d: %s", code, errs)
	}
	if _, errs, code := runIotrace(t, "convert", cat, "-o", filepath.Join(dir, "x.iot")); code != 1 || !strings.Contains(errs, "2 concatenated traces") {
		t.Errorf("convert of two traces to one .iot: exit %d: %s", code, errs)
	}
}
