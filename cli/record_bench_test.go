package cli

import (
	"io"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/tracefile"
)

// BenchmarkRecordSinks is the user-space cost per event of what record
// does with an event after the backend: the filter, the summary's count,
// the problem warnings, the periodic flush and the .iot encoder (to
// io.Discard), over a synthetic Linux stream. The status line reads the
// summary's count; this measures that counting it for another goroutine
// costs nothing that shows (docs/benchmarks.md).
func BenchmarkRecordSinks(b *testing.B) {
	rec := synth.NewRecorder()
	if err := synth.Generate(synth.Options{Seed: 7, Events: 100_000, BlockPercent: 20, Resolved: true}, rec); err != nil {
		b.Fatal(err)
	}
	trace := rec.Trace()
	f, err := filter.New(filter.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w := tracefile.NewWriter(io.Discard, tracefile.WriterOptions{})
		pf := &periodicFlush{Writer: w, every: time.Second}
		var sink event.Sink = &summary{Sink: problemWarner{Sink: pf, w: io.Discard}, w: io.Discard, verb: "recorded"}
		if err := trace.Replay(f.Sink(sink)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(trace.Events)), "ns/event")
}
