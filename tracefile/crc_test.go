package tracefile

import (
	"hash/crc32"
	"math/rand"
	"testing"
)

// TestCRCShift: the CRC of two strings joined is the first's shifted by
// the second's length, XOR the second's, for random strings and lengths.
func TestCRCShift(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		a := make([]byte, rng.Intn(100))
		b := make([]byte, rng.Intn(5000))
		rng.Read(a)
		rng.Read(b)
		whole := crc32.Checksum(append(append([]byte(nil), a...), b...), castagnoli)
		ca, cb := crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli)
		if got := crcShift(ca, int64(len(b))) ^ cb; got != whole {
			t.Fatalf("%d+%d bytes: %08x, want %08x", len(a), len(b), got, whole)
		}
	}
}

// TestRangeCRC: rangeCRC gives the CRC of every range of a region walked
// forward, whatever the ranges' lengths.
func TestRangeCRC(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	region := make([]byte, 20000)
	rng.Read(region)
	const base = 1000 // the region's file offset
	var c rangeCRC
	c.reset(base)
	pos := 0
	for pos < len(region)-1 {
		step := rng.Intn(300)
		if pos+step >= len(region) {
			break
		}
		c.discard(region[pos : pos+step])
		pos += step
		for k := 0; k < 3; k++ {
			end := pos + rng.Intn(len(region)-pos)
			fa := c.val
			fe := c.at(int64(base+end), region[pos:])
			want := crc32.Checksum(region[pos:end], castagnoli)
			if got := rangeOf(fa, fe, int64(end-pos)); got != want {
				t.Fatalf("range %d..%d: %08x, want %08x", pos, end, got, want)
			}
		}
	}
}
