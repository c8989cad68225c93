package unwind

import (
	"encoding/binary"
	"testing"
)

// cfiAsm assembles .eh_frame bytes for tests: one CIE (x86-64, code
// alignment 1, data alignment -8, return address column 16, FDE pointers
// pc-relative sdata4), then FDEs.
type cfiAsm struct {
	b    []byte
	addr uint64 // the section's virtual address
	cie  int
}

func uleb(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		out = append(out, c)
		if v == 0 {
			return out
		}
	}
}

func sleb(v int64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0
		if !done {
			c |= 0x80
		}
		out = append(out, c)
		if done {
			return out
		}
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// newCFI starts a section with a CIE of augmentation aug ("zR" or
// "zRS") and initial instructions init.
func newCFI(addr uint64, aug string, init []byte) *cfiAsm {
	a := &cfiAsm{addr: addr}
	body := cat([]byte{0, 0, 0, 0, 1}, []byte(aug), []byte{0}, uleb(1), sleb(-8), []byte{16}, uleb(1), []byte{0x1b}, init)
	a.entry(body)
	return a
}

// defaultInit is the CIE instructions of gcc's x86-64 code: CFA rsp+8,
// return address at CFA-8.
var defaultInit = []byte{cfaDefCFA, 7, 8, cfaOffset | 16, 1}

func (a *cfiAsm) entry(body []byte) {
	for len(body)%8 != 4 {
		body = append(body, cfaNop)
	}
	var l [4]byte
	binary.LittleEndian.PutUint32(l[:], uint32(len(body)))
	a.b = append(a.b, l[:]...)
	a.b = append(a.b, body...)
}

// fde adds an FDE for [begin, begin+size) with instructions ins.
func (a *cfiAsm) fde(begin, size uint64, ins []byte) {
	at := len(a.b)
	ptr := uint32(at + 4 - a.cie)
	pcField := a.addr + uint64(at+8)
	body := make([]byte, 12)
	binary.LittleEndian.PutUint32(body[0:], ptr)
	binary.LittleEndian.PutUint32(body[4:], uint32(int32(int64(begin)-int64(pcField))))
	binary.LittleEndian.PutUint32(body[8:], uint32(size))
	body = append(body, uleb(0)...)
	a.entry(append(body, ins...))
}

func (a *cfiAsm) section() *cfiSection {
	return &cfiSection{data: append(a.b, 0, 0, 0, 0), addr: a.addr, eh: true}
}

// table builds a table from the section with code at [0x1000, 0x9000)
// (file offsets equal to addresses).
func (a *cfiAsm) table(t *testing.T) *Table {
	t.Helper()
	sec := a.section()
	fdes, bad, err := sec.entries()
	if err != nil || bad != 0 {
		t.Fatalf("entries: %v, %d bad", err, bad)
	}
	code := []segment{{vaddr: 0x1000, off: 0x1000, size: 0x8000}}
	var spans []span
	for i := range fdes {
		s, ok := sec.span(&fdes[i], AMD64, code)
		if !ok {
			t.Fatalf("FDE %d not used", i)
		}
		spans = append(spans, s)
	}
	rows, dropped := assemble(spans)
	return &Table{Arch: AMD64, Kind: KindCFI, Rows: rows, FDEs: len(spans) - dropped, Bad: dropped}
}

func TestRules(t *testing.T) {
	a := newCFI(0x10000, "zR", defaultInit)
	// push rbp; mov rbp, rsp; ...; pop rbp; ret
	a.fde(0x1000, 0x20, cat(
		[]byte{cfaAdvanceLoc | 1, cfaDefCFAOffset, 16, cfaOffset | 6, 2},
		[]byte{cfaAdvanceLoc | 3, cfaDefCFARegister, 6},
		[]byte{cfaAdvanceLoc | 10, cfaRememberState, cfaDefCFA, 7, 8},
		[]byte{cfaAdvanceLoc | 1, cfaRestoreState},
	))
	// The PLT's expression.
	plt := []byte{opBreg0 + 7, 8, opBreg0 + 16, 0, opLit0 + 15, opAnd, opLit0 + 11, opGe, opLit0 + 3, opShl, opPlus}
	a.fde(0x2000, 0x40, cat([]byte{cfaAdvanceLoc | 16, cfaDefCFAExpression}, uleb(uint64(len(plt))), plt))
	// A realigned stack: CFA = *(rbp-8), rbp saved at *(rbp).
	a.fde(0x3000, 0x20, cat([]byte{cfaAdvanceLoc | 4, cfaDefCFAExpression, 3, opBreg0 + 6, 0x78, opDeref},
		[]byte{cfaExpression, 6, 2, opBreg0 + 6, 0}))
	// The CFA in r10: unsupported; the return address undefined: a stop.
	a.fde(0x4000, 0x10, []byte{cfaAdvanceLoc | 2, cfaDefCFA, 10, 0, cfaAdvanceLoc | 2, cfaUndefined, 16})
	tab := a.table(t)
	for _, c := range []struct {
		off  uint64
		want string
	}{
		{0xfff, "none"},
		{0x1000, "sp+8 fp=s ra=c-8"},
		{0x1001, "sp+16 fp=c-16 ra=c-8"},
		{0x1004, "fp+16 fp=c-16 ra=c-8"},
		{0x100e, "sp+8 fp=c-16 ra=c-8"},
		{0x100f, "fp+16 fp=c-16 ra=c-8"}, // restore_state
		{0x101f, "fp+16 fp=c-16 ra=c-8"},
		{0x1020, "none"},
		{0x2000, "sp+8 fp=s ra=c-8"},
		{0x2010, "plt(sp+8,11) fp=s ra=c-8"},
		{0x3004, "*(fp-8) fp=fp+0 ra=c-8"},
		{0x4002, "unsupported fp=s ra=s"},
		{0x4004, "stop fp=s ra=s"},
		{0x4010, "none"},
	} {
		if got := tab.Lookup(c.off).String(); got != c.want {
			t.Errorf("at %#x: %s, want %s", c.off, got, c.want)
		}
	}
}

// TestSignalFrame: glibc's __restore_rt CFI (a CIE with the S
// augmentation, the CFA and registers as expressions on rsp) is a
// signal frame's rule.
func TestSignalFrame(t *testing.T) {
	a := newCFI(0x10000, "zRS", nil)
	a.fde(0x1000, 0x10, cat(
		[]byte{cfaDefCFAExpression, 4, opBreg0 + 7}, sleb(160), []byte{opDeref},
		[]byte{cfaExpression, 6, 3, opBreg0 + 7}, sleb(120),
		[]byte{cfaExpression, 16, 3, opBreg0 + 7}, sleb(168),
	))
	tab := a.table(t)
	got := tab.Lookup(0x1005)
	want := Rule{CFA: CFADerefSP, CFAOff: 160, FP: RegAtSP, FPOff: 120, RA: RegAtSP, RAOff: 168, Signal: true}
	if got != want {
		t.Errorf("rule %v, want %v", got, want)
	}
}

// TestBadInput: entries that cannot be read are counted, the section's
// other FDEs still used; a length past the end stops the reading with
// an error, keeping the FDEs before it.
func TestBadInput(t *testing.T) {
	a := newCFI(0x10000, "zR", defaultInit)
	a.fde(0x1000, 0x10, []byte{cfaAdvanceLoc | 1, cfaDefCFAOffset, 16})
	a.fde(0x2000, 0x10, []byte{cfaRestoreState}) // no state remembered
	a.fde(0x3000, 0x10, []byte{0x3f})            // unknown instruction
	sec := a.section()
	fdes, bad, err := sec.entries()
	if err != nil || bad != 0 || len(fdes) != 3 {
		t.Fatalf("entries: %d, %d bad, %v", len(fdes), bad, err)
	}
	code := []segment{{vaddr: 0x1000, off: 0x1000, size: 0x8000}}
	var used int
	for i := range fdes {
		if _, ok := sec.span(&fdes[i], AMD64, code); ok {
			used++
		}
	}
	if used != 1 {
		t.Errorf("%d FDEs used, want 1", used)
	}
	// A length running past the end.
	b := append([]byte(nil), a.b...)
	binary.LittleEndian.PutUint32(b[len(b)-24:], 0x7fffffff)
	s2 := &cfiSection{data: b, addr: a.addr, eh: true}
	fdes, _, err = s2.entries()
	if err == nil || len(fdes) == 0 {
		t.Errorf("a length past the end: %d FDEs, error %v", len(fdes), err)
	}
}
