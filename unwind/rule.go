package unwind

import (
	"fmt"
	"strconv"
)

// Arch is the instruction set a table's rules are for.
type Arch uint8

// Architectures.
const (
	AMD64 Arch = 1 // x86-64: SP rsp, FP rbp, return address on the stack
	ARM64 Arch = 2 // AArch64: SP sp, FP x29, return address in x30 (LR) or on the stack
)

func (a Arch) String() string {
	switch a {
	case AMD64:
		return "amd64"
	case ARM64:
		return "arm64"
	}
	return "arch(" + strconv.Itoa(int(a)) + ")"
}

// regs are an architecture's DWARF register numbers of the three
// registers tables track.
type regs struct {
	sp, fp, ra uint64
}

var archRegs = map[Arch]regs{
	AMD64: {sp: 7, fp: 6, ra: 16},
	ARM64: {sp: 31, fp: 29, ra: 30},
}

// CFAKind says how a rule finds the canonical frame address (CFA): the
// value of the stack pointer in the caller, before the call.
type CFAKind uint8

// CFA kinds. The kinds from CFAStop on end a walk.
const (
	CFASP      CFAKind = iota + 1 // CFA = SP + Off
	CFAFP                         // CFA = FP + Off
	CFADerefSP                    // CFA = *(SP + Off): a signal frame (the interrupted code's stack pointer)
	CFADerefFP                    // CFA = *(FP + Off): a function that realigned its stack
	CFAPLT                        // x86-64 PLT stub: CFA = SP + Off, plus 8 when (PC & 15) >= Threshold
	// CFAStop marks the outermost frame (the return address is
	// undefined: _start, a thread's start): a walk that reaches it is
	// complete.
	CFAStop
	// CFANone: no CFI covers the address.
	CFANone
	// CFAUnsupported: CFI covers the address with a rule tables do not
	// represent (the CFA in an untracked register, an expression not
	// recognised, an offset out of range).
	CFAUnsupported
	// CFASwitch: the function switches stacks (Go's systemstack, mcall,
	// asmcgocall, morestack): its caller is on another stack.
	CFASwitch
	numCFAKinds
)

// RegKind says how a rule recovers a register (the frame pointer, the
// return address) of the caller.
type RegKind uint8

// Register rule kinds.
const (
	// RegSame: the caller's value is this frame's (not saved). For the
	// return address on arm64: it is in LR.
	RegSame    RegKind = iota
	RegAtCFA           // saved at CFA + Off
	RegAtSP            // saved at SP + Off (this frame's SP: signal frames)
	RegAtFP            // saved at FP + Off
	RegUnknown         // not recoverable from memory (another register, an expression)
	numRegKinds
)

// Rule recovers the caller's stack pointer (the CFA), frame pointer and
// return address at one address.
type Rule struct {
	CFA       CFAKind
	Threshold uint8 // CFAPLT only
	// Signal marks a signal frame: the caller's PC was interrupted, not
	// a return address, so it is looked up as is (not one byte back).
	Signal bool
	CFAOff int32
	FP     RegKind
	FPOff  int32
	RA     RegKind
	RAOff  int32
}

// Ends reports whether the rule ends a walk at its frame.
func (r Rule) Ends() bool { return r.CFA >= CFAStop }

// String renders the rule for tests and errors, close to readelf's
// frames-interp columns: "rsp+8 rbp=c-16 ra=c-8".
func (r Rule) String() string {
	var cfa string
	switch r.CFA {
	case CFASP:
		cfa = "sp" + off(r.CFAOff)
	case CFAFP:
		cfa = "fp" + off(r.CFAOff)
	case CFADerefSP:
		cfa = "*(sp" + off(r.CFAOff) + ")"
	case CFADerefFP:
		cfa = "*(fp" + off(r.CFAOff) + ")"
	case CFAPLT:
		cfa = fmt.Sprintf("plt(sp%s,%d)", off(r.CFAOff), r.Threshold)
	case CFAStop:
		cfa = "stop"
	case CFANone:
		return "none"
	case CFAUnsupported:
		cfa = "unsupported"
	case CFASwitch:
		cfa = "switch"
	default:
		cfa = fmt.Sprintf("cfa(%d)", r.CFA)
	}
	s := cfa + " fp=" + reg(r.FP, r.FPOff) + " ra=" + reg(r.RA, r.RAOff)
	if r.Signal {
		s += " signal"
	}
	return s
}

func off(o int32) string {
	if o < 0 {
		return strconv.Itoa(int(o))
	}
	return "+" + strconv.Itoa(int(o))
}

func reg(k RegKind, o int32) string {
	switch k {
	case RegSame:
		return "s"
	case RegAtCFA:
		return "c" + off(o)
	case RegAtSP:
		return "sp" + off(o)
	case RegAtFP:
		return "fp" + off(o)
	case RegUnknown:
		return "u"
	}
	return fmt.Sprintf("reg(%d)", k)
}

// valid reports whether every field of r is in range (a table read
// from a file is checked with it).
func (r Rule) valid() bool {
	return r.CFA >= CFASP && r.CFA < numCFAKinds && r.FP < numRegKinds && r.RA < numRegKinds
}
