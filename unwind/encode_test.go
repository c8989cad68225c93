package unwind

import (
	"debug/elf"
	"reflect"
	"testing"
)

// TestEncodeRoundTrip: a table reads back as it was written; a flipped
// byte anywhere is refused.
func TestEncodeRoundTrip(t *testing.T) {
	a := newCFI(0x10000, "zR", defaultInit)
	a.fde(0x1000, 0x100, []byte{cfaAdvanceLoc | 1, cfaDefCFAOffset, 16, cfaOffset | 6, 2, cfaAdvanceLoc | 3, cfaDefCFARegister, 6})
	a.fde(0x3000, 0x100, []byte{cfaUndefined, 16})
	tab := a.table(t)
	b, err := tab.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back Table
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, tab) {
		t.Fatalf("read back %+v, want %+v", back, tab)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		if err := new(Table).UnmarshalBinary(c); err == nil {
			t.Errorf("byte %d flipped: read without error", i)
		}
	}
}

// BenchmarkBuildLibc is the time to build libc's table from its file.
func BenchmarkBuildLibc(b *testing.B) {
	f, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	for b.Loop() {
		if _, err := Build(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeLibc is the time to read libc's table back from its
// encoding (a cache file).
func BenchmarkDecodeLibc(b *testing.B) {
	f, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	tab, err := Build(f)
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := tab.MarshalBinary()
	for b.Loop() {
		var t Table
		if err := t.UnmarshalBinary(enc); err != nil {
			b.Fatal(err)
		}
	}
}
