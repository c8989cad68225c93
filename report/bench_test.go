package report

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/tracefile"
)

// BenchmarkReportEvent measures the report's cost per event (no decoding)
// on a syscall-heavy synthetic trace: ns/op is ns per event. Run with
// -cpu 1 for the one-core figure.
func BenchmarkReportEvent(b *testing.B) {
	tr := synth.Trace(synth.Options{Seed: 1, Events: 200_000, Resolved: true})
	evs := tr.Events
	r := New(Options{})
	r.Begin(&tr.Header)
	for i := range tr.Facts {
		r.Fact(&tr.Facts[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Event(&evs[i%len(evs)]) // the report does not change events
	}
	b.StopTimer()
	r.End(&event.Trailer{})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
}

// BenchmarkReportEventHeatmap is BenchmarkReportEvent with heatmaps on.
func BenchmarkReportEventHeatmap(b *testing.B) {
	tr := synth.Trace(synth.Options{Seed: 1, Events: 200_000, Resolved: true})
	evs := tr.Events
	r := New(Options{Heatmap: true})
	r.Begin(&tr.Header)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Event(&evs[i%len(evs)]) // the report does not change events
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
}

// TestWriteBenchTrace writes the synthetic .iot trace the end-to-end
// benchmark in docs/benchmarks.md reads; it runs only when
// IOTRACE_BENCH_IOT names the file to write (IOTRACE_BENCH_EVENTS events,
// 10 million by default; format version IOTRACE_BENCH_VERSION, the
// current one by default).
func TestWriteBenchTrace(t *testing.T) {
	path := os.Getenv("IOTRACE_BENCH_IOT")
	if path == "" {
		t.Skip("set IOTRACE_BENCH_IOT=FILE to write the benchmark trace")
	}
	n, version := envInt(t, "IOTRACE_BENCH_EVENTS", 10_000_000), envInt(t, "IOTRACE_BENCH_VERSION", 0)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := tracefile.NewWriter(f, tracefile.WriterOptions{Version: version})
	if err := synth.Generate(synth.Options{Seed: 1, Events: n, BlockPercent: 10}, w); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// envInt returns the integer in environment variable name, def when it is
// not set.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// BenchmarkReportIOT reads a 1-million-event .iot trace through input (as
// iotrace report does: decode, resolve, report) per iteration; the
// Mevents/s metric is the end-to-end rate. Run with -cpu 1.
func BenchmarkReportIOT(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "bench.iot")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := tracefile.NewWriter(f, tracefile.WriterOptions{})
	if err := synth.Generate(synth.Options{Seed: 1, Events: n, BlockPercent: 10}, w); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in, err := input.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r := New(Options{})
		if err := in.Run(context.Background(), r); err != nil {
			b.Fatal(err)
		}
		in.Close()
		_ = r.Result()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
}
