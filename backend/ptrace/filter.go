package ptrace

import (
	"fmt"
	"slices"

	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
)

// Instruction is one classic BPF instruction (struct sock_filter).
type Instruction struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// Classic BPF opcodes the filter uses, and the seccomp values.
const (
	bpfLdWAbs  = 0x20 // BPF_LD|BPF_W|BPF_ABS: A = seccomp_data[K]
	bpfJeqK    = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	bpfJgtK    = 0x25 // BPF_JMP|BPF_JGT|BPF_K
	bpfJgeK    = 0x35 // BPF_JMP|BPF_JGE|BPF_K
	bpfRetK    = 0x06 // BPF_RET|BPF_K
	retAllow   = 0x7fff0000
	retTrace   = 0x7ff00000
	offNr      = 0 // struct seccomp_data: int nr
	offArch    = 4 // __u32 arch
	x32Bit     = 0x40000000
	auditAMD64 = 0xc000003e
	auditARM64 = 0xc00000b7
)

// auditArch is the AUDIT_ARCH_* value seccomp reports for each
// architecture's native calls.
var auditArch = map[string]uint32{"amd64": auditAMD64, "arm64": auditARM64}

// TracedCalls returns the system call numbers the filter sends to the
// tracer on goarch: every call of the table whose op is selected (all
// when ops is empty), and those that change names whatever the
// selection, as the eBPF backend does. The numbers are sorted.
func TracedCalls(goarch string, ops []event.Op) []uint32 {
	var nrs []uint32
	for i := range systable.Table {
		r := &systable.Table[i]
		if len(ops) > 0 && r.Flags&systable.KeepNames == 0 && !slices.Contains(ops, r.Op) {
			continue
		}
		if nr, ok := r.Number(goarch); ok {
			nrs = append(nrs, uint32(nr))
		}
	}
	slices.Sort(nrs)
	return slices.Compact(nrs)
}

// Filter builds the seccomp program: SECCOMP_RET_TRACE for the calls
// nrs of goarch, and for any call of another ABI (i386 and x32 on
// amd64: the tracer counts them, it does not decode them), and
// SECCOMP_RET_ALLOW for every other call. The numbers are searched as a
// balanced tree of ranges, so an untraced call runs a handful of
// instructions, not one per traced call.
func Filter(goarch string, nrs []uint32) ([]Instruction, error) {
	arch, ok := auditArch[goarch]
	if !ok {
		return nil, fmt.Errorf("no seccomp architecture for %s", goarch)
	}
	prog := []Instruction{
		{Code: bpfLdWAbs, K: offArch},
		{Code: bpfJeqK, Jt: 1, K: arch},
		{Code: bpfRetK, K: retTrace},
		{Code: bpfLdWAbs, K: offNr},
	}
	if goarch == "amd64" {
		prog = append(prog, Instruction{Code: bpfJgeK, Jf: 1, K: x32Bit}, Instruction{Code: bpfRetK, K: retTrace})
	}
	tree, err := rangeTree(ranges(nrs))
	if err != nil {
		return nil, err
	}
	return append(prog, tree...), nil
}

// nrRange is a run of consecutive traced numbers.
type nrRange struct{ lo, hi uint32 }

// ranges turns sorted numbers into runs.
func ranges(nrs []uint32) []nrRange {
	var rs []nrRange
	for _, n := range nrs {
		if len(rs) > 0 && rs[len(rs)-1].hi+1 == n {
			rs[len(rs)-1].hi = n
			continue
		}
		rs = append(rs, nrRange{n, n})
	}
	return rs
}

// rangeTree returns the code that, with the number in A, returns
// SECCOMP_RET_TRACE when it is in one of rs (sorted) and
// SECCOMP_RET_ALLOW otherwise: the middle range is tested, then the
// ranges below it or above it. Every jump is forward.
func rangeTree(rs []nrRange) ([]Instruction, error) {
	if len(rs) == 0 {
		return []Instruction{{Code: bpfRetK, K: retAllow}}, nil
	}
	m := len(rs) / 2
	left, err := rangeTree(rs[:m])
	if err != nil {
		return nil, err
	}
	right, err := rangeTree(rs[m+1:])
	if err != nil {
		return nil, err
	}
	if len(left)+1 > 255 {
		return nil, fmt.Errorf("seccomp filter: a jump of %d instructions, more than classic BPF's 255", len(left)+1)
	}
	code := []Instruction{
		{Code: bpfJgeK, Jt: 0, Jf: 2, K: rs[m].lo},                    // below the range: left
		{Code: bpfJgtK, Jt: uint8(len(left) + 1), Jf: 0, K: rs[m].hi}, // above it: right
		{Code: bpfRetK, K: retTrace},
	}
	code = append(code, left...)
	return append(code, right...), nil
}

// run executes prog on a call of number nr and architecture arch, as the
// kernel would (the instructions Filter emits only): its return value.
func run(prog []Instruction, nr, arch uint32) (uint32, error) {
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case bpfLdWAbs:
			switch in.K {
			case offNr:
				a = nr
			case offArch:
				a = arch
			default:
				return 0, fmt.Errorf("instruction %d: load of offset %d", pc, in.K)
			}
		case bpfJeqK, bpfJgtK, bpfJgeK:
			taken := in.Code == bpfJeqK && a == in.K || in.Code == bpfJgtK && a > in.K || in.Code == bpfJgeK && a >= in.K
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfRetK:
			return in.K, nil
		default:
			return 0, fmt.Errorf("instruction %d: opcode %#x", pc, in.Code)
		}
	}
	return 0, fmt.Errorf("the program ran off its end")
}
