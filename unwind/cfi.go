package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// This file reads DWARF call frame information: the common information
// entries (CIE) and frame description entries (FDE) of .eh_frame (the
// Linux x86-64 ABI's form, with pointer encodings and augmentations) and
// .debug_frame (DWARF 2-5), and runs each FDE's instructions to list its
// rows. Only the CFA, the frame pointer and the return address are kept
// (see Rule); the instructions for other registers are read and dropped.

// cfiSection is the bytes of .eh_frame or .debug_frame and the virtual
// address they are loaded at (pc-relative pointers are relative to it).
type cfiSection struct {
	data []byte
	addr uint64
	eh   bool // .eh_frame; else .debug_frame
}

// Pointer encodings (DW_EH_PE_*) of .eh_frame.
const (
	peAbsptr  = 0x00
	peULEB    = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSLEB    = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePCRel   = 0x10
	peDataRel = 0x30
	peOmit    = 0xff
)

// reader reads little-endian DWARF values; the first error sticks.
type reader struct {
	b   []byte
	off int
	err error
}

var errShort = errors.New("truncated")

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = errShort
		return false
	}
	return true
}

func (r *reader) u8() uint8 {
	if !r.need(1) {
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	r.off += 2
	return binary.LittleEndian.Uint16(r.b[r.off-2:])
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	r.off += 4
	return binary.LittleEndian.Uint32(r.b[r.off-4:])
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	r.off += 8
	return binary.LittleEndian.Uint64(r.b[r.off-8:])
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	for {
		b := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (r *reader) bytes(n uint64) []byte {
	if n > math.MaxInt32 || !r.need(int(n)) {
		r.err = errShort
		return nil
	}
	r.off += int(n)
	return r.b[r.off-int(n) : r.off]
}

func (r *reader) cstring() string {
	for i := r.off; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.err = errShort
	return ""
}

// pointer reads a pointer of encoding enc; base is the virtual address of
// r.b[0] (for pc-relative pointers), dataBase that of .eh_frame_hdr (for
// data-relative ones, 0 when not allowed).
func (r *reader) pointer(enc byte, base, dataBase uint64) (uint64, error) {
	if enc == peOmit {
		return 0, nil
	}
	at := base + uint64(r.off)
	var v uint64
	switch enc & 0x0f {
	case peAbsptr, peUdata8:
		v = r.u64()
	case peULEB:
		v = r.uleb()
	case peUdata2:
		v = uint64(r.u16())
	case peUdata4:
		v = uint64(r.u32())
	case peSLEB:
		v = uint64(r.sleb())
	case peSdata2:
		v = uint64(int64(int16(r.u16())))
	case peSdata4:
		v = uint64(int64(int32(r.u32())))
	case peSdata8:
		v = r.u64()
	default:
		return 0, fmt.Errorf("pointer encoding %#x not supported", enc)
	}
	switch enc & 0x70 {
	case 0:
	case pePCRel:
		v += at
	case peDataRel:
		if dataBase == 0 {
			return 0, fmt.Errorf("data-relative pointer encoding %#x outside .eh_frame_hdr", enc)
		}
		v += dataBase
	default:
		return 0, fmt.Errorf("pointer encoding %#x not supported", enc)
	}
	if enc&0x80 != 0 {
		return 0, fmt.Errorf("indirect pointer encoding %#x not supported", enc)
	}
	return v, r.err
}

// cie is a common information entry.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    byte
	signal    bool
	aug       bool // 'z': FDEs have augmentation data
	initial   []byte
}

// fde is a frame description entry: code [begin, end) and its
// instructions.
type fde struct {
	cie        *cie
	begin, end uint64
	instrs     []byte
	at         int // offset in its section, for errors
}

// entries lists the FDEs of a section. It stops at the first entry it
// cannot read (length, CIE) and returns what it read with the error; an
// FDE whose own fields are bad is skipped and counted in bad.
func (s *cfiSection) entries() (fdes []fde, bad int, err error) {
	cies := map[int]*cie{}
	r := &reader{b: s.data}
	for r.off < len(r.b) {
		start := r.off
		length := uint64(r.u32())
		idSize := 4
		if length == 0xffffffff {
			length = r.u64()
			idSize = 8
		}
		if r.err != nil {
			return fdes, bad, fmt.Errorf("entry at %#x: length: %w", start, r.err)
		}
		if length == 0 {
			if s.eh {
				return fdes, bad, nil // the terminator
			}
			continue
		}
		body := r.off
		if length > uint64(len(r.b)-body) {
			return fdes, bad, fmt.Errorf("entry at %#x: length %d past the section's end", start, length)
		}
		end := body + int(length)
		er := &reader{b: r.b[:end], off: body}
		var id uint64
		if idSize == 8 {
			id = er.u64()
		} else {
			id = uint64(er.u32())
		}
		r.off = end
		isCIE := id == 0
		if !s.eh {
			isCIE = id == 0xffffffff || id == math.MaxUint64
		}
		if er.err != nil {
			return fdes, bad, fmt.Errorf("entry at %#x: %w", start, er.err)
		}
		if isCIE {
			continue // read when an FDE refers to it
		}
		ciePos := int64(id) // .debug_frame: offset from the section's start
		if s.eh {
			ciePos = int64(body) - int64(id) // .eh_frame: back from the pointer field
		}
		if ciePos < 0 || ciePos >= int64(len(s.data)) {
			bad++
			continue
		}
		c, ok := cies[int(ciePos)]
		if !ok {
			var cerr error
			c, cerr = s.readCIE(int(ciePos))
			if cerr != nil {
				bad++
				cies[int(ciePos)] = nil
				continue
			}
			cies[int(ciePos)] = c
		}
		if c == nil {
			bad++
			continue
		}
		f, ferr := s.readFDE(er, c)
		if ferr != nil {
			bad++
			continue
		}
		f.at = start
		fdes = append(fdes, f)
	}
	return fdes, bad, nil
}

// readCIE reads the CIE at offset at.
func (s *cfiSection) readCIE(at int) (*cie, error) {
	r := &reader{b: s.data, off: at}
	length := uint64(r.u32())
	idSize := 4
	if length == 0xffffffff {
		length = r.u64()
		idSize = 8
	}
	if r.err != nil || length > uint64(len(s.data)-r.off) {
		return nil, fmt.Errorf("CIE at %#x: bad length", at)
	}
	r.b = s.data[:r.off+int(length)]
	var id uint64
	if idSize == 8 {
		id = r.u64()
	} else {
		id = uint64(r.u32())
	}
	if s.eh && id != 0 || !s.eh && id != 0xffffffff && id != math.MaxUint64 {
		return nil, fmt.Errorf("CIE at %#x: not a CIE (id %#x)", at, id)
	}
	c := &cie{fdeEnc: peAbsptr}
	version := r.u8()
	if version != 1 && version != 3 && version != 4 {
		return nil, fmt.Errorf("CIE at %#x: version %d", at, version)
	}
	aug := r.cstring()
	if version == 4 {
		if addrSize, segSize := r.u8(), r.u8(); addrSize != 8 || segSize != 0 {
			return nil, fmt.Errorf("CIE at %#x: address size %d, segment size %d", at, addrSize, segSize)
		}
	}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.aug = true
		augLen := r.uleb()
		data := r.bytes(augLen)
		ar := &reader{b: data}
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				c.fdeEnc = ar.u8()
			case 'P':
				enc := ar.u8()
				if _, err := ar.pointer(enc&0x0f, 0, 0); err != nil {
					return nil, fmt.Errorf("CIE at %#x: personality: %w", at, err)
				}
			case 'L':
				ar.u8()
			case 'S':
				c.signal = true
			case 'B', 'G':
				// AArch64 BTI and MTE marks: nothing to read.
			default:
				// Unknown: the length says where the data ends.
			}
		}
		if ar.err != nil {
			return nil, fmt.Errorf("CIE at %#x: augmentation data: %w", at, ar.err)
		}
	} else if aug != "" {
		return nil, fmt.Errorf("CIE at %#x: augmentation %q not supported", at, aug)
	}
	if r.err != nil {
		return nil, fmt.Errorf("CIE at %#x: %w", at, r.err)
	}
	if c.codeAlign == 0 {
		return nil, fmt.Errorf("CIE at %#x: code alignment 0", at)
	}
	c.initial = r.b[r.off:]
	return c, nil
}

