package xpress

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"
)

// tokenWriter builds plain-LZ77 streams token by token, so that tests can
// ask for any literal run, match offset and match length.
type tokenWriter struct {
	out      []byte
	flagPos  int
	flags    uint32
	nflags   int
	halfByte int
}

func newTokenWriter() *tokenWriter {
	return &tokenWriter{out: []byte{0, 0, 0, 0}, halfByte: -1}
}

func (w *tokenWriter) flag(bit uint32) {
	if w.nflags == 32 {
		binary.LittleEndian.PutUint32(w.out[w.flagPos:], w.flags)
		w.flagPos = len(w.out)
		w.out = append(w.out, 0, 0, 0, 0)
		w.flags, w.nflags = 0, 0
	}
	w.flags = w.flags<<1 | bit
	w.nflags++
}

func (w *tokenWriter) literal(b byte) {
	w.flag(0)
	w.out = append(w.out, b)
}

// match writes a match of length >= 3 bytes at offset 1..8192.
func (w *tokenWriter) match(offset, length int) {
	w.flag(1)
	l := length - 3
	if l < 7 {
		w.out = binary.LittleEndian.AppendUint16(w.out, uint16((offset-1)<<3|l))
		return
	}
	w.out = binary.LittleEndian.AppendUint16(w.out, uint16((offset-1)<<3|7))
	l -= 7
	nib := min(l, 15)
	if w.halfByte < 0 {
		w.halfByte = len(w.out)
		w.out = append(w.out, byte(nib))
	} else {
		w.out[w.halfByte] |= byte(nib << 4)
		w.halfByte = -1
	}
	if l < 15 {
		return
	}
	l -= 15
	if l < 255 {
		w.out = append(w.out, byte(l))
		return
	}
	w.out = append(w.out, 255)
	if full := length - 3; full <= 0xFFFF {
		w.out = binary.LittleEndian.AppendUint16(w.out, uint16(full))
	} else {
		w.out = binary.LittleEndian.AppendUint16(w.out, 0)
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(full))
	}
}

// bytes ends the stream (the unused flag bits are 1: the end marker).
func (w *tokenWriter) bytes() []byte {
	n := w.nflags
	f := w.flags<<(32-uint(n)) | (1<<(32-uint(n)) - 1)
	if n == 0 {
		f = 0xFFFFFFFF
	}
	binary.LittleEndian.PutUint32(w.out[w.flagPos:], f)
	return w.out
}

// randomStream returns a valid stream of random tokens and the size it
// decompresses to. Offsets and lengths favour the boundaries of the
// decoder's copy strategies (offsets around 1, 8 and 16; lengths around
// 8, 16, 64 and the extended-length thresholds).
func randomStream(rng *rand.Rand, size int) ([]byte, int) {
	w := newTokenWriter()
	out := 0
	lengths := []int{3, 4, 7, 8, 9, 10, 15, 16, 17, 24, 25, 31, 32, 33, 63, 64, 65, 100, 276, 277, 278, 300, 1000, 65538, 70000}
	for out < size {
		if out == 0 || rng.Intn(3) == 0 {
			for n := 1 + rng.Intn(40); n > 0 && out < size; n-- {
				w.literal(byte(rng.Intn(4)))
				out++
			}
			continue
		}
		var offset int
		switch rng.Intn(4) {
		case 0:
			offset = 1 + rng.Intn(8)
		case 1:
			offset = 7 + rng.Intn(12)
		default:
			offset = 1 + rng.Intn(min(out, 8192))
		}
		offset = min(offset, out, 8192)
		length := lengths[rng.Intn(len(lengths))]
		if rng.Intn(2) == 0 {
			length = 3 + rng.Intn(40)
		}
		length = min(length, max(size-out, 3))
		w.match(offset, length)
		out += length
	}
	return w.bytes(), out
}

