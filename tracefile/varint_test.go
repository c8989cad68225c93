package tracefile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// varintValues are values of every bit length, around every boundary.
func varintValues() []uint64 {
	rng := rand.New(rand.NewPCG(5, 6))
	var vals []uint64
	for n := 0; n <= 64; n++ {
		for range 20 {
			v := rng.Uint64()
			if n < 64 {
				v &= 1<<n - 1
			}
			vals = append(vals, v, uint64(1)<<max(n-1, 0), uint64(1)<<max(n-1, 0)-1)
		}
	}
	return append(vals, math.MaxUint64)
}

// TestLEBMatchesStdlib decodes values of every encoded length, at every
// distance from the end of the data (the 8-byte fast path needs 8 bytes
// available), and malformed inputs, against encoding/binary.
func TestLEBMatchesStdlib(t *testing.T) {
	for _, v := range varintValues() {
		enc := binary.AppendUvarint(nil, v)
		if got := appendLEB(nil, v); !bytes.Equal(got, enc) || lebLen(v) != len(enc) {
			t.Fatalf("appendLEB(%d) = %x (len %d), want %x", v, got, lebLen(v), enc)
		}
		for pad := 0; pad <= 10; pad++ {
			b := append(append([]byte(nil), enc...), make([]byte, pad)...)
			for i := len(enc); i < len(b); i++ {
				b[i] = 0x80 | byte(i) // trailing bytes must not be read
			}
			d := ldec{cursor{b: b}}
			got := d.uvarint()
			if got != v || d.off != len(enc) || d.err != nil {
				t.Fatalf("%d encoded %x + %d bytes: got %d at offset %d (err %v)", v, enc, pad, got, d.off, d.err)
			}
			d = ldec{cursor{b: b}}
			got, next, ok := d.peek(b, 0)
			if !ok {
				got, next = d.uvarintAt(0)
			}
			if got != v || next != len(enc) || d.err != nil {
				t.Fatalf("%d encoded %x + %d bytes: peek/uvarintAt got %d, next %d (err %v)", v, enc, pad, got, next, d.err)
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
		d := ldec{cursor{b: b}}
		if v := d.uvarint(); d.err == nil {
			_, n := binary.Uvarint(b)
			t.Errorf("% x: decoded %d without error (stdlib n=%d)", b, v, n)
		}
	}
}

// refPrefix is the prefix varint encoding written out from its
// definition in docs/file-format.md, byte by byte.
func refPrefix(v uint64) []byte {
	if v >= 1<<56 {
		return binary.LittleEndian.AppendUint64([]byte{0}, v)
	}
	n := 1
	for v >= 1<<(7*n) {
		n++
	}
	out := make([]byte, n)
	x := v<<n | 1<<(n-1) // n−1 zero bits, a one, then the value
	for i := range out {
		out[i] = byte(x >> (8 * i))
	}
	return out
}

// checkPrefix decodes b (the whole input) with both decoder paths and
// checks the result against a reference decoder: the value and length
// when b starts with a complete varint, a clean error otherwise, and
// never a read past b.
func checkPrefix(t *testing.T, b []byte) {
	t.Helper()
	// Reference: the definition.
	var want uint64
	wantLen := 0
	switch {
	case len(b) == 0:
	case b[0] == 0:
		if len(b) >= 9 {
			want, wantLen = binary.LittleEndian.Uint64(b[1:9]), 9
		}
	default:
		n := bits.TrailingZeros8(b[0]) + 1
		if len(b) >= n {
			var x uint64
			for i := n - 1; i >= 0; i-- {
				x = x<<8 | uint64(b[i])
			}
			want, wantLen = x>>n, n
		}
	}
	// The slice's capacity ends where its length does: reading past the
	// end would panic.
	b = b[:len(b):len(b)]
	d := dec{cursor{b: b}}
	got := d.uvarint()
	if wantLen == 0 {
		if d.err == nil {
			t.Fatalf("% x: decoded %d without error", b, got)
		}
		return
	}
	if d.err != nil || got != want || d.off != wantLen {
		t.Fatalf("% x: got %d at offset %d (err %v), want %d at offset %d", b, got, d.off, d.err, want, wantLen)
	}
	d = dec{cursor{b: b}}
	if v, ok := d.fast(); ok && (v != want || d.off != wantLen) {
		t.Fatalf("% x: fast path got %d at offset %d, want %d at offset %d", b, v, d.off, want, wantLen)
	} else if !ok && d.off != 0 {
		t.Fatalf("% x: fast path consumed %d bytes and failed", b, d.off)
	}
	// peek and uvarintAt, at an offset into the data, agree with them.
	pre := append([]byte{0xaa, 0xbb, 0xcc}, b...)
	pre = pre[:len(pre):len(pre)]
	d = dec{cursor{b: pre}}
	v, next, ok := d.peek(pre, 3)
	if !ok {
		v, next = d.uvarintAt(3)
	}
	if d.err != nil || v != want || next != 3+wantLen {
		t.Fatalf("% x: peek/uvarintAt got %d, next %d (err %v), want %d, next %d", b, v, next, d.err, want, 3+wantLen)
	}
}

// TestPrefixVarint checks the prefix varint against its definition for
// values of every length, at every distance from the end of the data,
// truncated at every byte, and in overlong forms (which decode).
func TestPrefixVarint(t *testing.T) {
	for _, v := range varintValues() {
		enc := appendUvarint(nil, v)
		if ref := refPrefix(v); !bytes.Equal(enc, ref) || uvarintLen(v) != len(enc) {
			t.Fatalf("appendUvarint(%d) = %x (len %d), want %x", v, enc, uvarintLen(v), ref)
		}
		if v < 1<<56 && len(enc) != (bits.Len64(v|1)+6)/7 || v >= 1<<56 && len(enc) != 9 {
			t.Fatalf("%d: %d bytes, not the shortest form", v, len(enc))
		}
		for pad := 0; pad <= 9; pad++ {
			b := append(append([]byte(nil), enc...), make([]byte, pad)...)
			for i := len(enc); i < len(b); i++ {
				b[i] = byte(i*37 + 1)
			}
			checkPrefix(t, b)
			d := dec{cursor{b: b}}
			if got := d.uvarint(); got != v || d.off != len(enc) {
				t.Fatalf("%d encoded %x + %d bytes: got %d at offset %d", v, enc, pad, got, d.off)
			}
		}
		for cut := 0; cut < len(enc); cut++ {
			d := dec{cursor{b: enc[:cut:cut]}}
			if got := d.uvarint(); d.err == nil {
				t.Fatalf("%d cut to %x: decoded %d without error", v, enc[:cut], got)
			}
		}
		// Every longer form of v decodes to v.
		for n := len(enc) + 1; n <= 9 && v < 1<<56; n++ {
			var long []byte
			if n == 9 {
				long = binary.LittleEndian.AppendUint64([]byte{0}, v)
			} else {
				x := v<<n | 1<<(n-1)
				for i := 0; i < n; i++ {
					long = append(long, byte(x>>(8*i)))
				}
			}
			d := dec{cursor{b: long}}
			if got := d.uvarint(); got != v || d.off != n || d.err != nil {
				t.Fatalf("%d in %d bytes %x: got %d at %d (%v)", v, n, long, got, d.off, d.err)
			}
		}
	}
	// The examples of docs/file-format.md.
	for v, want := range map[uint64]string{0: "01", 5: "0b", 127: "ff", 128: "0202", 300: "b204", 1 << 56: "000000000000000001"} {
		if got := fmt.Sprintf("%x", appendUvarint(nil, v)); got != want {
			t.Errorf("%d: %s, the format document says %s", v, got, want)
		}
	}
	// Signed values through zigzag.
	for _, v := range []int64{0, -1, 1, math.MinInt64, math.MaxInt64, -64, 63, -65, 64} {
		d := dec{cursor{b: appendVarint(nil, v)}}
		if got := d.varint(); got != v || d.left() != 0 {
			t.Fatalf("varint %d: got %d", v, got)
		}
	}
}

// FuzzPrefixVarint: any input decodes as the definition says or fails
// cleanly, without reading past the data; and any value round-trips.
func FuzzPrefixVarint(f *testing.F) {
	for _, v := range boundaryValues() {
		f.Add(appendUvarint(nil, v), v)
	}
	f.Add([]byte{0}, uint64(0))
	f.Add([]byte{0x80, 1, 2, 3, 4, 5, 6}, uint64(1<<56))
	f.Fuzz(func(t *testing.T, b []byte, v uint64) {
		checkPrefix(t, b)
		enc := appendUvarint(b[:len(b):len(b)], v)
		d := dec{cursor{b: enc}}
		d.off = len(b)
		if got := d.uvarint(); got != v || d.left() != 0 || d.err != nil {
			t.Fatalf("%d encoded after %d bytes as %x: got %d, %d left, err %v", v, len(b), enc[len(b):], got, d.left(), d.err)
		}
	})
}
