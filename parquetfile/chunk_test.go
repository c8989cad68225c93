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

// TestDicts: equal strings get one index whether or not they share their
// bytes; integer dictionaries give every value its index, grow past their
// first table, and give up past the limit.
func TestDicts(t *testing.T) {
	var sd strDict
	a := "/usr/lib/libc.so.6"
	b := string([]byte(a)) // same content, other bytes
	vals := []string{a, b, "x", a, "", "x", b, ""}
	idx := sd.build(vals, nil)
	if len(sd.vals) != 3 {
		t.Fatalf("dictionary %q", sd.vals)
	}
	for i, v := range vals {
		if sd.vals[idx[i]] != v {
			t.Fatalf("value %d: index %d is %q, want %q", i, idx[i], sd.vals[idx[i]], v)
		}
	}
	// Many distinct pointers: the pointer table grows.
	var many []string
	for i := range 5000 {
		many = append(many, string(rune('a'+i%26))+string(rune('a'+i/26%26)))
	}
	idx = sd.build(many, idx)
	for i, v := range many {
		if sd.vals[idx[i]] != v {
			t.Fatalf("many %d: %q want %q", i, sd.vals[idx[i]], v)
		}
	}
	if len(sd.vals) != 26*26 {
		t.Errorf("%d distinct, want %d", len(sd.vals), 26*26)
	}

	var id intDict
	var ints []int64
	for i := range 10000 {
		ints = append(ints, int64(i%3000)*-7919)
	}
	iidx, ok := id.build(ints, nil, 5000)
	if !ok || len(id.vals) != 3000 {
		t.Fatalf("ok %v, %d values", ok, len(id.vals))
	}
	for i, v := range ints {
		if id.vals[iidx[i]] != v {
			t.Fatalf("int %d: %d want %d", i, id.vals[iidx[i]], v)
		}
	}
	if _, ok := id.build(ints, iidx, 100); ok {
		t.Error("3000 distinct values within a limit of 100")
	}
}
