package script

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/resolve"
	"github.com/iotrace/iotrace/tracefile"
)

// benchEvents returns n file and block events from 100 processes (pids
// 1..100, so "pid == 7" keeps 1 %) and a mix of ops.
func benchEvents(n int) []event.Event {
	ops := []event.Op{event.OpRead, event.OpWrite, event.OpRead, event.OpOpen, event.OpClose, event.OpFlush, event.OpBlockRead, event.OpBlockWrite}
	evs := make([]event.Event, n)
	for i := range evs {
		e := event.New()
		e.ID = uint64(i + 1)
		e.Op = ops[i%len(ops)]
		e.Layer = e.Op.Layer()
		e.Pid = uint32(i%100 + 1)
		e.Tid = e.Pid
		e.Comm = "proc"
		e.Path = "/data/file"
		e.Time = int64(i) * 1000
		e.Duration = int64(i%977) * 1000
		e.Size, e.Bytes, e.Offset = 4096, 4096, int64(i)*4096
		e.Status = event.StatusOK
		evs[i] = e
	}
	return evs
}

const benchScript = `
io = count("pid", "op")
def on_event(e):
    io.add(e.pid, e.op)
def on_end():
    io.print(limit=3)
`

func benchRun(b *testing.B, src string, opts Options) {
	opts.Stdout = io.Discard
	s, err := Load("bench.star", []byte(src), opts)
	if err != nil {
		b.Fatal(err)
	}
	evs := benchEvents(1 << 16)
	if err := s.Begin(&event.Header{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		e := &evs[i&(len(evs)-1)]
		e.Time = int64(i) * 1000 // event time moves on, like a real trace
		if err := s.Event(e); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRates(b, float64(b.N), cpuTime()-cpu0)
	if err := s.End(&event.Trailer{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAggregatePidOp: one aggregation keyed by (pid, op), every
// event through the interpreter. Target: >= 1 M events/s on one core.
func BenchmarkAggregatePidOp(b *testing.B) { benchRun(b, benchScript, Options{}) }

// BenchmarkWhereRejects99: the same script with --where rejecting 99 % of
// the events before the interpreter. Target: >= 10 M events/s.
func BenchmarkWhereRejects99(b *testing.B) { benchRun(b, benchScript, Options{Where: "pid == 7"}) }

// BenchmarkFilterRejects99: the same with the script's FILTER doing it,
// with an every() timer running.
func BenchmarkFilterRejects99(b *testing.B) {
	benchRun(b, "FILTER = 'pid == 7 and latency > 0'\nevery('1s', lambda: None)\n"+benchScript, Options{})
}

// BenchmarkHistLog2: a latency histogram per op.
func BenchmarkHistLog2(b *testing.B) {
	benchRun(b, `
lat = hist_log2("op", unit="usecs")
def on_event(e):
    lat.add(e.op, e.latency // 1000)
`, Options{})
}

// BenchmarkHistLog2Percentiles: the same histogram in a script that asks
// for percentiles, so that every key keeps a sketch beside its buckets.
func BenchmarkHistLog2Percentiles(b *testing.B) {
	benchRun(b, `
lat = hist_log2("op", unit="usecs")
def on_event(e):
    lat.add(e.op, e.latency // 1000)
def on_end():
    lat.print(sort="p99")
`, Options{})
}

// benchTraceEvents is the size of the .iot trace BenchmarkIOTFile reads:
// $IOTRACE_BENCH_EVENTS, or 1,000,000.
func benchTraceEvents(b *testing.B) int {
	if s := os.Getenv("IOTRACE_BENCH_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("IOTRACE_BENCH_EVENTS=%q", s)
		}
		return n
	}
	return 1_000_000
}

// writeBenchTrace writes n benchEvents-style events as an .iot file.
func writeBenchTrace(b *testing.B, n int) string {
	path := filepath.Join(b.TempDir(), "bench.iot")
	w, err := tracefile.Create(path, tracefile.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Begin(&event.Header{Source: event.SourceEBPF, OS: "linux"}); err != nil {
		b.Fatal(err)
	}
	evs := benchEvents(1 << 16)
	for i := 0; i < n; i++ {
		e := evs[i&(len(evs)-1)]
		e.ID = uint64(i + 1)
		e.Time = int64(i) * 1000
		if err := w.Event(&e); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.End(&event.Trailer{End: int64(n) * 1000}); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkIOTFile: the pipeline of iotrace run --input over an .iot
// trace (read, decode, resolve, filter, script), one op = the whole file;
// events/s counts the file's events.
func BenchmarkIOTFile(b *testing.B) {
	n := benchTraceEvents(b)
	path := writeBenchTrace(b, n)
	for _, c := range []struct{ name, where string }{{"all", ""}, {"where-rejects-99", "pid == 7"}} {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				s, err := Load("bench.star", []byte(benchScript), Options{Stdout: io.Discard, Where: c.where})
				if err != nil {
					b.Fatal(err)
				}
				// What input.Open does for an .iot file: read and resolve.
				r, err := tracefile.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Run(context.Background(), resolve.NewResolver(s)); err != nil {
					b.Fatal(err)
				}
				r.Close()
				if s.Seen() != uint64(n) {
					b.Fatalf("script saw %d events, want %d", s.Seen(), n)
				}
			}
			reportRates(b, float64(n)*float64(b.N), cpuTime()-cpu0)
		})
	}
}

// reportRates reports events per wall-clock second and, where measured,
// per CPU second of the process (robust on a loaded machine).
func reportRates(b *testing.B, events float64, cpuNs int64) {
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	if cpuNs > 0 {
		b.ReportMetric(events/(float64(cpuNs)/1e9), "events/cpu-s")
	}
}
