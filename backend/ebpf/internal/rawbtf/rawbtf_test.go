package rawbtf

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/btf"
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

func TestEnumValues(t *testing.T) {
	raw := btfBlob([]string{"A", "B_PINNED", "A"}, []uint32{3, 7, 9})
	s, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.EnumValues(map[string]bool{"A": true, "B_PINNED": true, "BIG": true, "NONE": true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["A"] != 3 || got["B_PINNED"] != 7 || got["BIG"] != 1<<32|5 {
		t.Errorf("got %v", got)
	}
	if s.Types() != 4 || s.Kind(4) != KindStruct || s.Name(4) != "s" || s.Kind(5) != 0 || s.Name(0) != "" {
		t.Errorf("types %d, kind of 4 %d, name %q", s.Types(), s.Kind(4), s.Name(4))
	}
	bad := append([]byte(nil), raw...)
	bad[24+7] = 31 // the INT's kind byte: an unknown kind
	if _, err := Parse(bad); err == nil {
		t.Error("unknown kind accepted")
	}
}

// TestCutAnywhere: a blob cut at any byte is an error or a smaller
// spec, never a panic, and every method works on what was parsed.
func TestCutAnywhere(t *testing.T) {
	raw := btfBlob([]string{"A", "B"}, []uint32{1, 2})
	for n := 0; n < len(raw); n++ {
		exercise(raw[:n])
	}
}

// exercise parses raw and calls every lookup on every type ID (and one
// past the last).
func exercise(raw []byte) {
	s, err := Parse(raw)
	if err != nil {
		return
	}
	_, _ = s.EnumValues(map[string]bool{"A": true, "B": true})
	_, _ = s.TracepointArgs("x")
	for id := TypeID(0); int(id) <= s.Types()+1; id++ {
		s.Kind(id)
		s.Name(id)
		s.Target(id)
		s.Underlying(id)
		s.PointerTo(id)
		s.IntSize(id)
		s.Params(id)
		s.ByName(s.Kind(id), s.Name(id))
	}
}

func FuzzParse(f *testing.F) {
	f.Add(btfBlob([]string{"A", "B"}, []uint32{1, 2}))
	f.Add([]byte{0x9f, 0xeb, 1, 0, 24, 0, 0, 0})
	f.Add(marshal(f, tracepoint("t", &btf.Pointer{Target: &btf.Struct{Name: "folio"}})))
	f.Fuzz(func(t *testing.T, raw []byte) { exercise(raw) })
}

// tracepoint is the typedef btf_trace_<name> of a kernel whose tracepoint
// name takes args.
func tracepoint(name string, args ...btf.Type) btf.Type {
	params := []btf.FuncParam{{Name: "__data", Type: &btf.Pointer{Target: &btf.Void{}}}}
	for _, a := range args {
		params = append(params, btf.FuncParam{Type: a})
	}
	return &btf.Typedef{Name: "btf_trace_" + name, Type: &btf.Pointer{Target: &btf.FuncProto{Return: &btf.Void{}, Params: params}}}
}

// marshal writes types as a raw blob with cilium/ebpf's encoder.
func marshal(tb testing.TB, types ...btf.Type) []byte {
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// TestTracepointArgs: a tracepoint's arguments as cilium/ebpf encodes
// them, through typedefs and qualifiers.
func TestTracepointArgs(t *testing.T) {
	u64 := &btf.Typedef{Name: "u64", Type: &btf.Int{Name: "unsigned long long", Size: 8}}
	folio := &btf.Struct{Name: "folio"}
	raw := marshal(t,
		tracepoint("evict", &btf.Pointer{Target: &btf.Const{Type: folio}}),
		tracepoint("flat", &btf.Pointer{Target: &btf.Void{}}, u64, &btf.Volatile{Type: &btf.Int{Name: "int", Size: 4}}),
		&btf.Typedef{Name: "btf_trace_notfunc", Type: u64},
	)
	s, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	args, ok := s.TracepointArgs("evict")
	if !ok || len(args) != 1 {
		t.Fatalf("evict: %v %v", args, ok)
	}
	if p, ok := s.PointerTo(args[0]); !ok || s.Kind(p) != KindStruct || s.Name(p) != "folio" {
		t.Errorf("evict's argument points to %q (kind %d)", s.Name(p), s.Kind(p))
	}
	args, ok = s.TracepointArgs("flat")
	if !ok || len(args) != 3 {
		t.Fatalf("flat: %v %v", args, ok)
	}
	if p, ok := s.PointerTo(args[0]); !ok || p != 0 {
		t.Errorf("flat's first argument: %d %v, want a void pointer", p, ok)
	}
	if n, ok := s.IntSize(args[1]); !ok || n != 8 {
		t.Errorf("flat's second argument: size %d %v", n, ok)
	}
	if n, ok := s.IntSize(args[2]); !ok || n != 4 {
		t.Errorf("flat's third argument: size %d %v", n, ok)
	}
	if _, ok := s.TracepointArgs("notfunc"); ok {
		t.Error("a typedef of an integer taken for a tracepoint")
	}
	if _, ok := s.TracepointArgs("absent"); ok {
		t.Error("an absent tracepoint found")
	}
}

// TestUnderlyingLoop: a typedef chain that loops ends.
func TestUnderlyingLoop(t *testing.T) {
	le := binary.LittleEndian
	var types []byte
	for _, v := range []uint32{0, 8 << 24, 2, 0, 8 << 24, 1} { // 1 -> 2 -> 1
		types = le.AppendUint32(types, v)
	}
	hdr := make([]byte, 24)
	le.PutUint16(hdr, 0xeb9f)
	le.PutUint32(hdr[4:], 24)
	le.PutUint32(hdr[12:], uint32(len(types)))
	le.PutUint32(hdr[16:], uint32(len(types)))
	le.PutUint32(hdr[20:], 1)
	s, err := Parse(append(append(hdr, types...), 0))
	if err != nil {
		t.Fatal(err)
	}
	if u := s.Underlying(1); u != 0 {
		t.Errorf("Underlying of a loop: %d, want 0", u)
	}
}
