package xpress

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/internal/cputime"
	"github.com/iotrace/iotrace/internal/testenv"
)

// compressedBuffers returns the compressed payloads of the largest shared
// ETL file and their decompressed sizes: real XPRESS data written by
// Windows. (It walks the 0x48-byte buffer headers itself so that this
// package does not depend on the ETL reader.)
func compressedBuffers(tb testing.TB) (payloads [][]byte, sizes []int) {
	path := filepath.Join(testenv.ETLDir(tb), "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl")
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	for off := 0; off+0x48 <= len(b); {
		size := int(binary.LittleEndian.Uint32(b[off:]))
		saved := int(binary.LittleEndian.Uint32(b[off+4:]))
		flags := binary.LittleEndian.Uint16(b[off+0x34:])
		if size < 0x48 || off+size > len(b) {
			tb.Fatalf("bad buffer at %#x", off)
		}
		if flags&0x40 != 0 {
			payloads = append(payloads, b[off+0x48:off+size])
			sizes = append(sizes, saved-0x48)
		}
		off += size
	}
	return payloads, sizes
}

// TestRealBuffers decompresses every compressed buffer of a real ETL file
// to exactly its recorded size, and checks that re-compressing the output
// with Compress round-trips.
func TestRealBuffers(t *testing.T) {
	payloads, sizes := compressedBuffers(t)
	if len(payloads) != 359 {
		t.Fatalf("%d compressed buffers, want 359", len(payloads))
	}
	dst := make([]byte, 1<<16)
	for i, p := range payloads {
		n, err := Decompress(dst[:sizes[i]], p)
		if err != nil || n != sizes[i] {
			t.Fatalf("buffer %d: n=%d want %d, err %v", i, n, sizes[i], err)
		}
		// The first record of every ETL buffer starts with a marker whose
		// flag byte has 0x80 set.
		if dst[3]&0x80 == 0 {
			t.Fatalf("buffer %d: decompressed data does not start with a record marker: % x", i, dst[:4])
		}
		if i%50 == 0 {
			c := Compress(nil, dst[:n])
			out := make([]byte, n)
			if m, err := Decompress(out, c); err != nil || m != n || string(out) != string(dst[:n]) {
				t.Fatalf("buffer %d: re-compression round trip failed: %v", i, err)
			}
		}
	}
}

// BenchmarkDecompress decompresses the 359 compressed buffers of the
// largest shared ETL file; MB/s counts decompressed bytes.
func BenchmarkDecompress(b *testing.B) {
	payloads, sizes := compressedBuffers(b)
	total := 0
	for _, s := range sizes {
		total += s
	}
	dst := make([]byte, 1<<16)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		for j, p := range payloads {
			if _, err := Decompress(dst[:sizes[j]], p); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The rate per second of CPU time used by the process: on a shared
	// machine wall time also counts waiting for a core.
	if cpu := (cputime.Process() - cpu0).Seconds(); cpu > 0 {
		b.ReportMetric(float64(total)*float64(b.N)/cpu/1e6, "MB/cpu-s")
	}
}

// BenchmarkCopyBaseline copies the same number of bytes as
// BenchmarkDecompress produces (memmove from one 64 KiB buffer to
// another): the ceiling to compare the decompressor against in one run.
func BenchmarkCopyBaseline(b *testing.B) {
	_, sizes := compressedBuffers(b)
	total := 0
	for _, s := range sizes {
		total += s
	}
	src := make([]byte, 1<<16)
	dst := make([]byte, 1<<16)
	b.SetBytes(int64(total))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range sizes {
			copy(dst[:s], src[:s])
		}
	}
}
