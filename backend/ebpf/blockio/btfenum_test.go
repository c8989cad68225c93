package blockio

import (
	"encoding/binary"
	"os"
	"testing"
)

// btfBlob builds a little-endian BTF blob: an INT, an anonymous ENUM
// with the given enumerators, an ENUM64 with one, and a STRUCT.
func btfBlob(names []string, vals []uint32) []byte {
	le := binary.LittleEndian
	strs := []byte{0}
	str := func(s string) uint32 {
		off := uint32(len(strs))
		strs = append(append(strs, s...), 0)
		return off
	}
	var types []byte
	u32 := func(v ...uint32) {
		for _, x := range v {
			types = le.AppendUint32(types, x)
		}
	}
	u32(str("int"), 1<<24, 4, 32)
	u32(0, 6<<24|uint32(len(names)), 4)
	for i, n := range names {
		u32(str(n), vals[i])
	}
	u32(str("e64"), 19<<24|1, 8, str("BIG"), 5, 1)
	u32(str("s"), 4<<24|1, 4, str("m"), 1, 0)
	hdr := make([]byte, 24)
	le.PutUint16(hdr, 0xeb9f)
	hdr[2] = 1
	le.PutUint32(hdr[4:], 24)
	le.PutUint32(hdr[8:], 0)
	le.PutUint32(hdr[12:], uint32(len(types)))
	le.PutUint32(hdr[16:], uint32(len(types)))
	le.PutUint32(hdr[20:], uint32(len(strs)))
	return append(append(hdr, types...), strs...)
}

// TestScanBTF: the enumerators asked for are found with their values
// (the first of two of one name), the structs asked for that exist are
// found, and nothing else.
func TestScanBTF(t *testing.T) {
	raw := btfBlob([]string{"A", "B_PINNED", "A"}, []uint32{3, 7, 9})
	got, err := scanBTF(raw, map[string]bool{"A": true, "B_PINNED": true, "BIG": true, "NONE": true}, map[string]bool{"s": true, "t": true, "A": true})
	if err != nil {
		t.Fatal(err)
	}
	e := got.enums
	if len(e) != 3 || e["A"] != 3 || e["B_PINNED"] != 7 || e["BIG"] != 1<<32|5 {
		t.Errorf("enums %v", e)
	}
	if len(got.structs) != 1 || !got.structs["s"] {
		t.Errorf("structs %v, want s alone", got.structs)
	}
	// Cut anywhere: an error or a subset, never a panic.
	for n := 0; n < len(raw); n++ {
		_, _ = scanBTF(raw[:n], map[string]bool{"A": true}, map[string]bool{"s": true})
	}
	bad := append([]byte(nil), raw...)
	bad[24+7] = 31 // the INT's kind byte: an unknown kind
	if _, err := scanBTF(bad, map[string]bool{"A": true}, nil); err == nil {
		t.Error("unknown kind accepted")
	}
}

func FuzzScanBTF(f *testing.F) {
	f.Add(btfBlob([]string{"A", "B"}, []uint32{1, 2}))
	f.Add([]byte{0x9f, 0xeb, 1, 0, 24, 0, 0, 0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = scanBTF(raw, map[string]bool{"A": true, "B": true}, map[string]bool{"s": true})
	})
}

func BenchmarkScanBTFKernel(b *testing.B) {
	raw, err := os.ReadFile(vmlinuxBTF)
	if err != nil {
		b.Skip(err)
	}
	want := map[string]bool{"REQ_OP_READ": true, "BIO_PAGE_PINNED": true}
	structs := map[string]bool{memAllocStruct: true}
	for i := 0; i < b.N; i++ {
		if _, err := scanBTF(raw, want, structs); err != nil {
			b.Fatal(err)
		}
	}
}
