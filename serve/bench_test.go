package serve

import (
	"io"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/metrics"
	"github.com/iotrace/iotrace/tracefile"
)

// BenchmarkSinks is the user-space cost per event of what serve does with
// an event after the backend (the health count, the metrics; with -o the
// .iot encoder too) against what record does (the .iot encoder), over the
// same synthetic Linux stream, process names and devices within --top.
// The backend's own cost (kernel programs, decoding, pairing) is the same
// for both and is not here: bench/serve.sh measures the whole tracer.
// docs/benchmarks.md has the figures.
func BenchmarkSinks(b *testing.B) {
	rec := synth.NewRecorder()
	if err := synth.Generate(synth.Options{Seed: 7, Events: 100_000, BlockPercent: 20, Resolved: true}, rec); err != nil {
		b.Fatal(err)
	}
	trace := rec.Trace()
	served := func(more ...event.Sink) event.Sink {
		return metrics.NewHealth(time.Now()).Sink(tee(append([]event.Sink{metrics.New(metrics.Options{})}, more...)))
	}
	for _, c := range []struct {
		name string
		sink func() event.Sink
	}{
		{"record", func() event.Sink { return tracefile.NewWriter(io.Discard, tracefile.WriterOptions{}) }},
		{"serve", func() event.Sink { return served() }},
		{"serve-o", func() event.Sink { return served(tracefile.NewWriter(io.Discard, tracefile.WriterOptions{})) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := trace.Replay(c.sink()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(trace.Events)), "ns/event")
		})
	}
}
