package resolve_test

import (
	"sync"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/resolve"
)

// benchTrace is a syscall-heavy synthetic Linux trace: many processes
// opening and closing files, the shape of the fact pre-pass of "iotrace
// report" (docs/benchmarks.md).
var benchTrace = sync.OnceValue(func() *synth.Recorded {
	return synth.Trace(synth.Options{OS: "linux", Seed: 1, Events: 500_000})
})

type nopSink struct{}

func (nopSink) Begin(*event.Header) error { return nil }
func (nopSink) Event(*event.Event) error  { return nil }
func (nopSink) Fact(*event.Fact) error    { return nil }
func (nopSink) End(*event.Trailer) error  { return nil }

// BenchmarkApply builds the tables from every fact of the trace, as the
// fact pre-pass does.
func BenchmarkApply(b *testing.B) {
	tr := benchTrace()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t := resolve.NewTables()
		for i := range tr.Facts {
			t.Apply(&tr.Facts[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tr.Facts)), "ns/fact")
}

// BenchmarkResolve resolves every event of the trace with tables that
// hold all its facts (input's pre-resolved replay).
func BenchmarkResolve(b *testing.B) {
	tr := benchTrace()
	r := resolve.NewResolver(nopSink{})
	for i := range tr.Facts {
		r.Tables.Apply(&tr.Facts[i])
	}
	evs := make([]event.Event, len(tr.Events))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		copy(evs, tr.Events)
		for i := range evs {
			r.Resolve(&evs[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(evs)), "ns/event")
}

// BenchmarkStream resolves the trace as input does: a pre-pass over the
// facts (Prescan), then facts applied and events resolved in stream
// order with bounded tables. Compare with BenchmarkApply + BenchmarkResolve
// (the unbounded tables the reader used before).
func BenchmarkStream(b *testing.B) {
	tr := benchTrace()
	evs := make([]event.Event, len(tr.Events))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		copy(evs, tr.Events)
		r := resolve.NewTablesResolver(nopSink{}, resolve.NewBoundedTables(resolve.StreamLimits()))
		for i := range tr.Facts {
			r.Tables.Prescan(&tr.Facts[i])
		}
		for _, it := range tr.Order {
			if it.Kind == synth.ItemFact {
				r.Tables.Apply(&tr.Facts[it.Index])
			} else {
				r.Resolve(&evs[it.Index])
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(evs)), "ns/event")
}
