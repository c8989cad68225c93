package blockio

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// kernelLayout reads from kernel BTF how this kernel encodes bi_opf and
// which bit of bi_flags is BIO_PAGE_PINNED (0xff when the kernel has no
// such flag: before 6.5). Values not found keep their 6.x defaults; the
// error says which were missing.
func kernelLayout(spec *btf.Spec) (OpfLayout, uint32, error) {
	l := DefaultOpfLayout()
	pinned := uint32(0xff)
	want := map[string]func(v uint64){
		"REQ_OP_READ":         func(v uint64) { l.Read = uint32(v) },
		"REQ_OP_WRITE":        func(v uint64) { l.Write = uint32(v) },
		"REQ_OP_FLUSH":        func(v uint64) { l.Flush = uint32(v) },
		"REQ_OP_DISCARD":      func(v uint64) { l.Discard = uint32(v) },
		"REQ_OP_SECURE_ERASE": func(v uint64) { l.SecureErase = uint32(v) },
		"REQ_OP_WRITE_ZEROES": func(v uint64) { l.WriteZeroes = uint32(v) },
		"REQ_OP_ZONE_APPEND":  func(v uint64) { l.ZoneAppend = uint32(v) },
		"__REQ_SYNC":          func(v uint64) { l.Sync = 1 << v },
		"__REQ_META":          func(v uint64) { l.Meta = 1 << v },
		"__REQ_FUA":           func(v uint64) { l.FUA = 1 << v },
		"__REQ_PREFLUSH":      func(v uint64) { l.Preflush = 1 << v },
		"__REQ_RAHEAD":        func(v uint64) { l.Readahead = 1 << v },
		"__REQ_FAILFAST_DEV":  func(v uint64) { l.OpMask = 1<<v - 1 }, // first flag bit = REQ_OP_BITS
		"BIO_PAGE_PINNED":     func(v uint64) { pinned = uint32(v) },
	}
	for typ, err := range spec.All() {
		if err != nil {
			return l, pinned, fmt.Errorf("kernel BTF: %w", err)
		}
		e, ok := typ.(*btf.Enum)
		if !ok {
			continue
		}
		for _, v := range e.Values {
			if set, ok := want[v.Name]; ok && v.Value < 64 {
				set(v.Value)
				delete(want, v.Name)
			}
		}
		if len(want) == 0 {
			break
		}
	}
	delete(want, "BIO_PAGE_PINNED") // optional
	delete(want, "REQ_OP_ZONE_APPEND")
	if len(want) != 0 {
		missing := make([]string, 0, len(want))
		for k := range want {
			missing = append(missing, k)
		}
		return l, pinned, fmt.Errorf("kernel BTF lacks %v; using Linux 6.x values for them", missing)
	}
	return l, pinned, nil
}
