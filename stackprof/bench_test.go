package stackprof

import (
	"io"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/stacktest"
	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/symbolize"
)

// BenchmarkReportStacks aggregates events by stack as report --stacks
// does, frames named from a real binary (built by the benchmark): 100
// distinct stacks over 4 processes, then writes the report section.
// ns/op is per event.
func BenchmarkReportStacks(b *testing.B) {
	bin := stacktest.BuildProg(b, b.TempDir(), 1)
	tab := stacks.New(stacks.Options{Symbols: symbolize.Options{DebugDirs: []string{}}})
	for pid := uint32(1); pid <= 4; pid++ {
		mod, _ := stacktest.ProgFacts(b, bin, pid, 0x5555_5555_4000)
		tab.Fact(&mod)
	}
	_, st := stacktest.ProgFacts(b, bin, 1, 0x5555_5555_4000)
	for id := uint64(1); id <= 100; id++ {
		f := st
		f.Handle = id
		f.User = append([]uint64{st.User[id%4] + id%7}, st.User...)
		tab.Fact(&f)
	}
	a := NewAggregator(tab)
	e := event.New()
	e.Op, e.Layer, e.Comm, e.Bytes = event.OpWrite, event.LayerFile, "prog", 4096
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Pid = uint32(i%4) + 1
		e.Stack = uint64(i%100) + 1
		e.Duration = int64(i % 1000)
		a.Add(&e)
	}
	if err := a.WriteReport(io.Discard, 10); err != nil {
		b.Fatal(err)
	}
}
