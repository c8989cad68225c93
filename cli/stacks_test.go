package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/stacktest"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize"
	"github.com/iotrace/iotrace/tracefile"
)

// progTrace writes a .iot trace of process 4242 with the module fact of
// bin and three write events (1000, 2000 and 4000 bytes, 1, 2 and 4 µs)
// issued from the stack write_block <- inner_fn <- outer_fn <- main in
// it, the last with a kernel part named by the trace's kernel symbols,
// and one event without a stack.
func progTrace(t *testing.T, bin string) string {
	t.Helper()
	mod, st := stacktest.ProgFacts(t, bin, 4242, 0x5555_5555_4000)
	kst := st
	kst.Handle = 2
	kst.Kernel = []uint64{0xffff_ffff_8140_0010}
	path := filepath.Join(testenv.TempDir(t), "stacks.iot")
	w, err := tracefile.Create(path, tracefile.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := event.Header{Source: event.SourceSynthetic, OS: "linux", CPUs: 1}
	must(t, w.Begin(&h))
	for _, f := range []event.Fact{
		{Kind: event.FactProcess, Rundown: true, Pid: 4242, Name: "prog", Image: bin},
		{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8140_0000, Size: 0x100, Name: "ksys_write"},
		mod, st, kst,
	} {
		must(t, w.Fact(&f))
	}
	for i, n := range []int64{1000, 2000, 4000, 8} {
		e := event.New()
		e.ID, e.Source, e.Layer, e.Op, e.Native = uint64(i+1), event.SourceSynthetic, event.LayerFile, event.OpWrite, "write"
		e.Time, e.Duration, e.Pid, e.Tid, e.Comm, e.Path, e.FD = int64(i)*10_000, n, 4242, 4242, "prog", "/tmp/out", 3
		e.Size, e.Bytes, e.Stack = uint64(n), n, 1
		if i == 2 {
			e.Stack = 2
		}
		if i == 3 {
			e.Stack = 0
		}
		must(t, w.Event(&e))
	}
	must(t, w.End(&event.Trailer{End: 100_000}))
	must(t, w.Close())
	return path
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var chain = regexp.MustCompile(`(?s)at write_block \(prog\.c:\d+\)\n    at inner_fn \(prog\.c:\d+\)\n    at outer_fn \(prog\.c:\d+\)\n    at main \(prog\.c:\d+\)\n`)

// TestPrintStacks: print --stacks names the frames of a real binary
// (built by the test) from its path, then from a --symbols directory
// under its build-id once it is gone from its path; a rebuilt binary of
// another build-id at the path names nothing and the mismatch is counted
// in the summary.
func TestPrintStacks(t *testing.T) {
	dir := testenv.TempDir(t)
	bin := stacktest.BuildProg(t, dir, 1)
	path := progTrace(t, bin)

	out, errOut, code := runCLI(t, "print", "--stacks", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if os.Getenv("IOTRACE_SHOW") != "" {
		t.Log(out)
	}
	if n := len(chain.FindAllString(out, -1)); n != 3 {
		t.Fatalf("the call chain is named %d times, want 3:\n%s", n, out)
	}
	if !strings.Contains(out, "    at [k] ksys_write\n    at write_block") {
		t.Errorf("kernel frame not named from the trace's symbols:\n%s", out)
	}
	if strings.Count(out, "    at ") != 13 || strings.Contains(out, "PROBLEMS") {
		t.Errorf("frames or problems:\n%s", out)
	}

	// Offline: the binary moves to a symbols directory (debuginfod
	// layout) and is gone from its path.
	id, err := symbolize.ReadID(bin)
	if err != nil {
		t.Fatal(err)
	}
	syms := testenv.TempDir(t)
	must(t, os.MkdirAll(filepath.Join(syms, strings.TrimPrefix(id, "gnu:")), 0o755))
	must(t, os.Rename(bin, filepath.Join(syms, strings.TrimPrefix(id, "gnu:"), "debuginfo")))
	out, errOut, code = runCLI(t, "print", "--stacks", "--symbols", syms, path)
	if code != 0 || len(chain.FindAllString(out, -1)) != 3 {
		t.Fatalf("from --symbols: exit %d %s\n%s", code, errOut, out)
	}
	// Without it: module+offset, counted.
	out, _, _ = runCLI(t, "print", "--stacks", path)
	if !strings.Contains(out, "    at prog+0x") || !strings.Contains(out, "stack "+symbolize.NoFile.String()+": 12") {
		t.Errorf("without the binary:\n%s", out)
	}

	// A rebuilt binary with another build-id at the original path.
	stacktest.BuildProg(t, dir, 2)
	if id2, _ := symbolize.ReadID(bin); id2 == id {
		t.Fatalf("the rebuilt binary has the same build-id %s", id)
	}
	out, _, _ = runCLI(t, "print", "--stacks", path)
	if strings.Contains(out, "inner_fn") || strings.Contains(out, "write_block") {
		t.Errorf("frames named from a binary with another build-id:\n%s", out)
	}
	if !strings.Contains(out, "PROBLEMS") || !strings.Contains(out, "stack "+symbolize.IDMismatch.String()+": 12") {
		t.Errorf("mismatch not counted:\n%s", out)
	}

	// --stacks is for text.
	if _, errOut, code := runCLI(t, "print", "--stacks", "-f", "jsonl", path); code == 0 || !strings.Contains(errOut, "--stacks prints frames in text") {
		t.Errorf("--stacks -f jsonl: exit %d %s", code, errOut)
	}
}

// TestConvertPprofAndFolded: the pprof profile reads back with
// github.com/google/pprof/profile, its file-layer values summing to the
// trace's totals (it has no block I/O), with the binary's functions
// named; folded lines sum to the same totals for each weight.
func TestConvertPprofAndFolded(t *testing.T) {
	dir := testenv.TempDir(t)
	bin := stacktest.BuildProg(t, dir, 1)
	path := progTrace(t, bin)
	// The trace's totals: 4 events, 7008 bytes, 7008 ns.
	want := map[string]int64{"file_ops": 4, "file_bytes": 7008, "file_latency": 7008}

	out := filepath.Join(dir, "io.pb.gz")
	if _, errOut, code := runCLI(t, "convert", path, "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	f, err := os.Open(out)
	must(t, err)
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("pprof cannot read the profile: %v", err)
	}
	must(t, p.CheckValid())
	for i, st := range p.SampleType {
		var sum int64
		for _, s := range p.Sample {
			sum += s.Value[i]
		}
		if sum != want[st.Type] {
			t.Errorf("%s: samples sum to %d, want %d", st.Type, sum, want[st.Type])
		}
	}
	var names []string
	for _, l := range p.Sample[0].Location {
		names = append(names, l.Line[0].Function.Name)
	}
	if strings.Join(names, ",") != "write_block,inner_fn,outer_fn,main,write" {
		t.Errorf("first sample's stack: %q", names)
	}

	for weight, total := range map[string]int64{"count": 4, "bytes": 7008, "latency": 7008} {
		stdout, errOut, code := runCLI(t, "convert", path, "-f", "folded", "--weight", weight, "-o", "-")
		if code != 0 {
			t.Fatalf("folded %s: exit %d: %s", weight, code, errOut)
		}
		var sum int64
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			i := strings.LastIndexByte(line, ' ')
			v, err := strconv.ParseInt(line[i+1:], 10, 64)
			if err != nil {
				t.Fatalf("folded line %q", line)
			}
			sum += v
		}
		if sum != total {
			t.Errorf("folded %s: lines sum to %d, want %d:\n%s", weight, sum, total, stdout)
		}
		if !strings.Contains(stdout, "write;main;outer_fn;inner_fn;write_block;[k] ksys_write ") || !strings.Contains(stdout, "write;[no stack] ") {
			t.Errorf("folded %s:\n%s", weight, stdout)
		}
	}
	if _, errOut, code := runCLI(t, "convert", path, "-f", "pprof", "--weight", "bytes", "-o", filepath.Join(dir, "x.pprof")); code == 0 || !strings.Contains(errOut, "--weight applies to -f folded") {
		t.Errorf("--weight with pprof: exit %d %s", code, errOut)
	}
}

// TestReportStacks: report --stacks lists the top stacks, named, with
// their shares; unnamed frames reach the report's problems.
func TestReportStacks(t *testing.T) {
	dir := testenv.TempDir(t)
	bin := stacktest.BuildProg(t, dir, 1)
	path := progTrace(t, bin)
	out, errOut, code := runCLI(t, "report", "--stacks", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if os.Getenv("IOTRACE_SHOW") != "" {
		t.Log(out)
	}
	for _, want := range []string{
		"STACKS: 2 distinct (op, process, stack) of 4 events",
		"Top stacks of file I/O by time\n           4µs  57.1%  1 events, 4000 B, 4µs  write prog\n        [k] ksys_write\n        write_block (prog.c:",
		"Top stacks of file I/O by count\n             2  50.0%  2 events, 3000 B, 3µs  write prog\n        write_block",
		"Top stacks of write by time",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// The binary gone: frames unnamed, counted among the problems.
	must(t, os.Remove(bin))
	out, _, _ = runCLI(t, "report", "--stacks", path)
	if !strings.Contains(out, "prog+0x") || !strings.Contains(out, symbolize.NoFile.String()) {
		t.Errorf("unnamed frames not shown or counted:\n%s", out)
	}
	if _, errOut, code := runCLI(t, "report", "--stacks", "--format", "json", path); code == 0 || !strings.Contains(errOut, "--stacks reports") {
		t.Errorf("--stacks --format json: exit %d %s", code, errOut)
	}
}

// TestScriptStack: e.stack is the event's frames, innermost first, as
// print --stacks names them (a tuple: a usable aggregation key), empty
// without a stack.
func TestScriptStack(t *testing.T) {
	dir := testenv.TempDir(t)
	bin := stacktest.BuildProg(t, dir, 1)
	path := progTrace(t, bin)
	src := filepath.Join(dir, "s.star")
	must(t, os.WriteFile(src, []byte(`
by = count("stack")
def on_event(e):
    by.add(e.stack)
    print(e.id, len(e.stack), e.stack[1] if e.stack else "-")
def on_end():
    print(by)
`), 0o600))
	out, errOut, code := runCLI(t, "run", src, "-i", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"1 4 inner_fn (prog.c:", "3 5 write_block (prog.c:", "4 0 -"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q:\n%s", want, out)
		}
	}
}

// TestStacksSurviveConvert: .iot → jsonl → .iot keeps the stacks, the
// modules and the kernel symbols: the frames are named the same.
func TestStacksSurviveConvert(t *testing.T) {
	dir := testenv.TempDir(t)
	bin := stacktest.BuildProg(t, dir, 1)
	path := progTrace(t, bin)
	want, _, _ := runCLI(t, "print", "--stacks", path)
	jl := filepath.Join(dir, "t.jsonl")
	back := filepath.Join(dir, "back.iot")
	for _, c := range [][]string{{"convert", path, "-o", jl}, {"convert", jl, "-o", back}} {
		if _, errOut, code := runCLI(t, c...); code != 0 {
			t.Fatalf("%v: exit %d: %s", c, code, errOut)
		}
	}
	data, err := os.ReadFile(jl)
	must(t, err)
	if !strings.Contains(string(data), `"kind":"stack"`) || !strings.Contains(string(data), `"stack":1`) || !strings.Contains(string(data), `"kind":"module"`) {
		t.Errorf("jsonl without the stacks:\n%s", data)
	}
	for _, p := range []string{jl, back} {
		got, _, code := runCLI(t, "print", "--stacks", p)
		if code != 0 || got != want {
			t.Errorf("%s: exit %d, printed\n%s\nwant\n%s", p, code, got, want)
		}
	}
}

// TestConvertParquetStacks: the Parquet stack column holds each event's
// frames named as print --stacks names them, innermost first, and is null
// for the event without a stack; DuckDB reads it as a list.
func TestConvertParquetStacks(t *testing.T) {
	dir := testenv.TempDir(t)
	bin := stacktest.BuildProg(t, dir, 1)
	path := progTrace(t, bin)
	pq := filepath.Join(dir, "s.parquet")
	if _, errOut, code := runCLI(t, "convert", path, "-o", pq); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	res := duckDB(t, "SELECT id, len(stack) AS n, list_aggregate(stack, 'string_agg', ' <- ') AS frames, stack IS NULL AS none FROM read_parquet('"+pq+"') ORDER BY id")
	rows := res[0]
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4: %v", len(rows), rows)
	}
	named := 0
	for _, r := range rows {
		fr, _ := r["frames"].(string)
		if regexp.MustCompile(`^(\[k\] ksys_write <- )?write_block \(prog\.c:\d+\) <- inner_fn \(prog\.c:\d+\) <- outer_fn \(prog\.c:\d+\) <- main \(prog\.c:\d+\)$`).MatchString(fr) {
			named++
		}
	}
	if named != 3 || rows[3]["none"] != true || !strings.HasPrefix(rows[2]["frames"].(string), "[k] ksys_write <- write_block") {
		t.Errorf("stack column: %v", rows)
	}
}
