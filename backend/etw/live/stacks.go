package live

import (
	"encoding/binary"
	"fmt"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
)

// Stack walks on live sessions (--stacks).
//
// The kernel walks the stack itself: TraceSetInformation
// (TraceStackTracingInfo) names the kernel events to walk, and each of
// them is followed in the session by a StackWalk event (class
// StackWalkGUID, opcode 32: EventTimeStamp u64, StackProcess u32,
// StackThread u32, then the return addresses, innermost first, of the
// event's pointer size) with the timestamp and thread of the event it
// belongs to. The pipeline joins the two (package etw), as it does for
// an .etl file.
//
// Windows walks the kernel frames and then, when the thread came from
// user mode, its user frames, in one walk: it cannot be asked for one
// part only. --stacks both keeps the whole walk; --stacks user and
// --stacks kernel keep only the frames above or below the kernel's
// address boundary (the top half of the address space on 64-bit
// Windows), dropped from each StackWalk record before it is decoded; the
// kernel's cost is the same for the three. A walk left with no frame
// (--stacks user on a system thread) is dropped and counted. The user
// part of a kernel event's stack is often walked later, when the thread
// returns to user mode: under --stacks user a user process's kernel-only
// walk is passed on whole so that the pipeline holds the event for its
// user part (etw.Options.UserStacksOnly drops the kernel frames then);
// under --stacks kernel the pipeline waits for none
// (etw.Options.KernelStacksOnly).

// StackWalkGUID is the class GUID of the kernel's StackWalk events
// (def2fe46-7bd6-4b80-bd94-f57fe20d0ce3).
var StackWalkGUID = GUID{0xdef2fe46, 0x7bd6, 0x4b80, [8]byte{0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3}}

// OpcodeStackWalk is the opcode of a StackWalk event (StackWalk_Event).
const OpcodeStackWalk = 32

// stackWalkHeader is the size of a StackWalk event's fixed part.
const stackWalkHeader = 16

// Stack counter names.
const (
	StatStackWalks       = "etw: stack walks received"
	StatStackWalksNoPart = "etw: stack walks with none of the frames --stacks asked for (user frames of a system thread, or kernel frames of none): dropped"
)

// StackEvents returns the kernel events --stacks walks the stack of: the
// FileIo requests the pipeline turns into events and the DiskIo Init
// events (the issuer's stack, which the pipeline gives the disk I/O). Not
// the disk completions: they run in interrupt context, their stack is
// whatever the interrupt found running, and the pipeline keeps the
// Init's; a walk there would cost as much and be dropped.
func StackEvents() []ClassicEventID {
	var ids []ClassicEventID
	add := func(g record.GUID, ops ...uint8) {
		for _, op := range ops {
			ids = append(ids, ClassicEventID{EventGUID: GUID(g), Type: op})
		}
	}
	add(kernel.GUIDFileIo,
		kernel.OpcodeCreate, kernel.OpcodeCleanup, kernel.OpcodeClose, kernel.OpcodeRead, kernel.OpcodeWrite,
		kernel.OpcodeSetInfo, kernel.OpcodeDelete, kernel.OpcodeRename, kernel.OpcodeDirEnum, kernel.OpcodeFlush,
		kernel.OpcodeQueryInfo, kernel.OpcodeFSControl, kernel.OpcodeDirNotify, kernel.OpcodeDeletePath,
		kernel.OpcodeRenamePath, kernel.OpcodeSetLinkPath)
	add(kernel.GUIDDiskIo, kernel.OpcodeDiskReadInit, kernel.OpcodeDiskWriteInit, kernel.OpcodeDiskFlushInit)
	return ids
}

// enableStacks asks session h (named name) for stack walks on ids; the
// error says why it refused.
func enableStacks(api API, h SessionHandle, name string, ids []ClassicEventID) error {
	if len(ids) == 0 {
		return nil
	}
	if err := api.SetStackTracing(h, ids); err != nil {
		return fmt.Errorf("--stacks: ask ETW session %q for stack walks on %d kernel events (TraceSetInformation): %w", name, len(ids), err)
	}
	return nil
}

// stackFilter keeps the part of each StackWalk record that --stacks asks
// for.
type stackFilter struct {
	user, kernel bool
	walks        uint64 // StackWalk records seen
	noPart       uint64 // records left without frames, dropped
}

// newStackFilter returns the filter for s (nil for none).
func newStackFilter(s backend.Stacks) *stackFilter {
	if s == backend.StacksNone {
		return nil
	}
	return &stackFilter{user: s&backend.StacksUser != 0, kernel: s&backend.StacksKernel != 0}
}

// isStackWalk reports whether r is a kernel StackWalk event.
func isStackWalk(r *record.Record) bool {
	return r.Opcode == OpcodeStackWalk && r.Provider == record.GUID(StackWalkGUID)
}

// kernelAddress reports whether a is in the kernel's half of the address
// space for pointer size p (64-bit: the top bit; 32-bit: above 2 GiB).
func kernelAddress(a uint64, p int) bool {
	if p == 4 {
		return a >= 0x80000000
	}
	return a>>63 != 0
}

// apply trims r's frames in place to those asked for and reports whether
// r is still to be decoded. A record too short to hold a stack is left
// whole for the decoder to count.
func (f *stackFilter) apply(r *record.Record) bool {
	f.walks++
	if f.user && f.kernel {
		return true
	}
	p := r.PointerSize
	if p != 4 && p != 8 {
		return true
	}
	b := r.UserData
	if len(b) < stackWalkHeader {
		return true
	}
	if f.user && !f.kernel && kernelOnlyWalk(b, p) {
		// Its user part comes later, when the thread returns to user
		// mode (the System process's threads never do): the pipeline
		// holds the event for it and drops these frames
		// (etw.Options.UserStacksOnly).
		if sp := binary.LittleEndian.Uint32(b[8:]); sp != 0 && sp != 4 {
			return true
		}
		f.noPart++
		return false
	}
	out := stackWalkHeader
	for i := stackWalkHeader; i+p <= len(b); i += p {
		var a uint64
		if p == 8 {
			a = binary.LittleEndian.Uint64(b[i:])
		} else {
			a = uint64(binary.LittleEndian.Uint32(b[i:]))
		}
		if kernelAddress(a, p) == f.kernel {
			copy(b[out:], b[i:i+p])
			out += p
		}
	}
	if out == stackWalkHeader {
		f.noPart++
		return false
	}
	r.UserData = b[:out:out]
	return true
}

// kernelOnlyWalk reports whether the StackWalk payload b (pointer size p)
// has frames and all of them in the kernel's half.
func kernelOnlyWalk(b []byte, p int) bool {
	n := 0
	for i := stackWalkHeader; i+p <= len(b); i += p {
		a := uint64(binary.LittleEndian.Uint32(b[i:]))
		if p == 8 {
			a = binary.LittleEndian.Uint64(b[i:])
		}
		if !kernelAddress(a, p) {
			return false
		}
		n++
	}
	return n > 0
}
