package unwind

import "strconv"

// Stop says why a walk ended. The values are those of the BPF walker's
// (backend/ebpf/bpf/unwind.h, enum unwind_stop): a stack reports one
// whichever unwound it.
type Stop uint8

// Why a walk ended. StopComplete is the only end that leaves no frame
// missing.
const (
	StopComplete    Stop = iota // the outermost frame was reached
	StopDepth                   // the depth limit
	StopNoCFI                   // no CFI covers the address
	StopUnsupported             // a CFI rule tables do not represent
	StopSwitch                  // a function that switches stacks
	StopFPUnknown               // a rule needs the frame pointer, whose value was lost
	StopRead                    // the stack could not be read there (not resident, past a copy's end)
	StopBadAddress              // a return address in no executable mapping
	StopAnon                    // code in an anonymous executable mapping (JIT): no table
	StopNoTable                 // the module has no unwind information (none in the file, or unreadable)
	StopNotLoaded               // the module's table was not loaded yet (BPF)
	StopBackwards               // the caller's stack pointer is not above this frame's
	StopMapFull                 // the BPF walker's maps were full
	NumStops
)

var stopNames = [...]string{
	StopComplete:    "complete",
	StopDepth:       "the depth limit",
	StopNoCFI:       "code with no unwind information (CFI)",
	StopUnsupported: "an unwind rule not supported",
	StopSwitch:      "a function that switches stacks (Go runtime)",
	StopFPUnknown:   "the frame pointer's value was lost",
	StopRead:        "the stack could not be read",
	StopBadAddress:  "a return address outside executable memory or modules",
	StopAnon:        "code in anonymous executable memory (JIT)",
	StopNoTable:     "a module without unwind information",
	StopNotLoaded:   "a module whose unwind table was not loaded yet",
	StopBackwards:   "a frame whose caller's stack pointer is not above it",
	StopMapFull:     "the unwinder's maps were full",
}

func (s Stop) String() string {
	if s < NumStops {
		return stopNames[s]
	}
	return "stop(" + strconv.Itoa(int(s)) + ")"
}

// Regs are a thread's registers at its innermost frame.
type Regs struct {
	PC, SP, FP uint64
	LR         uint64 // arm64
}

// Memory reads a thread's stack.
type Memory interface {
	// Uint64 reads the 8 bytes at addr; ok is false when they cannot be
	// read.
	Uint64(addr uint64) (v uint64, ok bool)
}

// Where says what holds an address.
type Where uint8

// What holds an address.
const (
	InModule  Where = iota // a mapped file: Table (nil: no unwind information) and Off are set
	NotMapped              // no executable mapping
	Anonymous              // an anonymous executable mapping (JIT code)
	NotLoaded              // a mapped file whose table is not known yet
)

// Place is what holds an address.
type Place struct {
	Where Where
	Table *Table
	Off   uint64 // the address's file offset in the module
}

// Locator finds what holds an address of the thread's process.
type Locator func(addr uint64) Place

// Walk unwinds from regs: the frames (the innermost's PC, then return
// addresses), at most max, and why the walk ended. A frame is returned
// only once it is known to be code: a return address that falls in no
// executable mapping ends the walk before it (StopBadAddress).
func Walk(arch Arch, regs Regs, mem Memory, locate Locator, max int) ([]uint64, Stop) {
	var frames []uint64
	pc, sp, fp, lr := regs.PC, regs.SP, regs.FP, regs.LR
	fpKnown, ret := true, false
	for {
		if len(frames) >= max {
			return frames, StopDepth
		}
		look := pc
		if ret {
			look--
		}
		pl := locate(look)
		switch pl.Where {
		case NotMapped:
			return frames, StopBadAddress
		case Anonymous:
			return append(frames, pc), StopAnon
		case NotLoaded:
			return append(frames, pc), StopNotLoaded
		}
		frames = append(frames, pc)
		if pl.Table == nil || pl.Table.Kind == KindNone {
			return frames, StopNoTable
		}
		var r Rule
		if pl.Table.Kind == KindFramePointers {
			if !fpKnown {
				return frames, StopFPUnknown
			}
			if fp == 0 {
				return frames, StopComplete // the outermost frame's is 0
			}
			r = Rule{CFA: CFAFP, CFAOff: 16, FP: RegAtCFA, FPOff: -16, RA: RegAtCFA, RAOff: -8}
		} else {
			r = pl.Table.Lookup(pl.Off)
		}
		s := step(arch, r, frameRegs{pc: pc, sp: sp, fp: fp, lr: lr, fpKnown: fpKnown, first: len(frames) == 1}, mem)
		if s.stop != nil {
			return frames, *s.stop
		}
		if s.ra == 0 {
			return frames, StopComplete
		}
		pc, sp, fp, fpKnown, ret = s.ra, s.cfa, s.fp, s.fpKnown, !r.Signal
	}
}