// readFDE reads an FDE's fields after its CIE pointer.
func (s *cfiSection) readFDE(r *reader, c *cie) (fde, error) {
	f := fde{cie: c}
	enc := c.fdeEnc
	if !s.eh {
		enc = peAbsptr
	}
	begin, err := r.pointer(enc, s.addr, 0)
	if err != nil {
		return f, err
	}
	size, err := r.pointer(enc&0x0f, 0, 0)
	if err != nil {
		return f, err
	}
	if c.aug {
		r.bytes(r.uleb())
	}
	if r.err != nil {
		return f, r.err
	}
	if begin+size < begin {
		return f, fmt.Errorf("FDE range %#x+%#x wraps", begin, size)
	}
	f.begin, f.end = begin, begin+size
	f.instrs = r.b[r.off:]
	return f, nil
}

// DW_CFA_* instructions (the low six bits, or the high two for the
// three compact forms).
const (
	cfaAdvanceLoc        = 0x40
	cfaOffset            = 0x80
	cfaRestore           = 0xc0
	cfaNop               = 0x00
	cfaSetLoc            = 0x01
	cfaAdvanceLoc1       = 0x02
	cfaAdvanceLoc2       = 0x03
	cfaAdvanceLoc4       = 0x04
	cfaOffsetExtended    = 0x05
	cfaRestoreExtended   = 0x06
	cfaUndefined         = 0x07
	cfaSameValue         = 0x08
	cfaRegister          = 0x09
	cfaRememberState     = 0x0a
	cfaRestoreState      = 0x0b
	cfaDefCFA            = 0x0c
	cfaDefCFARegister    = 0x0d
	cfaDefCFAOffset      = 0x0e
	cfaDefCFAExpression  = 0x0f
	cfaExpression        = 0x10
	cfaOffsetExtendedSF  = 0x11
	cfaDefCFASF          = 0x12
	cfaDefCFAOffsetSF    = 0x13
	cfaValOffset         = 0x14
	cfaValOffsetSF       = 0x15
	cfaValExpression     = 0x16
	cfaGNUWindowSave     = 0x2d // AArch64: negate_ra_state (pointer authentication)
	cfaGNUArgsSize       = 0x2e
	cfaGNUNegOffsetExtSF = 0x2f
)

