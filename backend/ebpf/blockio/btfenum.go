package blockio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// vmlinuxBTF is where Linux publishes its BTF.
const vmlinuxBTF = "/sys/kernel/btf/vmlinux"

// memAllocStruct marks a kernel with bpf_mem_alloc (Linux 6.1+), which
// allocates the entries of maps without preallocation safely in tracing
// programs.
const memAllocStruct = "bpf_mem_alloc"

// BTF kinds (include/uapi/linux/btf.h) and the bytes each type record
// carries after its 12-byte header: fixed, and per vlen entry.
var btfKindExtra = [...]struct{ fixed, perEntry int }{
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

const (
	btfKindStruct = 4
	btfKindEnum   = 6
	btfKindEnum64 = 19
)

// btfFound is what scanBTF found: the values of the enumerators asked
// for, and which of the structs asked for the BTF has.
type btfFound struct {
	enums   map[string]uint64
	structs map[string]bool
}

// scanBTF scans a raw BTF blob (the kernel's /sys/kernel/btf/vmlinux)
// for the enumerators named in enums and the structs named in structs,
// without decoding the types: a walk over the type records that reads
// only the names of enums and structs, about 1 ms for the kernel's 5 MiB
// where decoding every type with cilium/ebpf's btf package took 90-440 ms
// on the 2-vCPU machine (issue 28), the largest single cost of the block
// tracer's start-up. The blob is data: every offset is checked against
// its size.
func scanBTF(raw []byte, enums, structs map[string]bool) (btfFound, error) {
	const hdrMin = 24
	if len(raw) < hdrMin {
		return btfFound{}, errors.New("btf: shorter than its header")
	}
	var bo binary.ByteOrder
	switch {
	case binary.LittleEndian.Uint16(raw) == 0xeb9f:
		bo = binary.LittleEndian
	case binary.BigEndian.Uint16(raw) == 0xeb9f:
		bo = binary.BigEndian
	default:
		return btfFound{}, errors.New("btf: bad magic")
	}
	hdrLen := uint64(bo.Uint32(raw[4:]))
	typeOff, typeLen := uint64(bo.Uint32(raw[8:])), uint64(bo.Uint32(raw[12:]))
	strOff, strLen := uint64(bo.Uint32(raw[16:])), uint64(bo.Uint32(raw[20:]))
	size := uint64(len(raw))
	if hdrLen < hdrMin || hdrLen > size || typeOff+typeLen > size-hdrLen || strOff+strLen > size-hdrLen {
		return btfFound{}, fmt.Errorf("btf: sections outside the %d bytes of the blob", size)
	}
	types := raw[hdrLen+typeOff : hdrLen+typeOff+typeLen]
	strs := raw[hdrLen+strOff : hdrLen+strOff+strLen]
	name := func(off uint32) ([]byte, bool) {
		if uint64(off) >= uint64(len(strs)) {
			return nil, false
		}
		s := strs[off:]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			return s[:i], true
		}
		return nil, false
	}
	out := btfFound{enums: map[string]uint64{}, structs: map[string]bool{}}
	for off := 0; off+12 <= len(types); {
		info := bo.Uint32(types[off+4:])
		kind, vlen := int(info>>24&0x1f), int(info&0xffff)
		if kind == 0 || kind >= len(btfKindExtra) {
			return out, fmt.Errorf("btf: type record at offset %d has unknown kind %d", off, kind)
		}
		x := btfKindExtra[kind]
		body := off + 12
		end := body + x.fixed + vlen*x.perEntry
		if end > len(types) {
			return out, fmt.Errorf("btf: type record at offset %d runs past the type section", off)
		}
		if kind == btfKindStruct && len(structs) != 0 {
			n, ok := name(bo.Uint32(types[off:]))
			if !ok {
				return out, fmt.Errorf("btf: struct at offset %d names no string", off)
			}
			if structs[string(n)] {
				out.structs[string(n)] = true
			}
		}
		if kind == btfKindEnum || kind == btfKindEnum64 {
			for e := body; e < end; e += x.perEntry {
				n, ok := name(bo.Uint32(types[e:]))
				if !ok {
					return out, fmt.Errorf("btf: enumerator at offset %d names no string", e)
				}
				if !enums[string(n)] { // no allocation: a map lookup by []byte
					continue
				}
				v := uint64(bo.Uint32(types[e+4:]))
				if kind == btfKindEnum64 {
					v |= uint64(bo.Uint32(types[e+8:])) << 32
				}
				if _, seen := out.enums[string(n)]; !seen {
					out.enums[string(n)] = v
				}
			}
		}
		off = end
	}
	return out, nil
}
