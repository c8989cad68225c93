package etl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/internal/cputime"
	"github.com/iotrace/iotrace/internal/testenv"
)

// largestFixture is the biggest shared ETL file (4.9 MB on disk, 23 MB of
// decompressed buffers, 179,474 records).
const largestFixture = "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl"

// BenchmarkReadLargest decodes the largest fixture end to end (reading,
// decompression, record headers, per-CPU merge), one pass per iteration,
// without the buffer cache. MB/s counts decompressed buffer bytes.
func BenchmarkReadLargest(b *testing.B) {
	benchRead(b, Options{CacheBudget: -1})
}

// BenchmarkReadLargestFileOrder is the same without the per-CPU merge.
func BenchmarkReadLargestFileOrder(b *testing.B) {
	benchRead(b, Options{Order: OrderFile, CacheBudget: -1})
}

// BenchmarkReadLargestCached is a pass with every buffer in the cache
// (what a second pass costs): record headers and the merge only.
func BenchmarkReadLargestCached(b *testing.B) {
	benchRead(b, Options{})
}

func benchRead(b *testing.B, opts Options) {
	path := filepath.Join(testenv.ETLDir(b), largestFixture)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	r, err := NewReader(f, st.Size(), opts)
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, bi := range r.Buffers() {
		total += int64(bi.Used())
	}
	if opts.CacheBudget >= 0 {
		// Fill the cache.
		if _, err := r.Read(context.Background(), func(*record.Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	var n int
	for i := 0; i < b.N; i++ {
		n = 0
		var sum uint64
		if _, err := r.Read(context.Background(), func(rec *record.Record) error {
			n++
			sum += uint64(len(rec.UserData))
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	cpu := (cputime.Process() - cpu0).Seconds()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	// The same rates per second of CPU time used by the process: on a
	// shared machine wall time also counts waiting for a core.
	if cpu > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/cpu, "records/cpu-s")
		b.ReportMetric(float64(total)*float64(b.N)/cpu/1e6, "MB/cpu-s")
	}
}
