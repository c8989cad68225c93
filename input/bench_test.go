package input

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/cputime"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/tracefile"
)

// benchIOT is the .iot the read-side benchmark reads: $IOTRACE_BENCH_IOT
// (such as the 10 M-event trace of docs/benchmarks.md), or else a
// 200,000-event synthetic Linux trace written once per process.
var benchIOT = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("IOTRACE_BENCH_IOT"); p != "" {
		return p, nil
	}
	dir, err := os.MkdirTemp("", "iotrace-input-bench")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "bench.iot")
	w, err := tracefile.Create(path, tracefile.WriterOptions{})
	if err != nil {
		return "", err
	}
	if err := synth.Trace(synth.Options{OS: "linux", Seed: 1, Events: 200_000}).Replay(w); err != nil {
		w.Close()
		return "", err
	}
	return path, w.Close()
})

// pathSink counts what it receives and touches every event's path and
// comm, as a report would.
type pathSink struct {
	events, facts, named, bytes uint64
}

func (*pathSink) Begin(*event.Header) error { return nil }
func (s *pathSink) Fact(*event.Fact) error  { s.facts++; return nil }
func (s *pathSink) Event(e *event.Event) error {
	s.events++
	if e.Path != "" {
		s.named++
	}
	s.bytes += uint64(len(e.Path) + len(e.Comm))
	return nil
}
func (*pathSink) End(*event.Trailer) error { return nil }

// BenchmarkReadIOT is the read side of "iotrace report": Open (the fact
// pre-pass, resolution) and Run into a sink that does next to nothing.
// It reports wall and process CPU time per event.
func BenchmarkReadIOT(b *testing.B) {
	path, err := benchIOT()
	if err != nil {
		b.Fatal(err)
	}
	var s pathSink
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for range b.N {
		s = pathSink{}
		in, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := in.Run(context.Background(), &s); err != nil {
			b.Fatal(err)
		}
		in.Close()
	}
	n := float64(b.N) * float64(s.events)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	if cpu0 != 0 {
		b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/n, "cpu-ns/event")
	}
	b.ReportMetric(float64(s.named)/float64(s.events), "named/event")
}
