package tracefile

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestUvarintMatchesStdlib decodes values of every encoded length, at
// every distance from the end of the data (the 8-byte fast path needs 8
// bytes available), and malformed inputs, against encoding/binary.
func TestUvarintMatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var vals []uint64
	for bits := 0; bits <= 64; bits++ {
		for range 20 {
			v := rng.Uint64()
			if bits < 64 {
				v &= 1<<bits - 1
			}
			vals = append(vals, v, uint64(1)<<max(bits-1, 0))
		}
	}
	for _, v := range vals {
		enc := binary.AppendUvarint(nil, v)
		for pad := 0; pad <= 10; pad++ {
			b := append(append([]byte(nil), enc...), make([]byte, pad)...)
			for i := len(enc); i < len(b); i++ {
				b[i] = 0x80 | byte(i) // trailing bytes must not be read
			}
			d := dec{b: b}
			got := d.uvarint()
			if got != v || d.off != len(enc) || d.err != nil {
				t.Fatalf("%d encoded %x + %d bytes: got %d at offset %d (err %v)", v, enc, pad, got, d.off, d.err)
			}
		}
	}
	// Malformed: no terminator, 65+ bits, truncated.
	for _, b := range [][]byte{
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
		{0x80, 0x80},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		d := dec{b: b}
		if v := d.uvarint(); d.err == nil {
			_, n := binary.Uvarint(b)
			t.Errorf("% x: decoded %d without error (stdlib n=%d)", b, v, n)
		}
	}
}
