package parquetfile

import (
	"io"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
)

// BenchmarkWrite writes a synthetic trace's events (names resolved) as
// Parquet to io.Discard: CPU per event of the writer alone.
func BenchmarkWrite(b *testing.B) {
	rec := synth.NewRecorder()
	if err := synth.Generate(synth.Options{Seed: 1, Events: 200_000, Resolved: true, BlockPercent: 10}, rec); err != nil {
		b.Fatal(err)
	}
	tr := rec.Trace()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := New(io.Discard, Options{})
		if err := w.Begin(&tr.Header); err != nil {
			b.Fatal(err)
		}
		for j := range tr.Facts {
			w.Fact(&tr.Facts[j])
		}
		for j := range tr.Events {
			if err := w.Event(&tr.Events[j]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.End(&tr.Trailer); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tr.Events)), "ns/event")
}
