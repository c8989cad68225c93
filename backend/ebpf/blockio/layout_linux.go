package blockio

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
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
	// memAlloc: the kernel allocates the elements of hash maps without
	// preallocation with bpf_mem_alloc (struct bpf_mem_alloc, 6.1+),
	// which is safe in tracing programs in any context; before, the
	// verifier warned that such maps are unsafe in tracing programs.
	memAlloc bool
}

// kernelFacts reads kernelInfo from kernel BTF. Values not found keep
// their 6.x defaults; the error says which were missing. It scans the raw
// BTF (scanBTF), and decodes spec's types only when that scan fails.
func kernelFacts(spec *btf.Spec) (kernelInfo, error) {
	k := kernelInfo{layout: DefaultOpfLayout(), pinned: 0xff}
	want := layoutFields(&k.layout, &k.pinned)
	names := make(map[string]bool, len(want))
	for n := range want {
		names[n] = true
	}
	structs := map[string]bool{memAllocStruct: true}
	var found btfFound
	raw, release, err := readKernelBTF()
	if err == nil {
		found, err = scanBTF(raw, names, structs)
		release()
	}
	if err != nil {
		if found, err = decodedBTF(spec, names, structs); err != nil {
			return k, err
		}
	}
	k.memAlloc = found.structs[memAllocStruct]
	for n, v := range found.enums {
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

// readKernelBTF maps the kernel's raw BTF read-only (5 MB that sysfs
// would otherwise copy out a page per read(2): tens of ms of start-up);
// it reads the file when mapping fails. release unmaps it.
func readKernelBTF() (raw []byte, release func(), err error) {
	f, err := os.Open(vmlinuxBTF)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() > 0 && st.Size() < 1<<30 {
		if m, merr := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE); merr == nil {
			return m, func() { _ = unix.Munmap(m) }, nil
		}
	}
	raw, err = io.ReadAll(f)
	return raw, func() {}, err
}

// decodedBTF finds the enumerators named in enums among spec's decoded
// types (slow: it decodes the types until all are found), and the structs
// named in structs.
func decodedBTF(spec *btf.Spec, enums, structs map[string]bool) (btfFound, error) {
	out := btfFound{enums: map[string]uint64{}, structs: map[string]bool{}}
	for n := range structs {
		var s *btf.Struct
		if err := spec.TypeByName(n, &s); err == nil {
			out.structs[n] = true
		}
	}
	for typ, err := range spec.All() {
		if err != nil {
			return out, fmt.Errorf("kernel BTF: %w", err)
		}
		e, ok := typ.(*btf.Enum)
		if !ok {
			continue
		}
		for _, v := range e.Values {
			if _, seen := out.enums[v.Name]; enums[v.Name] && !seen {
				out.enums[v.Name] = v.Value
			}
		}
		if len(out.enums) == len(enums) {
			break
		}
	}
	return out, nil
}
