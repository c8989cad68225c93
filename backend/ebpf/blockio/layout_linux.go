package blockio

import (
	"fmt"
	"sort"

	"github.com/cilium/ebpf/btf"

	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
)

// layoutFields are the enumerators kernelFacts reads, and what each sets.
func layoutFields(l *OpfLayout, pinned *uint32) map[string]func(v uint64) {
	return map[string]func(v uint64){
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
		"BIO_PAGE_PINNED":     func(v uint64) { *pinned = uint32(v) },
	}
}

// kernelInfo is what the block tracer reads from the kernel's BTF.
type kernelInfo struct {
	// layout is how this kernel encodes bi_opf.
	layout OpfLayout
	// pinned is the bit of bi_flags that is BIO_PAGE_PINNED (0xff when
	// the kernel has no such flag: before 6.5).
	pinned uint32
}

// kernelFacts reads kernelInfo from kernel BTF. Values not found keep
// their 6.x defaults; the error says which were missing. It reads the raw
// BTF (rawbtf), and decodes the kernel's types (decoded: a btf.Cache's
// Kernel, the parse the program loads need, which runs meanwhile) only
// when that fails.
func kernelFacts(raw *rawbtf.Shared, decoded func() (*btf.Spec, error)) (kernelInfo, error) {
	k := kernelInfo{layout: DefaultOpfLayout(), pinned: 0xff}
	want := layoutFields(&k.layout, &k.pinned)
	names := make(map[string]bool, len(want))
	for n := range want {
		names[n] = true
	}
	var found map[string]uint64
	s, release, err := raw.Get()
	if err == nil {
		found, err = s.EnumValues(names)
		release()
	}
	if err != nil {
		spec, derr := decoded()
		if derr != nil {
			return k, fmt.Errorf("kernel BTF: %w", derr)
		}
		if found, err = decodedEnums(spec, names); err != nil {
			return k, err
		}
	}
	for n, v := range found {
		if v < 64 {
			want[n](v)
			delete(want, n)
		}
	}
	delete(want, "BIO_PAGE_PINNED") // optional
	delete(want, "REQ_OP_ZONE_APPEND")
	if len(want) != 0 {
		missing := make([]string, 0, len(want))
		for k := range want {
			missing = append(missing, k)
		}
		sort.Strings(missing)
		return k, fmt.Errorf("kernel BTF lacks %v; using Linux 6.x values for them", missing)
	}
	return k, nil
}

// vmlinuxBTF is where Linux publishes its BTF.
const vmlinuxBTF = rawbtf.VmlinuxPath

// decodedEnums finds the enumerators named in enums among spec's decoded
// types (slow: it decodes the types until all are found; the raw BTF's
// EnumValues, about 1-3 ms for the kernel's 5 MiB, is what kernelFacts
// tries first: decoding every type with cilium/ebpf's btf package took
// 90-440 ms on the 2-vCPU machine, issue 28).
func decodedEnums(spec *btf.Spec, enums map[string]bool) (map[string]uint64, error) {
	out := map[string]uint64{}
	for typ, err := range spec.All() {
		if err != nil {
			return out, fmt.Errorf("kernel BTF: %w", err)
		}
		e, ok := typ.(*btf.Enum)
		if !ok {
			continue
		}
		for _, v := range e.Values {
			if _, seen := out[v.Name]; enums[v.Name] && !seen {
				out[v.Name] = v.Value
			}
		}
		if len(out) == len(enums) {
			break
		}
	}
	return out, nil
}
