package etl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/internal/testenv"
)

// largestFixture is the biggest shared ETL file (4.9 MB on disk, 23 MB of
// decompressed buffers, 179,474 records).
const largestFixture = "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl"

// BenchmarkReadLargest decodes the largest fixture end to end (index,
// decompression, record headers, per-CPU merge), one pass per iteration.
// MB/s counts decompressed buffer bytes.
func BenchmarkReadLargest(b *testing.B) {
	benchRead(b, Options{})
}

// BenchmarkReadLargestFileOrder is the same without the per-CPU merge.
func BenchmarkReadLargestFileOrder(b *testing.B) {
	benchRead(b, Options{Order: OrderFile})
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
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
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
	cpu := (cpuTime() - cpu0).Seconds()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	// The same rates per second of CPU time used by the process: on a
	// shared machine wall time also counts waiting for a core.
	if cpu > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/cpu, "records/cpu-s")
		b.ReportMetric(float64(total)*float64(b.N)/cpu/1e6, "MB/cpu-s")
	}
}
