package tracefile_test

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/tracefile"
)

// benchEvents is the size of the benchmark trace: a syscall-heavy synthetic
// build (synth defaults: 5 % of reads miss the cache), the same trace for
// every benchmark.
const benchEvents = 100_000

var benchTrace = sync.OnceValue(func() *synth.Recorded {
	return synth.Trace(synth.Options{OS: "linux", Seed: 42, Events: benchEvents})
})

// benchFiles holds the benchmark trace written in each format version
// (index 0: the current version).
var benchFiles = sync.OnceValue(func() [tracefile.Version + 1][]byte {
	var files [tracefile.Version + 1][]byte
	for v := range files {
		var buf bytes.Buffer
		w := tracefile.NewWriter(&buf, tracefile.WriterOptions{Version: v})
		if err := benchTrace().Replay(w); err != nil {
			panic(err)
		}
		files[v] = buf.Bytes()
	}
	return files
})

func benchFile() []byte { return benchFiles()[0] }

// versions are the format versions the benchmarks compare.
var versions = []struct {
	name    string
	version int
}{{"v2", 2}, {"v1", 1}}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

type nopSink struct{ n int }

func (nopSink) Begin(*event.Header) error   { return nil }
func (s *nopSink) Event(*event.Event) error { s.n++; return nil }
func (nopSink) Fact(*event.Fact) error      { return nil }
func (nopSink) End(*event.Trailer) error    { return nil }

// cpuStart returns the process CPU time at the start of the timed loop.
func cpuStart(b *testing.B) int64 {
	b.ResetTimer()
	return cpuNanos()
}

// perEvent reports wall and CPU time per event. With -cpu 1 the process
// CPU time is the benchmark's own work (GC included) even when other
// processes compete for the cores.
func perEvent(b *testing.B, cpu0 int64) {
	n := float64(b.N) * benchEvents
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	if cpu0 != 0 {
		b.ReportMetric(float64(cpuNanos()-cpu0)/n, "cpu-ns/event")
	}
	b.ReportMetric(0, "ns/op")
}

// encode writes the benchmark trace straight from its slices (no copies).
func encode(w *tracefile.Writer, tr *synth.Recorded) error {
	h := tr.Header
	if err := w.Begin(&h); err != nil {
		return err
	}
	for _, it := range tr.Order {
		var err error
		if it.Kind == synth.ItemEvent {
			err = w.Event(&tr.Events[it.Index])
		} else {
			err = w.Fact(&tr.Facts[it.Index])
		}
		if err != nil {
			return err
		}
	}
	t := tr.Trailer
	return w.End(&t)
}

// BenchmarkEncode writes the benchmark trace to a .iot stream, in each
// format version.
func BenchmarkEncode(b *testing.B) {
	for _, v := range versions {
		b.Run(v.name, func(b *testing.B) { benchEncode(b, v.version) })
	}
}

func benchEncode(b *testing.B, version int) {
	tr := benchTrace()
	b.ReportAllocs()
	var size int64
	cpu0 := cpuStart(b)
	for b.Loop() {
		var cw countWriter
		w := tracefile.NewWriter(&cw, tracefile.WriterOptions{Version: version})
		if err := encode(w, tr); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	perEvent(b, cpu0)
	b.ReportMetric(float64(size)/benchEvents, "bytes/event")
}

// BenchmarkDecode replays the benchmark .iot stream into a sink that does
// nothing, the trace written in each format version.
func BenchmarkDecode(b *testing.B) {
	for _, v := range versions {
		b.Run(v.name, func(b *testing.B) { benchDecode(b, benchFiles()[v.version]) })
	}
}

func benchDecode(b *testing.B, file []byte) {
	b.ReportAllocs()
	cpu0 := cpuStart(b)
	for b.Loop() {
		r, err := tracefile.NewReader(bytes.NewReader(file))
		if err != nil {
			b.Fatal(err)
		}
		var s nopSink
		if err := r.Run(context.Background(), &s); err != nil {
			b.Fatal(err)
		}
		if s.n != benchEvents {
			b.Fatalf("decoded %d events", s.n)
		}
	}
	perEvent(b, cpu0)
}

// BenchmarkDecodeFile reads a .iot file as "iotrace report" does: the
// fact pre-pass (ScanFactsWhere, naming only rundowns, devices and
// volumes, as input's resolver asks), then Run, both into sinks that do
// nothing. The file is $IOTRACE_BENCH_IOT (such as the 10 M-event trace
// of docs/benchmarks.md) or else the benchmark trace in each format
// version. It reports the CPU time per event of each pass.
func BenchmarkDecodeFile(b *testing.B) {
	if path := os.Getenv("IOTRACE_BENCH_IOT"); path != "" {
		benchDecodeFile(b, func() (*tracefile.Reader, error) { return tracefile.Open(path) })
		return
	}
	for _, v := range versions {
		b.Run(v.name, func(b *testing.B) {
			file := benchFiles()[v.version]
			benchDecodeFile(b, func() (*tracefile.Reader, error) { return tracefile.NewReader(bytes.NewReader(file)) })
		})
	}
}

// prescanNamed is the facts whose strings input's pre-pass makes.
func prescanNamed(kind event.FactKind, rundown bool) bool {
	return rundown || kind == event.FactDevice || kind == event.FactVolume
}

func benchDecodeFile(b *testing.B, open func() (*tracefile.Reader, error)) {
	b.ReportAllocs()
	var scan, run int64
	events := 0
	b.ResetTimer()
	for b.Loop() {
		r, err := open()
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuNanos()
		facts := 0
		err = r.ScanFactsWhere(context.Background(), prescanNamed, func(*event.Fact) error { facts++; return nil })
		if err != nil {
			b.Fatal(err)
		}
		cpu1 := cpuNanos()
		var s nopSink
		if err := r.Run(context.Background(), &s); err != nil {
			b.Fatal(err)
		}
		scan += cpu1 - cpu0
		run += cpuNanos() - cpu1
		events = s.n
		r.Close()
	}
	n := float64(b.N) * float64(events)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	b.ReportMetric(float64(scan)/n, "scan-cpu-ns/event")
	b.ReportMetric(float64(run)/n, "run-cpu-ns/event")
	b.ReportMetric(float64(scan+run)/n, "cpu-ns/event")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkEncodeDecode writes the trace and reads it back: the figure
// the ≤ 200 ns/event target applies to.
func BenchmarkEncodeDecode(b *testing.B) {
	tr := benchTrace()
	var buf bytes.Buffer
	b.ReportAllocs()
	cpu0 := cpuStart(b)
	for b.Loop() {
		buf.Reset()
		w := tracefile.NewWriter(&buf, tracefile.WriterOptions{})
		if err := encode(w, tr); err != nil {
			b.Fatal(err)
		}
		r, err := tracefile.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			b.Fatal(err)
		}
		var s nopSink
		if err := r.Run(context.Background(), &s); err != nil {
			b.Fatal(err)
		}
	}
	perEvent(b, cpu0)
}

// BenchmarkJSONL writes the same trace as JSON Lines with output.NewJSONL,
// for the size comparison (and its speed, for reference).
func BenchmarkJSONL(b *testing.B) {
	tr := benchTrace()
	var size int64
	cpu0 := cpuStart(b)
	for b.Loop() {
		var cw countWriter
		if err := tr.Replay(output.NewJSONL(&cw)); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	perEvent(b, cpu0)
	b.ReportMetric(float64(size)/benchEvents, "bytes/event")
	b.ReportMetric(float64(size)/float64(len(benchFile())), "x-iot-size")
}