// same decompresses src into fresh buffers of size with both decoders and
// fails unless they agree on the count, the bytes and the error.
func same(t *testing.T, src []byte, size int) {
	t.Helper()
	a := make([]byte, size)
	b := make([]byte, size)
	na, erra := Decompress(a, src)
	nb, errb := decompressRef(b, src)
	if na != nb || (erra == nil) != (errb == nil) || (erra != nil && erra.Error() != errb.Error()) {
		t.Fatalf("%d-byte input into %d bytes: Decompress = %d, %v; reference = %d, %v", len(src), size, na, erra, nb, errb)
	}
	if !bytes.Equal(a[:na], b[:nb]) {
		i := 0
		for a[i] == b[i] {
			i++
		}
		t.Fatalf("%d-byte input into %d bytes: output differs from the reference at byte %d of %d", len(src), size, i, na)
	}
}

// TestDifferential compares the fast decoder with the simple reference
// on random token streams (every copy strategy, exact and larger
// destinations, destinations too small, truncated inputs) and on damaged
// real buffers.
func TestDifferential(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 400; i++ {
		size := []int{1, 5, 30, 100, 1000, 5000, 70000}[i%7] + rng.Intn(64)
		src, n := randomStream(rng, size)
		same(t, src, n)
		same(t, src, n+rng.Intn(40))
		same(t, src, max(n-1-rng.Intn(40), 0))
		same(t, src[:rng.Intn(len(src)+1)], n)
		// Flip a byte: whatever it decodes to, both must agree.
		bad := bytes.Clone(src)
		bad[rng.Intn(len(bad))] ^= byte(1 + rng.Intn(255))
		same(t, bad, n)
	}
	// Every cut of streams whose last tokens have the longest encodings,
	// so that each element ends right at the end of the input once.
	for _, tail := range [][2]int{{1, 70000}, {9, 300}, {20, 30}, {3, 5}} {
		w := newTokenWriter()
		for i := 0; i < 40; i++ {
			w.literal(byte(i))
		}
		for i := 0; i < 6; i++ {
			w.match(tail[0], tail[1])
			w.literal('x')
		}
		src := w.bytes()
		n := 40 + 6*(tail[1]+1)
		for cut := 0; cut <= len(src); cut++ {
			same(t, src[:cut], n)
		}
	}
	// Every destination size for streams of literal runs and matches at
	// the fast loop's limits: each one meets the end of the output once.
	for _, m := range [][3]int{{8, 8, 16}, {1, 8, 16}, {8, 16, 17}, {3, 1, 20}, {9, 3, 9}, {8, 20, 70}} {
		w := newTokenWriter()
		n := 0
		for n < 400 {
			for i := 0; i < m[0]; i++ {
				w.literal(byte(n + i))
			}
			w.match(m[1], m[2])
			n += m[0] + m[2]
		}
		src := w.bytes()
		for size := 0; size <= n+8; size++ {
			same(t, src, size)
		}
	}
	if testing.Short() {
		return
	}
	payloads, sizes := compressedBuffers(t)
	for i, p := range payloads {
		if i%7 != 0 {
			continue
		}
		same(t, p, sizes[i])
		bad := bytes.Clone(p)
		bad[rng.Intn(len(bad))] ^= 0x55
		same(t, bad, sizes[i])
		same(t, p[:len(p)/2], sizes[i])
		same(t, p, sizes[i]/2)
	}
}

// FuzzDifferential checks that the fast decoder and the reference agree
// on any input and destination size.
func FuzzDifferential(f *testing.F) {
	rng := rand.New(rand.NewSource(3))
	for _, size := range []int{40, 300, 3000} {
		src, n := randomStream(rng, size)
		f.Add(src, n)
	}
	f.Add([]byte("\xff\xff\xff\x1fabc\x17\x00\x0f\xff\x26\x01"), 300)
	f.Fuzz(func(t *testing.T, src []byte, size int) {
		if size < 0 || size > 1<<20 {
			return
		}
		same(t, src, size)
	})
}
