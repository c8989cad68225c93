package stackprof

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
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
	sums := make([]int64, 3)
	for _, s := range p.Sample {
		for i, v := range s.Value {
			sums[i] += v
		}
	}
	if sums[0] != want.Count || sums[1] != want.Bytes || sums[2] != want.Latency {
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
