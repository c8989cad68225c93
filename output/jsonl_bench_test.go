package output_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/cputime"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/tracefile"
)

// benchEvents is how many events the read benchmarks read per round.
const benchEvents = 100_000

// benchTrace is one synthetic Linux trace written as .iot and as jsonl,
// once per process: the same events in both formats.
var benchTrace = sync.OnceValues(func() (files [2]string, err error) {
	dir, err := os.MkdirTemp("", "iotrace-jsonl-bench")
	if err != nil {
		return files, err
	}
	tr := synth.Trace(synth.Options{OS: "linux", Seed: 1, Events: benchEvents})
	files = [2]string{filepath.Join(dir, "bench.iot"), filepath.Join(dir, "bench.jsonl")}
	w, err := tracefile.Create(files[0], tracefile.WriterOptions{})
	if err != nil {
		return files, err
	}
	if err := tr.Replay(w); err != nil {
		w.Close()
		return files, err
	}
	if err := w.Close(); err != nil {
		return files, err
	}
	var buf bytes.Buffer
	if err := tr.Replay(output.NewJSONL(&buf)); err != nil {
		return files, err
	}
	return files, os.WriteFile(files[1], buf.Bytes(), 0o600)
})

// countSink counts what it receives and touches every event's path and
// comm, as a report would.
type countSink struct{ events, named, bytes uint64 }

func (*countSink) Begin(*event.Header) error { return nil }
func (*countSink) Fact(*event.Fact) error    { return nil }
func (s *countSink) Event(e *event.Event) error {
	s.events++
	if e.Path != "" {
		s.named++
	}
	s.bytes += uint64(len(e.Path) + len(e.Comm))
	return nil
}
func (*countSink) End(*event.Trailer) error { return nil }

// BenchmarkJSONLRead reads the same 100,000 events from jsonl and from
// .iot, side by side in one run (with -count N every round measures all of
// them back to back):
//
//   - jsonl: output.ReadJSONL on the file's bytes in memory;
//   - jsonl-generic: the same with every line decoded by go-json (the
//     reader before the schema decoder);
//   - iot: input.Open + Run of the .iot, the read side of "iotrace report"
//     (fact pre-pass, name resolution), as BenchmarkReadIOT in input;
//   - jsonl-input: input.Open + Run of the jsonl file, the same user path.
//
// It reports wall and process CPU nanoseconds per event.
func BenchmarkJSONLRead(b *testing.B) {
	files, err := benchTrace()
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(files[1])
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run := func(b *testing.B, read func(s *countSink) error) {
		var s countSink
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cputime.Process()
		for range b.N {
			s = countSink{}
			if err := read(&s); err != nil {
				b.Fatal(err)
			}
		}
		if s.events != benchEvents {
			b.Fatalf("%d events read, want %d", s.events, benchEvents)
		}
		n := float64(b.N) * float64(s.events)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
		if cpu0 != 0 {
			b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/n, "cpu-ns/event")
		}
	}
	openRun := func(path string) func(s *countSink) error {
		return func(s *countSink) error {
			in, err := input.Open(path)
			if err != nil {
				return err
			}
			defer in.Close()
			return in.Run(ctx, s)
		}
	}
	b.Run("jsonl", func(b *testing.B) {
		run(b, func(s *countSink) error { return output.ReadJSONL(ctx, bytes.NewReader(data), "bench", s) })
	})
	b.Run("jsonl-generic", func(b *testing.B) {
		run(b, func(s *countSink) error { return output.ReadJSONLGeneric(ctx, bytes.NewReader(data), "bench", s) })
	})
	b.Run("iot", func(b *testing.B) { run(b, openRun(files[0])) })
	b.Run("jsonl-input", func(b *testing.B) { run(b, openRun(files[1])) })
}