// regRule is a register's rule while instructions run.
type regRule struct {
	kind      ruleKind
	off       int64
	expr      []byte
	undefined bool
}

type ruleKind uint8

const (
	rSame ruleKind = iota // also: no rule (callee-saved by the ABI)
	rOffset
	rExpr
	rOther // another register, a value rule
	rUndefined
)

// cfaRule is the CFA's rule while instructions run.
type cfaRule struct {
	reg  uint64
	off  int64
	expr []byte // non-nil: DW_CFA_def_cfa_expression
}

type frameState struct {
	cfa    cfaRule
	fp, ra regRule
}

// program runs FDE f's instructions (after its CIE's initial ones) and
// calls row for each address where the rule changes, in address order,
// from f.begin; the last rule holds until f.end.
func (s *cfiSection) program(f *fde, arch Arch, row func(addr uint64, r Rule)) error {
	regs := archRegs[arch]
	// Before the CIE's instructions: the frame pointer is callee-saved
	// (unchanged until a rule says where it went); the return address
	// is in LR on arm64, and has no rule on x86-64 (the CIE gives one).
	var initial frameState
	if arch == ARM64 {
		initial.ra = regRule{kind: rSame}
	} else {
		initial.ra = regRule{kind: rOther}
	}
	st := initial
	loc := f.begin
	var stack []frameState
	if err := s.run(f.cie.initial, f, arch, regs, &st, nil, &loc, &stack, nil); err != nil {
		return fmt.Errorf("CIE instructions: %w", err)
	}
	initial = st
	emit := func() { row(loc, st.rule(f.cie, arch, regs)) }
	if err := s.run(f.instrs, f, arch, regs, &st, &initial, &loc, &stack, emit); err != nil {
		return err
	}
	emit() // the last rule, up to the FDE's end
	return nil
}

// run interprets instructions. emit (nil for a CIE's initial
// instructions) is called before the location advances.
func (s *cfiSection) run(code []byte, f *fde, arch Arch, regs regs, st *frameState, initial *frameState,
	loc *uint64, stack *[]frameState, emit func()) error {
	c := f.cie
	r := &reader{b: code}
	advance := func(delta uint64) error {
		if emit == nil {
			return errors.New("location advanced in a CIE")
		}
		emit()
		n := *loc + delta*c.codeAlign
		if n < *loc {
			return errors.New("location wraps")
		}
		*loc = n
		return nil
	}
	set := func(reg uint64, rr regRule) {
		switch reg {
		case regs.fp:
			st.fp = rr
		case regs.ra:
			st.ra = rr
		}
	}
	restore := func(reg uint64) {
		if initial == nil {
			set(reg, regRule{})
			return
		}
		switch reg {
		case regs.fp:
			st.fp = initial.fp
		case regs.ra:
			st.ra = initial.ra
		}
	}
	for r.off < len(r.b) && r.err == nil {
		op := r.u8()
		var err error
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			err = advance(uint64(op & 0x3f))
		case cfaOffset:
			set(uint64(op&0x3f), regRule{kind: rOffset, off: int64(r.uleb()) * c.dataAlign})
		case cfaRestore:
			restore(uint64(op & 0x3f))
		default:
			err = s.extended(op, r, f, arch, st, loc, stack, advance, set, restore)
		}
		if err != nil {
			return fmt.Errorf("instruction %#x at %d: %w", op, r.off, err)
		}
	}
	if r.err != nil {
		return fmt.Errorf("instructions: %w", r.err)
	}
	return nil
}

