// Package rawbtf reads a few facts from a raw BTF blob, the kernel's
// /sys/kernel/btf/vmlinux, without decoding its types: which types a name
// has, a BTF tracepoint's prototype, enumerators' values. iotrace needs
// them before it creates its maps (they choose what the programs are
// specialised with), and cilium/ebpf's parse of the kernel's ~150,000
// types, which the program loads need anyway, takes 20-40 ms of start-up:
// with this walk (1-3 ms) the maps are created while that parse runs
// beside (issue 28). Hand-written because the library's parse is all or
// nothing. The blob is data: every offset, string and type ID is checked.
package rawbtf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Kind is a BTF type kind (include/uapi/linux/btf.h).
type Kind uint8

// The kinds this package tells apart.
const (
	KindInt       Kind = 1
	KindPtr       Kind = 2
	KindStruct    Kind = 4
	KindUnion     Kind = 5
	KindEnum      Kind = 6
	KindTypedef   Kind = 8
	KindVolatile  Kind = 9
	KindConst     Kind = 10
	KindRestrict  Kind = 11
	KindFuncProto Kind = 13
	KindTypeTag   Kind = 18
	KindEnum64    Kind = 19
)

// recordSize is, per kind, the bytes a type record carries after its
// 12-byte header: fixed, and per vlen entry.
var recordSize = [...]struct{ fixed, perEntry int }{
	1:  {4, 0},  // INT
	2:  {0, 0},  // PTR
	3:  {12, 0}, // ARRAY
	4:  {0, 12}, // STRUCT
	5:  {0, 12}, // UNION
	6:  {0, 8},  // ENUM
	7:  {0, 0},  // FWD
	8:  {0, 0},  // TYPEDEF
	9:  {0, 0},  // VOLATILE
	10: {0, 0},  // CONST
	11: {0, 0},  // RESTRICT
	12: {0, 0},  // FUNC
	13: {0, 8},  // FUNC_PROTO
	14: {4, 0},  // VAR
	15: {0, 12}, // DATASEC
	16: {0, 0},  // FLOAT
	17: {4, 0},  // DECL_TAG
	18: {0, 0},  // TYPE_TAG
	19: {0, 12}, // ENUM64
}

// TypeID is a type's ID in the blob; 0 is void.
type TypeID uint32

// Spec is a parsed blob: its sections and where each type's record is.
type Spec struct {
	be    bool // big-endian (a blob of another machine)
	types []byte
	strs  []byte
	offs  []uint32 // offs[id-1]: the offset of type id's record in types
}

// Parse checks raw's header and walks its type records once, noting where
// each begins. raw is not copied: it must outlive the Spec.
func Parse(raw []byte) (*Spec, error) {
	const hdrMin = 24
	if len(raw) < hdrMin {
		return nil, errors.New("btf: shorter than its header")
	}
	var bo binary.ByteOrder
	switch {
	case binary.LittleEndian.Uint16(raw) == 0xeb9f:
		bo = binary.LittleEndian
	case binary.BigEndian.Uint16(raw) == 0xeb9f:
		bo = binary.BigEndian
	default:
		return nil, errors.New("btf: bad magic")
	}
	hdrLen := uint64(bo.Uint32(raw[4:]))
	typeOff, typeLen := uint64(bo.Uint32(raw[8:])), uint64(bo.Uint32(raw[12:]))
	strOff, strLen := uint64(bo.Uint32(raw[16:])), uint64(bo.Uint32(raw[20:]))
	size := uint64(len(raw))
	if hdrLen < hdrMin || hdrLen > size || typeOff+typeLen > size-hdrLen || strOff+strLen > size-hdrLen {
		return nil, fmt.Errorf("btf: sections outside the %d bytes of the blob", size)
	}
	s := &Spec{be: bo == binary.BigEndian, types: raw[hdrLen+typeOff : hdrLen+typeOff+typeLen], strs: raw[hdrLen+strOff : hdrLen+strOff+strLen]}
	// A record is at least 12 bytes: that bounds the index by the blob.
	s.offs = make([]uint32, 0, len(s.types)/16)
	for off := 0; off+12 <= len(s.types); {
		kind, vlen := s.kindAt(off)
		if kind == 0 || int(kind) >= len(recordSize) {
			return nil, fmt.Errorf("btf: type %d (offset %d) has unknown kind %d", len(s.offs)+1, off, kind)
		}
		x := recordSize[kind]
		end := off + 12 + x.fixed + vlen*x.perEntry
		if end > len(s.types) {
			return nil, fmt.Errorf("btf: type %d (offset %d) runs past the type section", len(s.offs)+1, off)
		}
		s.offs = append(s.offs, uint32(off))
		off = end
	}
	return s, nil
}

// Types is the number of types (the largest ID).
func (s *Spec) Types() int { return len(s.offs) }

// u32 reads the type section's 32-bit word at off (a concrete call the
// compiler inlines: the interface's Uint32 was most of a walk's time).
func (s *Spec) u32(off int) uint32 {
	if s.be {
		return binary.BigEndian.Uint32(s.types[off:])
	}
	return binary.LittleEndian.Uint32(s.types[off:])
}

func (s *Spec) kindAt(off int) (Kind, int) {
	info := s.u32(off + 4)
	return Kind(info >> 24 & 0x1f), int(info & 0xffff)
}

