package xpress

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The two examples of [MS-XCA] §3.1 (plain LZ77).
func TestSpecExamples(t *testing.T) {
	alpha := []byte("abcdefghijklmnopqrstuvwxyz")
	c1 := append(mustHex(t, "3f000000"), alpha...)
	dst := make([]byte, len(alpha))
	n, err := Decompress(dst, c1)
	if err != nil || !bytes.Equal(dst[:n], alpha) {
		t.Fatalf("alphabet: got %q, %v", dst[:n], err)
	}

	want := bytes.Repeat([]byte("abc"), 100)
	c2 := mustHex(t, "ffffff1f6162631700")
	c2 = append(c2, mustHex(t, "0fff2601")...)
	dst = make([]byte, len(want))
	n, err = Decompress(dst, c2)
	if err != nil || !bytes.Equal(dst[:n], want) {
		t.Fatalf("abc×100: got %d bytes %q, %v", n, dst[:n], err)
	}
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	inputs := [][]byte{
		nil,
		{1},
		[]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
		bytes.Repeat([]byte{0}, 70000),              // 32-bit extended length
		bytes.Repeat([]byte("xy"), 400),             // 16-bit extended length
		bytes.Repeat([]byte("0123456789abcdef"), 3), // 4-bit + 8-bit lengths
	}
	for _, n := range []int{31, 32, 33, 64, 1000, 65536} {
		b := make([]byte, n)
		rng.Read(b)
		inputs = append(inputs, b)
		// Compressible: random words from a small alphabet.
		c := make([]byte, n)
		for i := range c {
			c[i] = "ETW\x00\x01"[rng.Intn(5)]
		}
		inputs = append(inputs, c)
	}
	for i, in := range inputs {
		comp := Compress(nil, in)
		dst := make([]byte, len(in))
		n, err := Decompress(dst, comp)
		if err != nil {
			t.Fatalf("input %d (%d bytes): %v", i, len(in), err)
		}
		if !bytes.Equal(dst[:n], in) {
			t.Fatalf("input %d (%d bytes): round trip differs (got %d bytes)", i, len(in), n)
		}
	}
}

func TestCorrupt(t *testing.T) {
	data := bytes.Repeat([]byte("hello, world "), 50)
	comp := Compress(nil, data)
	dst := make([]byte, len(data))

	// Too small a destination.
	if _, err := Decompress(dst[:len(dst)-1], comp); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("short destination: err = %v, want ErrShortBuffer", err)
	}
	// A match before the start of the output.
	bad := mustHex(t, "ffffffff1000")
	var ce *CorruptError
	if _, err := Decompress(dst, bad); !errors.As(err, &ce) || ce.Field != "match offset" || ce.Offset != 4 {
		t.Errorf("bad offset: err = %v", err)
	}
	// Truncated flag word.
	if _, err := Decompress(dst, []byte{0, 0}); !errors.As(err, &ce) || ce.Field != "flags" {
		t.Errorf("truncated flags: err = %v", err)
	}
	// Truncated match.
	if _, err := Decompress(dst, mustHex(t, "ffffff7f61")); err != nil {
		t.Errorf("literal then end: %v", err)
	}
	if _, err := Decompress(dst, mustHex(t, "00000040"+"61"+"00")); !errors.As(err, &ce) || ce.Field != "match" {
		t.Errorf("truncated match: err = %v", err)
	}
	// Every truncation of a valid stream fails cleanly or yields a prefix.
	for cut := 0; cut < len(comp); cut++ {
		n, _ := Decompress(dst, comp[:cut])
		if !bytes.Equal(dst[:n], data[:n]) {
			t.Fatalf("cut at %d: output is not a prefix of the data", cut)
		}
	}
}

func FuzzDecompress(f *testing.F) {
	f.Add([]byte("\x3f\x00\x00\x00abcdefghijklmnopqrstuvwxyz"), 26)
	f.Add([]byte("\xff\xff\xff\x1fabc\x17\x00\x0f\xff\x26\x01"), 300)
	f.Add(Compress(nil, bytes.Repeat([]byte("ab"), 1000)), 2000)
	f.Fuzz(func(t *testing.T, src []byte, size int) {
		if size < 0 || size > 1<<20 {
			return
		}
		dst := make([]byte, size)
		n, err := Decompress(dst, src)
		if n < 0 || n > size {
			t.Fatalf("n = %d outside [0, %d] (err %v)", n, size, err)
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("abcabcabcabcabc"))
	f.Add(bytes.Repeat([]byte{0}, 5000))
	f.Fuzz(func(t *testing.T, in []byte) {
		comp := Compress(nil, in)
		dst := make([]byte, len(in))
		n, err := Decompress(dst, comp)
		if err != nil || !bytes.Equal(dst[:n], in) || n != len(in) {
			t.Fatalf("round trip of %d bytes: n=%d err=%v", len(in), n, err)
		}
	})
}
