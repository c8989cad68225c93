package stackprof

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/symbolize"
)

func aggregate(t *testing.T) *Aggregator {
	t.Helper()
	tab := stacks.New(stacks.Options{Symbols: symbolize.Options{DebugDirs: []string{}, NoModulePath: true}})
	a := NewAggregator(tab)
	s := NewFolded(&bytes.Buffer{}, tab, WeightCount)
	s.Aggregator = a
	if err := synth.StacksTrace().Replay(tab.Feed(s)); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTotals: the synthetic stacks trace's samples sum to its totals in
// pprof and folded, for every weight.
func TestTotals(t *testing.T) {
	a := aggregate(t)
	var want Totals
	for _, e := range synth.StacksTrace().Events {
		want.Count++
		want.Bytes += max(e.Bytes, 0)
		want.Latency += e.Duration
	}
	if a.Totals() != want {
		t.Fatalf("totals %+v, want %+v", a.Totals(), want)
	}
	var buf bytes.Buffer
	if err := a.Profile().Write(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	sums := make([]int64, 6)
	for _, s := range p.Sample {
		for i, v := range s.Value {
			sums[i] += v
		}
	}
	if sums[0]+sums[3] != want.Count || sums[1]+sums[4] != want.Bytes || sums[2]+sums[5] != want.Latency {
		t.Errorf("pprof sums %v, want %+v", sums, want)
	}
	for w, total := range map[Weight]int64{WeightCount: want.Count, WeightBytes: want.Bytes, WeightLatency: want.Latency} {
		var out bytes.Buffer
		if err := a.WriteFolded(&out, w); err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var v int64
			i := strings.LastIndexByte(l, ' ')
			for _, c := range l[i+1:] {
				v = v*10 + int64(c-'0')
			}
			sum += v
		}
		if sum != total {
			t.Errorf("folded weight %d: %d, want %d:\n%s", w, sum, total, out.String())
		}
	}
}

// TestPprofLayersAndMainMapping: go tool pprof reads the profile; its
// file_bytes and block_bytes are the file events' and the block I/O's
// bytes, never summed (the bytes sample added them into one number); the
// layer label selects one (-tagfocus); the first mapping (pprof's main
// binary) is the traced program, not the kernel's module.
func TestPprofLayersAndMainMapping(t *testing.T) {
	testenv.SkipUnderWine(t, "runs go tool pprof: no Go toolchain in the wine prefix")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		t.Fatalf("go tool not found: %v", err)
	}
	tab := stacks.New(stacks.Options{Symbols: symbolize.Options{DebugDirs: []string{}, NoModulePath: true}})
	var buf bytes.Buffer
	s := NewPprof(&buf, tab)
	if err := synth.StacksTrace().Replay(tab.Feed(s)); err != nil {
		t.Fatal(err)
	}
	var file, block int64
	for _, e := range synth.StacksTrace().Events {
		if e.Layer == event.LayerBlock {
			block += e.Bytes
		} else {
			file += e.Bytes
		}
	}
	p, err := profile.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Mapping) == 0 || p.Mapping[0].File != "app" {
		t.Errorf("main mapping %+v, want app", p.Mapping)
	}
	path := filepath.Join(testenv.TempDir(t), "io.pb.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=file_bytes", "-unit=bytes", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "of "+strconv.FormatInt(file, 10)+"B total") {
		t.Errorf("file_bytes: want %d B in total:\n%s", file, out)
	}
	out, err = exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=block_bytes", "-unit=bytes", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "of "+strconv.FormatInt(block, 10)+"B total") {
		t.Errorf("block_bytes: want %d B in total:\n%s", block, out)
	}
	out, err = exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=file_ops", "-tagfocus=layer=block", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "write") {
		t.Errorf("-tagfocus=layer=block kept file writes:\n%s", out)
	}
}

// TestFoldedNames: ';' and newlines in names cannot split a folded line;
// the op is the root, frames outermost first.
func TestFoldedNames(t *testing.T) {
	tab := stacks.New(stacks.Options{Symbols: symbolize.Options{DebugDirs: []string{}}})
	tab.Fact(&event.Fact{Kind: event.FactKernelSymbol, Handle: 0x1000, Name: "a;b\nc"})
	tab.Fact(&event.Fact{Kind: event.FactKernelSymbol, Handle: 0x2000, Name: "outer"})
	tab.Fact(&event.Fact{Kind: event.FactStack, Handle: 1, Kernel: []uint64{0x1010, 0x2010}})
	a := NewAggregator(tab)
	e := event.New()
	e.Op, e.Stack, e.Duration = event.OpRead, 1, 5
	a.Add(&e)
	var out bytes.Buffer
	if err := a.WriteFolded(&out, WeightLatency); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "read;[k] outer;[k] a:b c 5\n" {
		t.Errorf("folded %q", got)
	}
}

// TestMainModuleVersioned: a program run through a versioned symlink
// (python3 → python3.11, recorded under its resolved path) is still the
// main mapping, by the command or by the process name, not a library
// that happened to come first.
func TestMainModuleVersioned(t *testing.T) {
	sample := func(comm string, n int64, modules ...string) *agg {
		s := &agg{comm: comm, Totals: Totals{Count: n}}
		for _, m := range modules {
			s.frames = append(s.frames, stacks.Frame{Frame: symbolize.Frame{Module: m}})
		}
		return s
	}
	for _, c := range []struct {
		command string
		order   []*agg
		want    string
	}{
		{"python3 app.py", []*agg{sample("python3", 5, "libc.so.6", "python3.11")}, "python3.11"},
		{"", []*agg{sample("python3", 5, "libc.so.6", "python3.11"), sample("sh", 2, "libc.so.6", "dash")}, "python3.11"},
		{"/usr/bin/perl x.pl", []*agg{sample("perl", 1, "libc.so.6", "perl5.36.0", "perl")}, "perl"},
		{"python3 app.py", []*agg{sample("python3", 1, "libc.so.6", "python3-config")}, "libc.so.6"},
		{"python3 app.py", []*agg{sample("python3", 1, "libc.so.6", "python3.x")}, "libc.so.6"},
	} {
		a := &Aggregator{command: c.command, order: c.order}
		if got := a.mainModule(); got != c.want {
			t.Errorf("command %q: main module %q, want %q", c.command, got, c.want)
		}
	}
	for file, want := range map[string]bool{"python3.11": true, "python3-3.11": true, "python3": false, "python3.": false, "python3..1": false, "python3-config": false, "python31": false} {
		if got := versionOf(file, "python3"); got != want {
			t.Errorf("versionOf(%q, python3) = %v", file, got)
		}
	}
	if !versionOf("ruby-3.1", "ruby") {
		t.Error("versionOf(ruby-3.1, ruby) = false")
	}
}