// extended interprets the instructions with a 6-bit opcode.
func (s *cfiSection) extended(op byte, r *reader, f *fde, arch Arch, st *frameState, loc *uint64, stack *[]frameState,
	advance func(uint64) error, set func(uint64, regRule), restore func(uint64)) error {
	c := f.cie
	switch op {
	case cfaNop:
	case cfaSetLoc:
		enc := c.fdeEnc
		if !s.eh {
			enc = peAbsptr
		}
		// A pc-relative set_loc is relative to its own field, which
		// this reader does not know the address of: refuse it.
		if enc&0x70 != 0 {
			return errors.New("relative DW_CFA_set_loc")
		}
		to, err := r.pointer(enc, 0, 0)
		if err != nil {
			return err
		}
		if to < *loc {
			return errors.New("DW_CFA_set_loc goes backwards")
		}
		if err := advance(0); err != nil {
			return err
		}
		*loc = to
	case cfaAdvanceLoc1:
		return advance(uint64(r.u8()))
	case cfaAdvanceLoc2:
		return advance(uint64(r.u16()))
	case cfaAdvanceLoc4:
		return advance(uint64(r.u32()))
	case cfaOffsetExtended:
		reg := r.uleb()
		set(reg, regRule{kind: rOffset, off: int64(r.uleb()) * c.dataAlign})
	case cfaOffsetExtendedSF:
		reg := r.uleb()
		set(reg, regRule{kind: rOffset, off: r.sleb() * c.dataAlign})
	case cfaGNUNegOffsetExtSF:
		reg := r.uleb()
		set(reg, regRule{kind: rOffset, off: -int64(r.uleb()) * c.dataAlign})
	case cfaRestoreExtended:
		restore(r.uleb())
	case cfaUndefined:
		set(r.uleb(), regRule{kind: rUndefined})
	case cfaSameValue:
		set(r.uleb(), regRule{kind: rSame})
	case cfaRegister:
		reg := r.uleb()
		r.uleb()
		set(reg, regRule{kind: rOther})
	case cfaValOffset:
		reg := r.uleb()
		r.uleb()
		set(reg, regRule{kind: rOther})
	case cfaValOffsetSF:
		reg := r.uleb()
		r.sleb()
		set(reg, regRule{kind: rOther})
	case cfaValExpression:
		reg := r.uleb()
		r.bytes(r.uleb())
		set(reg, regRule{kind: rOther})
	case cfaExpression:
		reg := r.uleb()
		set(reg, regRule{kind: rExpr, expr: r.bytes(r.uleb())})
	case cfaRememberState:
		if len(*stack) >= 64 {
			return errors.New("DW_CFA_remember_state nested too deep")
		}
		*stack = append(*stack, *st)
	case cfaRestoreState:
		if len(*stack) == 0 {
			return errors.New("DW_CFA_restore_state without a remembered state")
		}
		// The CFA and the registers come back together, as the
		// DWARF standard says.
		*st = (*stack)[len(*stack)-1]
		*stack = (*stack)[:len(*stack)-1]
	case cfaDefCFA:
		st.cfa = cfaRule{reg: r.uleb(), off: int64(r.uleb())}
	case cfaDefCFASF:
		reg := r.uleb()
		st.cfa = cfaRule{reg: reg, off: r.sleb() * c.dataAlign}
	case cfaDefCFARegister:
		st.cfa.reg = r.uleb()
		if st.cfa.expr != nil {
			st.cfa = cfaRule{reg: math.MaxUint64} // an offset of no register: unsupported
		}
	case cfaDefCFAOffset:
		st.cfa.off = int64(r.uleb())
		if st.cfa.expr != nil {
			st.cfa = cfaRule{reg: math.MaxUint64}
		}
	case cfaDefCFAOffsetSF:
		st.cfa.off = r.sleb() * c.dataAlign
		if st.cfa.expr != nil {
			st.cfa = cfaRule{reg: math.MaxUint64}
		}
	case cfaDefCFAExpression:
		e := r.bytes(r.uleb())
		if e == nil {
			e = []byte{}
		}
		st.cfa = cfaRule{expr: e}
	case cfaGNUArgsSize:
		r.uleb()
	case cfaGNUWindowSave:
		if arch != ARM64 {
			return errors.New("DW_CFA_GNU_window_save (SPARC) in x86-64 CFI")
		}
		// AArch64 negate_ra_state: the return address is signed from
		// here; walkers strip pointer authentication bits anyway.
	default:
		return errors.New("unknown instruction")
	}
	return r.err
}

