package unwind

import (
	"slices"
	"testing"
)

// memMap is a stack for tests: 8-byte words by address.
type memMap map[uint64]uint64

func (m memMap) Uint64(a uint64) (uint64, bool) {
	v, ok := m[a]
	return v, ok
}

// walkTable is code at [0x1000, 0x5000): 0x1000 a function with a frame
// (push rbp; mov rbp,rsp at +1, +4), 0x2000 one without (CFA rsp+24
// after +4), 0x3000 the outermost (return address undefined), 0x4000 a
// realigned one using rbp.
func walkTable(t *testing.T) *Table {
	a := newCFI(0x10000, "zR", defaultInit)
	a.fde(0x1000, 0x100, []byte{cfaAdvanceLoc | 1, cfaDefCFAOffset, 16, cfaOffset | 6, 2, cfaAdvanceLoc | 3, cfaDefCFARegister, 6})
	a.fde(0x2000, 0x100, []byte{cfaAdvanceLoc | 4, cfaDefCFAOffset, 24})
	a.fde(0x3000, 0x100, []byte{cfaUndefined, 16})
	a.fde(0x4000, 0x100, []byte{cfaAdvanceLoc | 4, cfaDefCFA, 6, 16, cfaRegister, 6, 3})
	return a.table(t)
}

// locator maps [0x1000, 0x5000) to tab (file offset = address), 0x9000
// pages to anonymous code, 0x8000 to a module not loaded.
func locator(tab *Table) Locator {
	return func(a uint64) Place {
		switch {
		case a >= 0x1000 && a < 0x5000:
			return Place{Where: InModule, Table: tab, Off: a}
		case a >= 0x9000 && a < 0xa000:
			return Place{Where: Anonymous}
		case a >= 0x8000 && a < 0x9000:
			return Place{Where: NotLoaded}
		}
		return Place{Where: NotMapped}
	}
}

func TestWalk(t *testing.T) {
	tab := walkTable(t)
	for _, c := range []struct {
		name   string
		regs   Regs
		mem    memMap
		max    int
		frames []uint64
		stop   Stop
	}{
		{
			// 0x2010 (no frame, CFA sp+24) called from 0x1050 (rbp
			// frame) called from 0x3010 (outermost).
			name:   "complete",
			regs:   Regs{PC: 0x2010, SP: 0x7000, FP: 0x7100},
			mem:    memMap{0x7010: 0x1050, 0x7100: 0x7200, 0x7108: 0x3010},
			frames: []uint64{0x2010, 0x1050, 0x3010}, stop: StopComplete,
		},
		{
			name:   "garbage return address",
			regs:   Regs{PC: 0x2010, SP: 0x7000},
			mem:    memMap{0x7010: 0x696c0a3120656e69},
			frames: []uint64{0x2010}, stop: StopBadAddress,
		},
		{
			name:   "unreadable stack",
			regs:   Regs{PC: 0x2010, SP: 0x7000},
			mem:    memMap{},
			frames: []uint64{0x2010}, stop: StopRead,
		},
		{
			name:   "no CFI",
			regs:   Regs{PC: 0x2010, SP: 0x7000},
			mem:    memMap{0x7010: 0x2201},
			frames: []uint64{0x2010, 0x2201}, stop: StopNoCFI,
		},
		{
			name:   "JIT code",
			regs:   Regs{PC: 0x2010, SP: 0x7000},
			mem:    memMap{0x7010: 0x9010},
			frames: []uint64{0x2010, 0x9010}, stop: StopAnon,
		},
		{
			name:   "table not loaded",
			regs:   Regs{PC: 0x2010, SP: 0x7000},
			mem:    memMap{0x7010: 0x8010},
			frames: []uint64{0x2010, 0x8010}, stop: StopNotLoaded,
		},
		{
			name:   "depth",
			regs:   Regs{PC: 0x2010, SP: 0x7000},
			mem:    memMap{0x7010: 0x1050},
			max:    1,
			frames: []uint64{0x2010}, stop: StopDepth,
		},
		{
			// 0x4010 saves rbp in a register: the caller 0x1050
			// needs rbp for its CFA.
			name:   "frame pointer lost",
			regs:   Regs{PC: 0x4010, SP: 0x7000, FP: 0x7100},
			mem:    memMap{0x7108: 0x1050},
			frames: []uint64{0x4010, 0x1050}, stop: StopFPUnknown,
		},
		{
			// rbp points below the stack pointer: a loop.
			name:   "backwards",
			regs:   Regs{PC: 0x1050, SP: 0x7000, FP: 0x6000},
			mem:    memMap{0x6008: 0x1050, 0x6000: 0x6000},
			frames: []uint64{0x1050}, stop: StopBackwards,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			max := c.max
			if max == 0 {
				max = 64
			}
			frames, stop := Walk(AMD64, c.regs, c.mem, locator(tab), max)
			if !slices.Equal(frames, c.frames) || stop != c.stop {
				t.Errorf("frames %#x, stop %q; want %#x, %q", frames, stop, c.frames, c.stop)
			}
		})
	}
}

// TestWalkFramePointers: a module walked by frame pointers (a Go program
// without CFI) ends at a frame pointer of 0.
func TestWalkFramePointers(t *testing.T) {
	fp := &Table{Arch: AMD64, Kind: KindFramePointers}
	loc := func(a uint64) Place {
		if a >= 0x1000 && a < 0x5000 {
			return Place{Where: InModule, Table: fp, Off: a}
		}
		return Place{Where: NotMapped}
	}
	mem := memMap{0x7100: 0x7200, 0x7108: 0x1200, 0x7200: 0, 0x7208: 0x1300}
	frames, stop := Walk(AMD64, Regs{PC: 0x1100, SP: 0x7000, FP: 0x7100}, mem, loc, 64)
	if want := []uint64{0x1100, 0x1200, 0x1300}; !slices.Equal(frames, want) || stop != StopComplete {
		t.Errorf("frames %#x, stop %q; want %#x, complete", frames, stop, want)
	}
}
