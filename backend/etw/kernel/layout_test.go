package kernel

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestScanW: scanW, four units at a time, finds what a scan unit by unit
// finds, whatever the offset, the length (odd ones too) and where zero
// bytes and units fall.
func TestScanW(t *testing.T) {
	plain := func(b []byte, off int) ([]byte, int) {
		for j := off; j+1 < len(b); j += 2 {
			if b[j] == 0 && b[j+1] == 0 {
				return b[off:j], j + 2
			}
		}
		end := off + (len(b)-off)&^1
		return b[off:end], len(b)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 200000; i++ {
		b := make([]byte, rng.IntN(40))
		for k := range b {
			switch rng.IntN(4) {
			case 0:
				b[k] = 0
			case 1:
				b[k] = 0x80
			case 2:
				b[k] = 1
			default:
				b[k] = byte(rng.Uint32())
			}
		}
		off := 0
		if len(b) > 0 {
			off = rng.IntN(len(b) + 1)
		}
		s, next := scanW(b, off)
		ws, wnext := plain(b, off)
		if !bytes.Equal(s, ws) || next != wnext || len(s) != len(ws) {
			t.Fatalf("scanW(% x, %d) = % x, %d; want % x, %d", b, off, s, next, ws, wnext)
		}
	}
}
