package parquetfile

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestRawZstd: the stored-block frames decode with a zstd decoder to the
// bytes they hold, at every block boundary.
func TestRawZstd(t *testing.T) {
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 1000, 128<<10 - 1, 128 << 10, 128<<10 + 1, 3 << 17, 1 << 20} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		got, err := d.DecodeAll(appendRawZstd(nil, b), nil)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%d bytes: decoded %d bytes, %v", n, len(got), err)
		}
	}
}