// frameRegs are one frame's registers during a walk.
type frameRegs struct {
	pc, sp, fp, lr uint64
	fpKnown, first bool
}

// next is the caller's registers, or why there is none.
type next struct {
	cfa, ra, fp uint64
	fpKnown     bool
	stop        *Stop
}

func stopAt(s Stop) next { return next{stop: &s} }

// step applies rule r to frame f.
func step(arch Arch, r Rule, f frameRegs, mem Memory) next {
	switch r.CFA {
	case CFAStop:
		return stopAt(StopComplete)
	case CFANone:
		return stopAt(StopNoCFI)
	case CFAUnsupported:
		return stopAt(StopUnsupported)
	case CFASwitch:
		return stopAt(StopSwitch)
	}
	if (r.CFA == CFAFP || r.CFA == CFADerefFP || r.FP == RegAtFP || r.RA == RegAtFP) && !f.fpKnown {
		return stopAt(StopFPUnknown)
	}
	var cfa uint64
	switch r.CFA {
	case CFASP:
		cfa = f.sp + uint64(int64(r.CFAOff))
	case CFAFP:
		cfa = f.fp + uint64(int64(r.CFAOff))
	case CFAPLT:
		cfa = f.sp + uint64(int64(r.CFAOff))
		if f.pc&15 >= uint64(r.Threshold) {
			cfa += 8
		}
	case CFADerefSP, CFADerefFP:
		base := f.sp
		if r.CFA == CFADerefFP {
			base = f.fp
		}
		v, ok := mem.Uint64(base + uint64(int64(r.CFAOff)))
		if !ok {
			return stopAt(StopRead)
		}
		cfa = v
	}
	if !r.Signal && cfa <= f.sp {
		return stopAt(StopBackwards)
	}
	at := func(k RegKind, off int32) (uint64, bool) {
		switch k {
		case RegAtCFA:
			return mem.Uint64(cfa + uint64(int64(off)))
		case RegAtSP:
			return mem.Uint64(f.sp + uint64(int64(off)))
		case RegAtFP:
			return mem.Uint64(f.fp + uint64(int64(off)))
		}
		return 0, false
	}
	n := next{cfa: cfa, fp: f.fp, fpKnown: f.fpKnown}
	switch r.RA {
	case RegSame:
		// arm64: the return address is still in LR, which only the
		// innermost frame's registers hold.
		if arch != ARM64 || !f.first {
			return stopAt(StopUnsupported)
		}
		n.ra = f.lr
	default:
		v, ok := at(r.RA, r.RAOff)
		if !ok {
			return stopAt(StopRead)
		}
		n.ra = v
	}
	if arch == ARM64 {
		n.ra &= 1<<48 - 1 // pointer authentication bits
	}
	switch r.FP {
	case RegSame:
	case RegUnknown:
		n.fpKnown = false
	default:
		v, ok := at(r.FP, r.FPOff)
		if !ok {
			return stopAt(StopRead)
		}
		n.fp, n.fpKnown = v, true
	}
	return n
}
