package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/compare"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/report"
)

// writeSynthJSONL writes a synthetic trace as JSON Lines (a format input
// reads) and returns its path and the recorded trace.
func writeSynthJSONL(t *testing.T, dir, name string, opts synth.Options) (string, *synth.Recorded) {
	t.Helper()
	tr := synth.Trace(opts)
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(output.NewJSONL(f)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, tr
}

func runIotrace(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestReportCommand(t *testing.T) {
	dir := testenv.TempDir(t)
	path, tr := writeSynthJSONL(t, dir, "t.jsonl", synth.Options{Seed: 3, Events: 3000, BlockPercent: 20})
	svg := filepath.Join(dir, "heat.svg")
	out, errs, code := runIotrace(t, "report", path, "--format", "json", "--top", "3", "--heatmap", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res report.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json: %v\n%.500s", err, out)
	}
	if res.Trace.Events != uint64(len(tr.Events)) || len(res.FilesByBytes) != 3 || res.Cache == nil {
		t.Errorf("events %d (want %d), files %d, cache %v", res.Trace.Events, len(tr.Events), len(res.FilesByBytes), res.Cache != nil)
	}
	// Names resolve from the facts on the way in: no file is left without
	// a path when the trace has the bindings.
	for _, f := range res.FilesByBytes {
		if f.Name == "(no path)" {
			t.Errorf("unresolved file among the top: %+v", f)
		}
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.HasPrefix(b, []byte("<?xml")) {
		t.Errorf("heatmap: %v", err)
	}

	// Text, with a filter.
	out, errs, code = runIotrace(t, "report", path, "--op", "read")
	if code != 0 || !strings.Contains(out, "OPERATIONS") || strings.Contains(out, "  file   write") {
		t.Errorf("exit %d %s\n%s", code, errs, out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escapes written to a non-terminal")
	}

	// Bad flags.
	if _, errs, code = runIotrace(t, "report", path, "--format", "xml"); code == 0 || !strings.Contains(errs, "text or json") {
		t.Errorf("--format xml: exit %d %s", code, errs)
	}
	if _, _, code = runIotrace(t, "report", filepath.Join(dir, "missing")); code == 0 {
		t.Error("missing input accepted")
	}
}

func TestReportDamagedInput(t *testing.T) {
	dir := testenv.TempDir(t)
	path, _ := writeSynthJSONL(t, dir, "t.jsonl", synth.Options{Seed: 4, Events: 500})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cut, append(b[:len(b)/2:len(b)/2], []byte("{not json\n")...), 0o644)
	out, errs, code := runIotrace(t, "report", cut)
	if code == 0 {
		t.Fatalf("damaged input: exit 0\n%s", out)
	}
	if !strings.Contains(out, "TOTALS") || !strings.Contains(errs, "covers only what was read") {
		t.Errorf("damaged input: no report of what was read:\nstdout %.300s\nstderr %s", out, errs)
	}
}

func TestCompareCommand(t *testing.T) {
	dir := testenv.TempDir(t)
	a, _ := writeSynthJSONL(t, dir, "a.jsonl", synth.Options{Seed: 5, Events: 2000})
	b, _ := writeSynthJSONL(t, dir, "b.jsonl", synth.Options{Seed: 5, Events: 2000})
	out, errs, code := runIotrace(t, "compare", a, b, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res compare.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json: %v", err)
	}
	if len(res.Ops) == 0 || res.FilesOnlyA != 0 || res.FilesOnlyB != 0 {
		t.Errorf("ops %d, only A %d, only B %d", len(res.Ops), res.FilesOnlyA, res.FilesOnlyB)
	}
	// The same trace twice: every ratio is 1.
	out, _, code = runIotrace(t, "compare", a, b)
	if code != 0 || !strings.Contains(out, "1.00×") || strings.Contains(out, "new") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if _, errs, code = runIotrace(t, "compare", a, b, "--map", "nothing"); code == 0 || !strings.Contains(errs, "OLD=NEW") {
		t.Errorf("--map without '=': exit %d %s", code, errs)
	}
}

func TestReportLive(t *testing.T) {
	testenv.RequirePrivileged(t, "report --live traces this machine with eBPF")
	dir := testenv.TempDir(t)
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, bytes.Repeat([]byte("x"), 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runIotrace(t, "report", "--live", "--format", "json", "--duration", "20s",
		"--", "dd", "if="+src, "of=/dev/null", "bs=4096")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res report.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json: %v\n%.300s", err, out)
	}
	var dd *report.Entity
	for i := range res.Processes {
		if res.Processes[i].Name == "dd" {
			dd = &res.Processes[i]
		}
	}
	if dd == nil {
		t.Fatalf("dd not among the processes: %+v", res.Processes)
	}
	var readBytes uint64
	for _, o := range dd.Ops {
		if o.Op == "read" {
			readBytes += o.Bytes
		}
	}
	if readBytes < 1<<16 {
		t.Errorf("dd read %d bytes, want at least %d", readBytes, 1<<16)
	}
	if _, _, code := runIotrace(t, "report", "--live", "stray"); code == 0 {
		t.Error("--live with an argument before -- accepted")
	}
}

func TestConvertPerfetto(t *testing.T) {
	dir := testenv.TempDir(t)
	in, tr := writeSynthJSONL(t, dir, "t.jsonl", synth.Options{Seed: 6, Events: 1000, BlockPercent: 30})
	out := filepath.Join(dir, "t.json")
	if _, errs, code := runIotrace(t, "convert", in, "--format", "perfetto", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph string `json:"ph"`
		} `json:"traceEvents"`
		Iotrace struct {
			Complete bool `json:"complete"`
		} `json:"iotrace"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	slices, flows := 0, 0
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "X":
			slices++
		case "s":
			flows++
		}
	}
	if !doc.Iotrace.Complete || slices < len(tr.Events)-10 || flows == 0 {
		t.Errorf("complete %v, %d slices for %d events, %d flows", doc.Iotrace.Complete, slices, len(tr.Events), flows)
	}
}

// TestConvertPerfettoByExtension: -o x.json and x.pftrace choose Perfetto;
// print -o x.json still writes jsonl.
func TestConvertPerfettoByExtension(t *testing.T) {
	dir := testenv.TempDir(t)
	in, _ := writeSynthJSONL(t, dir, "t.jsonl", synth.Options{Seed: 7, Events: 300})
	for _, name := range []string{"a.json", "b.pftrace"} {
		out := filepath.Join(dir, name)
		if _, errs, code := runIotrace(t, "convert", in, "-o", out); code != 0 {
			t.Fatalf("convert -o %s: exit %d: %s", name, code, errs)
		}
		if b, _ := os.ReadFile(out); !bytes.Contains(b, []byte(`"traceEvents"`)) {
			t.Errorf("convert -o %s did not write Perfetto JSON: %.80s", name, b)
		}
	}
	out := filepath.Join(dir, "p.json")
	if _, errs, code := runIotrace(t, "print", in, "-o", out); code != 0 {
		t.Fatalf("print -o p.json: %s", errs)
	}
	if b, _ := os.ReadFile(out); !bytes.HasPrefix(b, []byte(`{"type":"header"`)) {
		t.Errorf("print -o p.json: %.80s", b)
	}
}