// DWARF expression operations recognised in CFA and register rules.
const (
	opDeref = 0x06
	opAnd   = 0x1a
	opPlus  = 0x22
	opShl   = 0x24
	opGe    = 0x2a
	opLit0  = 0x30
	opBreg0 = 0x70
)

// bregOffset matches an expression "DW_OP_breg<reg> off" optionally
// followed by DW_OP_deref; ok is false for anything else.
func bregOffset(e []byte) (reg uint64, off int64, deref, ok bool) {
	if len(e) < 2 || e[0] < opBreg0 || e[0] > opBreg0+31 {
		return 0, 0, false, false
	}
	r := &reader{b: e, off: 1}
	off = r.sleb()
	if r.err != nil {
		return 0, 0, false, false
	}
	rest := e[r.off:]
	switch {
	case len(rest) == 0:
	case len(rest) == 1 && rest[0] == opDeref:
		deref = true
	default:
		return 0, 0, false, false
	}
	return uint64(e[0] - opBreg0), off, deref, true
}

// pltThreshold matches the expression GNU ld writes for x86-64 PLT
// entries, CFA = rsp + 8 + ((rip & 15) >= N) << 3, and returns N.
func pltThreshold(e []byte) (uint8, bool) {
	// DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and;
	// DW_OP_lit<N>; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
	if len(e) != 11 || e[0] != opBreg0+7 || e[1] != 8 || e[2] != opBreg0+16 || e[3] != 0 ||
		e[4] != opLit0+15 || e[5] != opAnd || e[6] < opLit0 || e[6] > opLit0+15 || e[7] != opGe ||
		e[8] != opLit0+3 || e[9] != opShl || e[10] != opPlus {
		return 0, false
	}
	return e[6] - opLit0, true
}

// rule turns the running state into a Rule.
func (st *frameState) rule(c *cie, arch Arch, regs regs) Rule {
	r := Rule{Signal: c.signal}
	unsupported := Rule{CFA: CFAUnsupported, Signal: c.signal}
	if st.ra.kind == rUndefined {
		return Rule{CFA: CFAStop, Signal: c.signal}
	}
	switch {
	case st.cfa.expr != nil:
		if t, ok := pltThreshold(st.cfa.expr); ok && arch == AMD64 {
			r.CFA, r.CFAOff, r.Threshold = CFAPLT, 8, t
			break
		}
		reg, off, deref, ok := bregOffset(st.cfa.expr)
		switch {
		case !ok || !deref || off != int64(int32(off)):
			return unsupported
		case reg == regs.sp:
			r.CFA, r.CFAOff = CFADerefSP, int32(off)
		case reg == regs.fp:
			r.CFA, r.CFAOff = CFADerefFP, int32(off)
		default:
			return unsupported
		}
	case st.cfa.off != int64(int32(st.cfa.off)):
		return unsupported
	case st.cfa.reg == regs.sp:
		r.CFA, r.CFAOff = CFASP, int32(st.cfa.off)
	case st.cfa.reg == regs.fp:
		r.CFA, r.CFAOff = CFAFP, int32(st.cfa.off)
	default:
		return unsupported
	}
	var ok bool
	if r.RA, r.RAOff, ok = regRuleOf(st.ra, regs); !ok || r.RA == RegUnknown || r.RA == RegSame && arch != ARM64 {
		return unsupported
	}
	r.FP, r.FPOff, _ = regRuleOf(st.fp, regs)
	return r
}

// regRuleOf turns a register's running rule into a kind and offset; ok
// is false for an expression not recognised.
func regRuleOf(rr regRule, regs regs) (RegKind, int32, bool) {
	switch rr.kind {
	case rSame:
		return RegSame, 0, true
	case rOffset:
		if rr.off != int64(int32(rr.off)) {
			return RegUnknown, 0, false
		}
		return RegAtCFA, int32(rr.off), true
	case rExpr:
		reg, off, deref, ok := bregOffset(rr.expr)
		if !ok || deref || off != int64(int32(off)) {
			return RegUnknown, 0, false
		}
		switch reg {
		case regs.sp:
			return RegAtSP, int32(off), true
		case regs.fp:
			return RegAtFP, int32(off), true
		}
		return RegUnknown, 0, false
	}
	return RegUnknown, 0, true
}
