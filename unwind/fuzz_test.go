package unwind

import (
	"testing"
)

// FuzzCFI reads arbitrary bytes as .eh_frame and as .debug_frame: no
// panic, no hang; the rows of what is read are in order and their rules
// in range.
func FuzzCFI(f *testing.F) {
	a := newCFI(0x10000, "zR", defaultInit)
	a.fde(0x1000, 0x100, []byte{cfaAdvanceLoc | 1, cfaDefCFAOffset, 16, cfaOffset | 6, 2, cfaAdvanceLoc | 3, cfaDefCFARegister, 6,
		cfaRememberState, cfaAdvanceLoc | 4, cfaDefCFA, 7, 8, cfaAdvanceLoc | 1, cfaRestoreState})
	a.fde(0x3000, 0x100, []byte{cfaUndefined, 16})
	f.Add(a.section().data)
	s := newCFI(0x20000, "zRS", nil)
	s.fde(0x1000, 0x10, cat([]byte{cfaDefCFAExpression, 4, opBreg0 + 7}, sleb(160), []byte{opDeref},
		[]byte{cfaExpression, 6, 3, opBreg0 + 7}, sleb(120), []byte{cfaExpression, 16, 3, opBreg0 + 7}, sleb(168)))
	f.Add(s.section().data)
	f.Fuzz(func(t *testing.T, data []byte) {
		code := []segment{{vaddr: 0, off: 0, size: 1 << 40}}
		for _, eh := range []bool{true, false} {
			sec := &cfiSection{data: data, addr: 0x10000, eh: eh}
			fdes, _, _ := sec.entries()
			var spans []span
			for i := range fdes {
				if sp, ok := sec.span(&fdes[i], AMD64, code); ok {
					spans = append(spans, sp)
				}
			}
			rows, _ := assemble(spans)
			for i, r := range rows {
				if i > 0 && r.Off <= rows[i-1].Off {
					t.Fatalf("row %d at %#x after %#x", i, r.Off, rows[i-1].Off)
				}
				if !r.Rule.valid() {
					t.Fatalf("row %d: rule %+v out of range", i, r.Rule)
				}
			}
		}
	})
}

// FuzzTableFile reads arbitrary bytes as a table file: no panic; a table
// read encodes back to the same bytes.
func FuzzTableFile(f *testing.F) {
	tab := &Table{Arch: AMD64, Kind: KindCFI, Rows: []Row{{Off: 0x1000, Rule: Rule{CFA: CFASP, CFAOff: 8, RA: RegAtCFA, RAOff: -8}}, {Off: 0x1010, Rule: Rule{CFA: CFANone}}}, FDEs: 1}
	b, _ := tab.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var tab Table
		if err := tab.UnmarshalBinary(data); err != nil {
			return
		}
		b, err := tab.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back Table
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatalf("re-encoded table not read: %v", err)
		}
	})
}
