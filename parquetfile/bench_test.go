package parquetfile

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/tracefile"
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

// BenchmarkConvertIOT converts the .iot named by IOTRACE_BENCH_IOT (skipped
// when unset) to Parquet in memory, as `iotrace convert` does without the
// file: ns per event and the Parquet bytes per .iot byte.
func BenchmarkConvertIOT(b *testing.B) {
	path := os.Getenv("IOTRACE_BENCH_IOT")
	if path == "" {
		b.Skip("IOTRACE_BENCH_IOT names no .iot file")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var rows uint64
	var size countWriter
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := tracefile.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		w := New(&size, Options{})
		err = r.Run(context.Background(), w)
		r.Close()
		if err != nil {
			b.Fatal(err)
		}
		rows = w.Rows()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(uint64(b.N)*rows), "ns/event")
	b.ReportMetric(float64(size)/float64(st.Size()), "x-iot-size")
}

// countWriter counts the bytes written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