// record returns type id's offset, kind and vlen; ok is false for void or
// an ID the blob does not have.
func (s *Spec) record(id TypeID) (off int, kind Kind, vlen int, ok bool) {
	if id == 0 || int(id) > len(s.offs) {
		return 0, 0, 0, false
	}
	off = int(s.offs[id-1])
	kind, vlen = s.kindAt(off)
	return off, kind, vlen, true
}

// str returns the string at off in the string section.
func (s *Spec) str(off uint32) ([]byte, bool) {
	if uint64(off) >= uint64(len(s.strs)) {
		return nil, false
	}
	b := s.strs[off:]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i], true
	}
	return nil, false
}

// Kind returns type id's kind (0 for void or an unknown ID).
func (s *Spec) Kind(id TypeID) Kind {
	_, k, _, _ := s.record(id)
	return k
}

// Name returns type id's name ("" when it has none).
func (s *Spec) Name(id TypeID) string {
	off, _, _, ok := s.record(id)
	if !ok {
		return ""
	}
	n, _ := s.str(s.u32(int(off)))
	return string(n)
}

// ByName returns the first type of that kind and name.
func (s *Spec) ByName(kind Kind, name string) (TypeID, bool) {
	for i, off := range s.offs {
		if k, _ := s.kindAt(int(off)); k != kind {
			continue
		}
		if n, ok := s.str(s.u32(int(off))); ok && string(n) == name {
			return TypeID(i + 1), true
		}
	}
	return 0, false
}

// Target returns the type a pointer, typedef or qualifier refers to.
func (s *Spec) Target(id TypeID) (TypeID, bool) {
	off, k, _, ok := s.record(id)
	switch {
	case !ok:
		return 0, false
	case k == KindPtr || k == KindTypedef || k == KindVolatile || k == KindConst || k == KindRestrict || k == KindTypeTag:
		return TypeID(s.u32(off + 8)), true
	}
	return 0, false
}

// Underlying skips typedefs and qualifiers (volatile, const, restrict,
// type tags): the type id stands for. A chain longer than the blob's
// types is a loop: 0.
func (s *Spec) Underlying(id TypeID) TypeID {
	for range len(s.offs) + 1 {
		switch s.Kind(id) {
		case KindTypedef, KindVolatile, KindConst, KindRestrict, KindTypeTag:
			id, _ = s.Target(id)
		default:
			return id
		}
	}
	return 0
}

// PointerTo returns what id (under its typedefs and qualifiers) points
// to, under the target's own typedefs and qualifiers; ok is false when id
// is not a pointer.
func (s *Spec) PointerTo(id TypeID) (TypeID, bool) {
	id = s.Underlying(id)
	if s.Kind(id) != KindPtr {
		return 0, false
	}
	t, _ := s.Target(id)
	return s.Underlying(t), true
}

// IntSize returns the byte size of id (under its typedefs and
// qualifiers) when it is an integer.
func (s *Spec) IntSize(id TypeID) (uint32, bool) {
	off, k, _, ok := s.record(s.Underlying(id))
	if !ok || k != KindInt {
		return 0, false
	}
	return s.u32(off + 8), true
}

// Params returns the parameter types of a function prototype.
func (s *Spec) Params(id TypeID) ([]TypeID, bool) {
	off, k, vlen, ok := s.record(s.Underlying(id))
	if !ok || k != KindFuncProto {
		return nil, false
	}
	out := make([]TypeID, vlen)
	for i := range out {
		out[i] = TypeID(s.u32(off + 12 + 8*i + 4))
	}
	return out, true
}

// TracepointArgs returns the argument types of the BTF tracepoint name,
// as the kernel declares it: typedef btf_trace_<name>, a pointer to a
// function prototype whose first parameter (the probe's data) is left
// out. ok is false when the blob has no such tracepoint.
func (s *Spec) TracepointArgs(name string) ([]TypeID, bool) {
	td, ok := s.ByName(KindTypedef, "btf_trace_"+name)
	if !ok {
		return nil, false
	}
	proto, ok := s.PointerTo(td)
	if !ok {
		return nil, false
	}
	params, ok := s.Params(proto)
	if !ok || len(params) == 0 {
		return nil, false
	}
	return params[1:], true
}

// EnumValues returns the values of the enumerators named in want (of any
// enum; the first one found of each name).
func (s *Spec) EnumValues(want map[string]bool) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, off := range s.offs {
		kind, vlen := s.kindAt(int(off))
		if kind != KindEnum && kind != KindEnum64 {
			continue
		}
		x := recordSize[kind]
		for e := int(off) + 12; e < int(off)+12+vlen*x.perEntry; e += x.perEntry {
			n, ok := s.str(s.u32(e))
			if !ok {
				return out, fmt.Errorf("btf: enumerator at offset %d names no string", e)
			}
			if !want[string(n)] { // no allocation: a map lookup by []byte
				continue
			}
			v := uint64(s.u32(e + 4))
			if kind == KindEnum64 {
				v |= uint64(s.u32(e+8)) << 32
			}
			if _, seen := out[string(n)]; !seen {
				out[string(n)] = v
			}
		}
	}
	return out, nil
}
