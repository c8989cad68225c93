package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/script/scripttest"
	"github.com/iotrace/iotrace/tracefile"
)

// writeScriptTrace records the scripts' test trace as an .iot file (or,
// with jsonl set, a jsonl file), which input.Open reads back through the
// resolver, as iotrace run does.
func writeScriptTrace(t *testing.T, jsonl bool) string {
	t.Helper()
	h, facts, evs, tr := scripttest.Build()
	if !jsonl {
		path := filepath.Join(testenv.TempDir(t), "trace.iot")
		w, err := tracefile.Create(path, tracefile.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := scripttest.Replay(w, h, facts, evs, tr); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := filepath.Join(testenv.TempDir(t), "trace.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := output.New("jsonl", f, output.Options{Facts: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := scripttest.Replay(sink, h, facts, evs, tr); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errs bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errs)
	return out.String(), errs.String(), code
}

// TestRunExamplesOverARecordedTrace runs every example script with
// iotrace run --input over the recorded test trace and checks the exact
// output (the same golden files as the script package's own test).
func TestRunExamplesOverARecordedTrace(t *testing.T) {
	root := testenv.RepoRoot(t)
	scripts, err := filepath.Glob(filepath.Join(root, "examples", "scripts", "*.star"))
	if err != nil || len(scripts) < 10 {
		t.Fatalf("example scripts: %v, %d found", err, len(scripts))
	}
	for _, jsonl := range []bool{false, true} {
		trace := writeScriptTrace(t, jsonl)
		for _, path := range scripts {
			name := strings.TrimSuffix(filepath.Base(path), ".star")
			t.Run(filepath.Ext(trace)[1:]+"/"+name, func(t *testing.T) {
				args := []string{"run", path, "--input", trace}
				if name == "slow_reads" {
					args = append(args, "-D", "ms=10")
				}
				out, errs, code := runCmd(t, args...)
				if code != 0 || errs != "" {
					t.Fatalf("exit %d, stderr %q", code, errs)
				}
				want, err := os.ReadFile(filepath.Join(root, "script", "testdata", "examples", name+".golden"))
				if err != nil {
					t.Fatal(err)
				}
				if out != string(want) {
					t.Errorf("output:\n%s\nwant:\n%s", out, want)
				}
			})
		}
	}
}

func TestRunErrorsAndOptions(t *testing.T) {
	trace := writeScriptTrace(t, false)
	dir := testenv.TempDir(t)
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A runtime error: file:line:col, the event, exit 1, on_end ran.
	bad := write("bad.star", "n = count()\ndef on_event(e):\n    n.add()\n    if e.failed:\n        fail('boom')\ndef on_end():\n    print('partial', n)\n")
	out, errs, code := runCmd(t, "run", bad, "--input", trace)
	if code != 1 || !strings.Contains(errs, "bad.star:5:13: in on_event: fail: boom") ||
		!strings.Contains(errs, "while handling event: open (openat)") || !strings.HasPrefix(out, "partial ") {
		t.Errorf("runtime error: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// --keep-going: both failures reported, the run completes, exit 1.
	out, errs, code = runCmd(t, "run", bad, "--input", trace, "--keep-going")
	if code != 1 || strings.Count(errs, "boom") != 2 || out != "partial 50\n" {
		t.Errorf("--keep-going: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// --where and -D and --output.
	counter := write("count.star", "n = count()\ndef on_event(e):\n    n.add()\ndef on_end():\n    print(args['label'], n)\n")
	outFile := filepath.Join(dir, "out.txt")
	out, errs, code = runCmd(t, "run", counter, "-i", trace, "-w", "layer == 'block'", "-D", "label=bios", "-o", outFile)
	got, _ := os.ReadFile(outFile)
	if code != 0 || out != "" || string(got) != "bios 12\n" {
		t.Errorf("--where/-D/-o: exit %d, stdout %q, file %q, stderr %q", code, out, got, errs)
	}
	// exit() is a success.
	ex := write("exit.star", "def on_event(e):\n    print(e.op)\n    exit()\n")
	out, errs, code = runCmd(t, "run", ex, "-i", trace)
	if code != 0 || out != "read\n" {
		t.Errorf("exit(): exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// Load errors.
	_, errs, code = runCmd(t, "run", counter, "-i", trace, "-w", "op == 'raed'")
	if code != 1 || !strings.Contains(errs, `--where:1:7: op "raed" is not one of`) {
		t.Errorf("bad --where: exit %d, stderr %q", code, errs)
	}
	_, errs, code = runCmd(t, "run", write("syntax.star", "def on_event(e)\n"), "-i", trace)
	if code != 1 || !strings.Contains(errs, "syntax.star:2:1:") {
		t.Errorf("syntax error: exit %d, stderr %q", code, errs)
	}
	_, errs, code = runCmd(t, "run", counter, "-i", trace, "--", "true")
	if code != 1 || !strings.Contains(errs, "not both") {
		t.Errorf("--input with a command: exit %d, stderr %q", code, errs)
	}
	_, errs, code = runCmd(t, "run", "-D", "x", counter, "-i", trace)
	if code != 1 || !strings.Contains(errs, "want NAME=VALUE") {
		t.Errorf("bad -D: exit %d, stderr %q", code, errs)
	}
	_, errs, code = runCmd(t, "run", filepath.Join(dir, "missing.star"), "-i", trace)
	if code != 1 || !strings.Contains(errs, "read script") {
		t.Errorf("missing script: exit %d, stderr %q", code, errs)
	}
	// The script from standard input.
	var sout, serr bytes.Buffer
	code = Main(context.Background(), []string{"run", "-", "-i", trace}, strings.NewReader("def on_end():\n    print(trace.os)\n"), &sout, &serr)
	if code != 0 || sout.String() != "linux\n" {
		t.Errorf("script from stdin: exit %d, stdout %q, stderr %q", code, sout.String(), serr.String())
	}
}

func TestRunFields(t *testing.T) {
	out, _, code := runCmd(t, "run", "--fields")
	if code != 0 || !strings.Contains(out, "latency") || !strings.Contains(out, "caused_ios") || !strings.Contains(out, "device") {
		t.Errorf("--fields: exit %d, %q", code, out)
	}
}

// TestRunScriptOverETL runs an example unchanged over a real Windows
// trace: the perfview fixture's 1,208 disk reads, 21 writes and 2 flushes
// (documented in the fixtures' SOURCES.md) all reach the script.
func TestRunScriptOverETL(t *testing.T) {
	etl := filepath.Join(testenv.ETLDir(t), "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl")
	script := filepath.Join(testenv.RepoRoot(t), "examples", "scripts", "biolatency.star")
	out, errs, code := runCmd(t, "run", script, "--input", etl)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"device = disk0\n",
		"\ndisk0      bflush        2 ",
		"\ndisk0      bread      1208 ",
		"\ndisk0      bwrite       21 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The histogram counts every one of the 1,231 I/Os.
	total := 0
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, " -> "); i >= 0 {
			var lo, hi, n int
			if _, err := fmt.Sscanf(strings.ReplaceAll(line, ":", " "), "%d -> %d %d", &lo, &hi, &n); err == nil {
				total += n
			}
		}
	}
	if total != 1231 {
		t.Errorf("histogram holds %d I/Os, want 1231", total)
	}
	// Nothing lost silently: the trimmed filtrace fixture has disk I/Os
	// without a name, and run says so.
	trimmed := filepath.Join(testenv.ETLDir(t), "filtrace_win11_kernel_diskio_fileio-names_compressed.etl")
	if _, errs, code = runCmd(t, "run", script, "--input", trimmed); code != 0 || !strings.Contains(errs, "unresolved") {
		t.Errorf("filtrace: exit %d, stderr does not report the unresolved I/Os: %q", code, errs)
	}
}

// TestRunScriptLive runs an example unchanged over a live trace of dd:
// its 50 direct 64 KiB writes are each one write of 65,536 bytes.
func TestRunScriptLive(t *testing.T) {
	testenv.RequirePrivileged(t, "live eBPF tracing")
	if _, err := pickLiveBackend(backend.Options{}); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(testenv.TempDir(t), "dd.out")
	script := filepath.Join(testenv.RepoRoot(t), "examples", "scripts", "io_sizes.star")
	out, errs, code := runCmd(t, "run", script, "-v", "--", "dd", "if=/dev/zero", "of="+target, "bs=64k", "count=50", "oflag=direct")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	i := strings.Index(out, "op = write\n")
	if i < 0 {
		t.Fatalf("no write histogram:\n%s", out)
	}
	if !strings.Contains(out[i:], "65536 -> 131071 : 50 ") {
		t.Errorf("write histogram lacks 50 writes of 64 KiB:\n%s", out[i:])
	}
	if !strings.Contains(errs, "pushed down to the backend: layer in (file, block) and op in (read, write, bread, bwrite)") {
		t.Errorf("stderr %q", errs)
	}
}
