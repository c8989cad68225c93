package blockio

import (
	"fmt"
	"sort"

	"github.com/cilium/ebpf/btf"

	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
)

// layoutFields are the enumerators kernelLayout reads, and what each sets.
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

// kernelLayout reads from kernel BTF how this kernel encodes bi_opf and
// which bit of bi_flags is BIO_PAGE_PINNED (0xff when the kernel has no
// such flag: before 6.5). Values not found keep their 6.x defaults; the
// error says which were missing. It scans the raw BTF (enumValues), and
// decodes the kernel's types (decoded: a btf.Cache's Kernel, the parse
// the program loads need, which runs meanwhile) only when that scan
// fails.
func kernelLayout(decoded func() (*btf.Spec, error)) (OpfLayout, uint32, error) {
	l := DefaultOpfLayout()
	pinned := uint32(0xff)
	want := layoutFields(&l, &pinned)
	names := make(map[string]bool, len(want))
	for n := range want {
		names[n] = true
	}
	var found map[string]uint64
	raw, release, err := readKernelBTF()
	if err == nil {
		found, err = enumValues(raw, names)
		release()
	}
	if err != nil {
		spec, derr := decoded()
		if derr != nil {
			return l, pinned, fmt.Errorf("kernel BTF: %w", derr)
		}
		if found, err = enumsDecoded(spec, names); err != nil {
			return l, pinned, err
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
		return l, pinned, fmt.Errorf("kernel BTF lacks %v; using Linux 6.x values for them", missing)
	}
	return l, pinned, nil
}

// vmlinuxBTF is where Linux publishes its BTF.
const vmlinuxBTF = rawbtf.VmlinuxPath

// readKernelBTF maps the kernel's raw BTF (rawbtf.ReadKernel).
func readKernelBTF() (raw []byte, release func(), err error) { return rawbtf.ReadKernel() }

// enumValues scans a raw BTF blob for the enumerators named in want
// (rawbtf: about 1 ms for the kernel's 5 MiB where decoding every type
// with cilium/ebpf's btf package took 90-440 ms on the 2-vCPU machine).
func enumValues(raw []byte, want map[string]bool) (map[string]uint64, error) {
	s, err := rawbtf.Parse(raw)
	if err != nil {
		return nil, err
	}
	return s.EnumValues(want)
}

// enumsDecoded finds the enumerators named in want among spec's decoded
// types (slow: it decodes the types until all are found).
func enumsDecoded(spec *btf.Spec, want map[string]bool) (map[string]uint64, error) {
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
			if _, seen := out[v.Name]; want[v.Name] && !seen {
				out[v.Name] = v.Value
			}
		}
		if len(out) == len(want) {
			break
		}
	}
	return out, nil
}
