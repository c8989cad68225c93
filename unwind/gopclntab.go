package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A Go program's function table (.gopclntab, kept in stripped programs
// too) gives, for each function, its range, flags and a table of the
// stack pointer's offset at every instruction (pcsp): what Go's own
// traceback unwinds with, and what the linker turns into .debug_frame
// when it writes DWARF. Tables use it for every Go function, with or
// without DWARF: the CFA is the stack pointer plus that offset plus the
// return address's 8 bytes (amd64). Functions the runtime flags as the
// top of a stack end a walk (complete); those that write the stack
// pointer (switching stacks) end it too (StopSwitch). Layouts of Go 1.18
// and later (pclntab magic 0xfffffff0, 0xfffffff1); older programs are
// walked by frame pointers.

const (
	go118Magic = 0xfffffff0
	go120Magic = 0xfffffff1

	funcFlagTopFrame = 1 << 0
	funcFlagSPWrite  = 1 << 1
)

// goFunc is one function of a Go program: [entry, end) and its flags.
type goFunc struct {
	entry, end uint64
	flag       uint8
	pcsp       []byte // the pcsp table, from its start
}

// goFuncs reads f's Go function table; ok is false when f has none this
// package reads.
func goFuncs(f *elf.File) (funcs []goFunc, minLC uint64, err error) {
	s := f.Section(".gopclntab")
	if s == nil {
		s = f.Section(".data.rel.ro.gopclntab")
	}
	if s == nil || s.Type != elf.SHT_PROGBITS {
		return nil, 0, errors.New("no .gopclntab")
	}
	if s.Size > MaxCFIBytes {
		return nil, 0, fmt.Errorf(".gopclntab of %d bytes", s.Size)
	}
	b, err := s.Data()
	if err != nil {
		return nil, 0, err
	}
	textStart := uint64(0)
	if t := f.Section(".text"); t != nil {
		textStart = t.Addr
	}
	if syms, err := f.Symbols(); err == nil {
		for _, sym := range syms {
			if sym.Name == "runtime.text" {
				textStart = sym.Value
				break
			}
		}
	}
	return parsePclntab(b, textStart)
}

// parsePclntab reads a pclntab whose functions' offsets are from
// textStart.
func parsePclntab(b []byte, textStart uint64) ([]goFunc, uint64, error) {
	le := binary.LittleEndian
	if len(b) < 72 {
		return nil, 0, errors.New("pclntab header truncated")
	}
	magic := le.Uint32(b)
	if magic != go118Magic && magic != go120Magic {
		return nil, 0, fmt.Errorf("pclntab magic %#x (Go before 1.18)", magic)
	}
	minLC, ptrSize := uint64(b[6]), b[7]
	if ptrSize != 8 || minLC == 0 {
		return nil, 0, fmt.Errorf("pclntab pointer size %d, instruction size %d", ptrSize, minLC)
	}
	nfunc := le.Uint64(b[8:])
	pctab, pcln := le.Uint64(b[56:]), le.Uint64(b[64:])
	if pctab > uint64(len(b)) || pcln > uint64(len(b)) || nfunc > uint64(len(b)) || (nfunc+1)*8 > uint64(len(b))-pcln {
		return nil, 0, errors.New("pclntab offsets past its end")
	}
	table := b[pcln:]
	funcs := make([]goFunc, 0, nfunc)
	flagAt := 41 // Go 1.20+: _func.flag after startLine
	if magic == go118Magic {
		flagAt = 37
	}
	for i := uint64(0); i < nfunc; i++ {
		entry, off := le.Uint32(table[8*i:]), le.Uint32(table[8*i+4:])
		next := le.Uint32(table[8*(i+1):])
		if uint64(off)+44 > uint64(len(table)) || next < entry {
			return funcs, minLC, fmt.Errorf("pclntab function %d out of bounds", i)
		}
		fn := table[off:]
		pcsp := uint64(le.Uint32(fn[16:]))
		g := goFunc{entry: textStart + uint64(entry), end: textStart + uint64(next), flag: fn[flagAt]}
		if pcsp != 0 && pctab+pcsp < uint64(len(b)) {
			g.pcsp = b[pctab+pcsp:]
		}
		funcs = append(funcs, g)
	}
	return funcs, minLC, nil
}

// goSpans turns Go functions into spans of rows (file offsets): the CFA
// from pcsp, the return address below it; the caller's frame pointer
// unknown (Go frames never need it: their CFA is the stack pointer's).
func goSpans(funcs []goFunc, minLC uint64, code []segment) []span {
	var out []span
	for i := range funcs {
		g := &funcs[i]
		start, end, ok := fileOffsets(code, g.entry, g.end)
		if !ok || end <= start {
			continue
		}
		var rows []Row
		switch {
		case g.flag&funcFlagTopFrame != 0:
			rows = []Row{{Off: start, Rule: Rule{CFA: CFAStop}}}
		case g.flag&funcFlagSPWrite != 0:
			rows = []Row{{Off: start, Rule: Rule{CFA: CFASwitch}}}
		default:
			rows = pcspRows(g, minLC, start, end)
		}
		if len(rows) > 0 {
			out = append(out, span{rows: rows, end: end})
		}
	}
	return out
}

// pcspRows decodes a function's pcsp table (runtime.pcvalue's encoding:
// pairs of a zig-zag value delta and a pc delta, from value -1) into
// rows from file offset start.
func pcspRows(g *goFunc, minLC, start, end uint64) []Row {
	p := g.pcsp
	if p == nil {
		return nil
	}
	val, pc := int64(-1), uint64(0)
	var rows []Row
	for first := true; len(p) > 0; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || uv == 0 && !first {
			break
		}
		p = p[n:]
		val += int64(-(uv & 1) ^ (uv >> 1))
		pd, n := binary.Uvarint(p)
		if n <= 0 {
			return nil
		}
		p = p[n:]
		if val < -8 || val > math.MaxInt32-8 {
			return nil // not a stack offset: the table is not read right
		}
		r := Rule{CFA: CFASP, CFAOff: int32(val + 8), FP: RegUnknown, RA: RegAtCFA, RAOff: -8}
		rows = appendRow(rows, Row{Off: start + pc, Rule: r})
		pc += pd * minLC
		if start+pc >= end {
			break
		}
	}
	if len(rows) == 0 || rows[0].Off != start {
		return nil
	}
	return rows
}
