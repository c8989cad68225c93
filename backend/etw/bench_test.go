package etw

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/cputime"
	"github.com/iotrace/iotrace/internal/testenv"
)

// discard is a sink that keeps nothing.
type discard struct{ events, facts int }

func (d *discard) Begin(*event.Header) error { return nil }
func (d *discard) Event(*event.Event) error  { d.events++; return nil }
func (d *discard) Fact(*event.Fact) error    { d.facts++; return nil }
func (d *discard) End(*event.Trailer) error  { return nil }

// largest describes the largest fixture: its path, decompressed bytes and
// records.
func largest(b *testing.B) (path string, bytes int64, records int) {
	b.Helper()
	path = filepath.Join(testenv.ETLDir(b), fixtureWin8)
	r := openLargest(b, path, noCache)
	defer r.Close()
	for _, bi := range r.Buffers() {
		bytes += int64(bi.Used())
	}
	if _, err := r.Read(context.Background(), func(*record.Record) error { records++; return nil }); err != nil {
		b.Fatal(err)
	}
	return path, bytes, records
}

func openLargest(b *testing.B, path string, opts etl.Options) *etl.Reader {
	b.Helper()
	r, err := etl.Open(path, opts)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// noCache are reader options without the buffer cache: every pass reads
// and decompresses the file.
var noCache = etl.Options{CacheBudget: -1}

// report adds records/s (wall) and records/cpu-s: the process's CPU time,
// which on a shared machine does not count waiting for a core.
func report(b *testing.B, records int, cpu0 time.Duration) {
	n := float64(records) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "records/s")
	if cpu := (cputime.Process() - cpu0).Seconds(); cpu > 0 {
		b.ReportMetric(n/cpu, "records/cpu-s")
	}
}

// BenchmarkPipelineLargest reads the largest fixture the way `iotrace
// print`/`convert`/`report` do (ReadFile): open and index the file, two
// passes (names, then events), decoding, pairing, resolving and
// delivering to a sink. MB/s counts the decompressed ETL bytes of the
// file once; records/s the file's records once (each is read twice).
func BenchmarkPipelineLargest(b *testing.B) {
	path, bytes, n := largest(b)
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		var d discard
		if err := ReadFile(context.Background(), path, Options{}, &d); err != nil {
			b.Fatal(err)
		}
	}
	report(b, n, cpu0)
}

// BenchmarkPipelineNoCacheLargest is the same with the reader's buffer
// cache off: the second pass reads and decompresses the file again.
func BenchmarkPipelineNoCacheLargest(b *testing.B) {
	path, bytes, n := largest(b)
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		var d discard
		r := openLargest(b, path, noCache)
		if err := Run(context.Background(), FileRecords(r), Options{}, &d); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	report(b, n, cpu0)
}

// BenchmarkRawReaderLargest is the reader alone on the same file: one
// pass with a no-op callback, reading and decompressing every buffer
// (cache off), for the ratio in docs/benchmarks.md.
func BenchmarkRawReaderLargest(b *testing.B) {
	path, bytes, n := largest(b)
	r := openLargest(b, path, noCache)
	defer r.Close()
	benchReads(b, r, bytes, n)
}

// BenchmarkCachedReaderLargest is a pass of the reader with every buffer
// in its cache (a second pass): the merge and the record headers only.
func BenchmarkCachedReaderLargest(b *testing.B) {
	path, bytes, n := largest(b)
	r := openLargest(b, path, etl.Options{})
	defer r.Close()
	if _, err := r.Read(context.Background(), func(*record.Record) error { return nil }); err != nil {
		b.Fatal(err)
	}
	benchReads(b, r, bytes, n)
}

// benchReads times b.N passes of r with a no-op callback over a file of
// size bytes holding n records.
func benchReads(b *testing.B, r *etl.Reader, bytes int64, n int) {
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		if _, err := r.Read(context.Background(), func(*record.Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	report(b, n, cpu0)
}

// BenchmarkPass1Largest is the first pass of a file alone, as Run makes
// it (the reader, filling its cache, plus the facts the pipeline
// collects), on a reader that has read nothing yet.
func BenchmarkPass1Largest(b *testing.B) {
	path, bytes, n := largest(b)
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		r := openLargest(b, path, etl.Options{})
		var d discard
		p := NewPipeline(&d, Options{})
		p.setMode(modeCollect)
		p.first.kept = true
		if err := FileRecords(r).(keptRecords).EachKept(context.Background(), p.first.keep, p.Push); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	report(b, n, cpu0)
}

// BenchmarkDecodeLargest is the decoders alone (one pass, records
// already read): the cost iotrace adds per record on top of the reader.
func BenchmarkDecodeLargest(b *testing.B) {
	path, bytes, _ := largest(b)
	r := openLargest(b, path, noCache)
	defer r.Close()
	var recs []record.Record
	var payload []byte
	if _, err := r.Read(context.Background(), func(rec *record.Record) error {
		c := *rec
		payload = append(payload, rec.UserData...)
		c.UserData = payload[len(payload)-len(rec.UserData):]
		recs = append(recs, c)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	// Re-slice after the last append so every payload aliases the final array.
	off := 0
	for i := range recs {
		n := len(recs[i].UserData)
		recs[i].UserData = payload[off : off+n]
		off += n
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		var d discard
		p := NewPipeline(&d, Options{})
		for j := range recs {
			if err := p.Push(&recs[j]); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.Close(nil); err != nil {
			b.Fatal(err)
		}
	}
	report(b, len(recs), cpu0)
}

// BenchmarkPipelineStacks reads the largest fixture (the PerfView trace,
// 12,280 StackWalk records and 562 inline stacks) with its stacks joined
// to their events, and BenchmarkPipelineNoStacks with them left aside
// (Options.NoStacks), side by side for docs/benchmarks.md.
func BenchmarkPipelineStacks(b *testing.B) { benchStacks(b, false) }

// BenchmarkPipelineNoStacks: see BenchmarkPipelineStacks.
func BenchmarkPipelineNoStacks(b *testing.B) { benchStacks(b, true) }

func benchStacks(b *testing.B, off bool) {
	path, bytes, n := largest(b)
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		var d discard
		if err := ReadFile(context.Background(), path, Options{NoStacks: off}, &d); err != nil {
			b.Fatal(err)
		}
	}
	report(b, n, cpu0)
}
