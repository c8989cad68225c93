package etw

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// discard is a sink that keeps nothing.
type discard struct{ events, facts int }

func (d *discard) Begin(*event.Header) error { return nil }
func (d *discard) Event(*event.Event) error  { d.events++; return nil }
func (d *discard) Fact(*event.Fact) error    { d.facts++; return nil }
func (d *discard) End(*event.Trailer) error  { return nil }

func openLargest(b *testing.B) (*etl.Reader, int64, int) {
	b.Helper()
	r, err := etl.Open(filepath.Join(testenv.ETLDir(b), fixtureWin8), etl.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var bytes int64
	for _, bi := range r.Buffers() {
		bytes += int64(bi.Used())
	}
	n := 0
	if _, err := r.Read(context.Background(), func(*record.Record) error { n++; return nil }); err != nil {
		b.Fatal(err)
	}
	return r, bytes, n
}

// BenchmarkPipelineLargest reads the largest fixture the way `iotrace
// print`/`convert` do: two passes over the file (names, then events),
// decoding, pairing, resolving and delivering to a sink. MB/s counts the
// decompressed ETL bytes of the file once; records/s the file's records
// once (each is read twice).
func BenchmarkPipelineLargest(b *testing.B) {
	r, bytes, n := openLargest(b)
	defer r.Close()
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var d discard
		if err := Run(context.Background(), FileRecords(r), Options{}, &d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkRawReaderLargest is E's reader alone on the same file, one
// pass with a no-op callback, for the ratio in docs/benchmarks.md.
func BenchmarkRawReaderLargest(b *testing.B) {
	r, bytes, n := openLargest(b)
	defer r.Close()
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Read(context.Background(), func(*record.Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkPass1Largest is the first pass of a file alone (the reader
// plus the facts the pipeline collects): with the reader's figure it
// shows what pass 1 costs on top of reading.
func BenchmarkPass1Largest(b *testing.B) {
	r, bytes, n := openLargest(b)
	defer r.Close()
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var d discard
		p := NewPipeline(&d, Options{})
		p.mode = modeCollect
		if err := FileRecords(r).Each(context.Background(), p.Push); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDecodeLargest is the decoders alone (one pass, records
// already read): the cost iotrace adds per record on top of the reader.
func BenchmarkDecodeLargest(b *testing.B) {
	r, bytes, _ := openLargest(b)
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
	b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
