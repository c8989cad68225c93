package kernel

import (
	"encoding/binary"
	"slices"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// StackWalk opcodes (kernel group 0x18, class
// def2fe46-7bd6-4b80-bd94-f57fe20d0ce3).
const (
	OpcodeStack          = 32 // Stack: a whole stack
	OpcodeStackKeyCreate = 34 // KeyCreate: a cache key's frames, when created
	OpcodeStackKeyDelete = 35 // KeyDelete: a cache key's frames, when evicted
	OpcodeStackKeyRundwn = 36 // KeyRundown: a cache key's frames, at the end of the session
	OpcodeStackKeyKernel = 37 // StackKeyKernel: the kernel part of an event's stack, by key
	OpcodeStackKeyUser   = 38 // StackKeyUser: the user part of an event's stack, by key
)

// StackWalk layouts (all versions; P is the record's pointer size):
//
//	Stack (32):        EventTimeStamp u64, StackProcess u32, StackThread u32,
//	                   then return addresses P to the end, innermost first
//	Key ref (37, 38):  EventTimeStamp u64, StackProcess u32, StackThread u32, StackKey P
//	Key def (34-36):   StackKey P, then return addresses P to the end
//
// A Stack follows the event it belongs to, with the event's timestamp and
// thread; so do key references (stack caching, "compressed stacks"),
// whose frames come in a key definition, usually later (when the key is
// evicted from the kernel's cache, or at the end of the session).

// Frames is a list of return addresses as logged: 4 or 8 bytes each. It
// aliases the record's payload.
type Frames struct {
	b   []byte
	ptr uint8
}

// Len returns the number of frames.
func (f Frames) Len() int {
	if f.ptr == 0 {
		return 0
	}
	return len(f.b) / int(f.ptr)
}

// At returns frame i.
func (f Frames) At(i int) uint64 {
	if f.ptr == 4 {
		return uint64(binary.LittleEndian.Uint32(f.b[4*i:]))
	}
	return binary.LittleEndian.Uint64(f.b[8*i:])
}

// PtrSize returns the size of one frame (4 or 8; 0 when empty).
func (f Frames) PtrSize() int { return int(f.ptr) }

// AppendTo appends the frames to dst.
func (f Frames) AppendTo(dst []uint64) []uint64 {
	n := f.Len()
	l := len(dst)
	dst = slices.Grow(dst, n)[:l+n]
	out := dst[l:]
	b := f.b
	if f.ptr == 4 {
		for i := range out {
			out[i] = uint64(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return dst
	}
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return dst
}

// stackHead is the length of the fixed part of a Stack or key reference.
const stackHead = 16

// The decoders of StackWalk records fill a StackWalk; the Event decoders
// of the table wrap them.

func swStack(k Key, b []byte, sw *StackWalk) error {
	if err := swHeader(k, b, sw); err != nil {
		return err
	}
	return swFrames(k, b, stackHead, sw)
}

func swHeader(k Key, b []byte, sw *StackWalk) error {
	if len(b) < stackHead {
		return &FieldError{Key: k, Field: "EventTimeStamp..StackThread", Offset: 0, Need: stackHead, Len: len(b)}
	}
	sw.StackTime = int64(binary.LittleEndian.Uint64(b))
	sw.Pid = binary.LittleEndian.Uint32(b[8:])
	sw.Tid = binary.LittleEndian.Uint32(b[12:])
	return nil
}

// swFrames takes the return addresses from b[off:]: a whole number of
// pointers, at least one.
func swFrames(k Key, b []byte, off int, sw *StackWalk) error {
	ps := int(k.PtrSize)
	if ps != 4 && ps != 8 {
		return &FieldError{Key: k, Field: "frames (pointer size)", Offset: off, Need: 8, Len: len(b)}
	}
	rest := len(b) - off
	if rest < ps || rest%ps != 0 {
		return &FieldError{Key: k, Field: "frames", Offset: off + rest - rest%ps, Need: ps, Len: len(b)}
	}
	sw.Frames = Frames{b: b[off:], ptr: uint8(ps)}
	return nil
}

func swKeyRef(k Key, b []byte, sw *StackWalk) error {
	if err := swHeader(k, b, sw); err != nil {
		return err
	}
	ps := int(k.PtrSize)
	if len(b) < stackHead+ps {
		return &FieldError{Key: k, Field: "StackKey", Offset: stackHead, Need: ps, Len: len(b)}
	}
	sw.StackKey = readPtr(b[stackHead:], ps)
	return nil
}

func swKeyDef(k Key, b []byte, sw *StackWalk) error {
	ps := int(k.PtrSize)
	if len(b) < ps {
		return &FieldError{Key: k, Field: "StackKey", Offset: 0, Need: ps, Len: len(b)}
	}
	sw.StackKey = readPtr(b, ps)
	return swFrames(k, b, ps, sw)
}

// eventFn adapts a StackWalk decoder to the table's Event decoders.
func eventFn(f func(Key, []byte, *StackWalk) error) func(Key, []byte, *Event) error {
	return func(k Key, b []byte, ev *Event) error {
		var sw StackWalk
		err := f(k, b, &sw)
		ev.StackTime, ev.Pid, ev.Tid, ev.StackKey, ev.Frames = sw.StackTime, sw.Pid, sw.Tid, sw.StackKey, sw.Frames
		return err
	}
}

var (
	decodeStack       = eventFn(swStack)
	decodeStackKeyRef = eventFn(swKeyRef)
	decodeStackKeyDef = eventFn(swKeyDef)
)

func readPtr(b []byte, ps int) uint64 {
	if ps == 4 {
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func addStackWalk(t *table) {
	for code, n := range map[uint16]string{
		OpcodeStack: "Stack", OpcodeStackKeyCreate: "KeyCreate", OpcodeStackKeyDelete: "KeyDelete",
		OpcodeStackKeyRundwn: "KeyRundown", OpcodeStackKeyKernel: "StackKeyKernel", OpcodeStackKeyUser: "StackKeyUser",
	} {
		t.name(ClassStackWalk, code, n)
	}
	vs := []uint16{0, 1, 2, 3}
	t.add(ClassStackWalk, []uint16{OpcodeStack}, vs, spec{kind: KindStack, fn: decodeStack})
	t.add(ClassStackWalk, []uint16{OpcodeStackKeyKernel, OpcodeStackKeyUser}, vs, spec{kind: KindStackKeyRef, fn: decodeStackKeyRef})
	t.add(ClassStackWalk, []uint16{OpcodeStackKeyCreate, OpcodeStackKeyDelete, OpcodeStackKeyRundwn}, vs,
		spec{kind: KindStackKeyDef, fn: decodeStackKeyDef})
}

// StackWalk is a decoded StackWalk record (DecodeStackWalk).
type StackWalk struct {
	Kind      Kind  // KindStack, KindStackKeyRef or KindStackKeyDef
	Opcode    uint8 // the record's opcode
	StackTime int64
	Pid, Tid  uint32
	StackKey  uint64
	Frames    Frames
}

// DecodeStackWalk decodes a StackWalk record (ClassOf(r) is
// ClassStackWalk) without the general Event: the hot path of a reader
// that takes every stack of a file. ok is false for an opcode iotrace
// does not know; err is a *FieldError for a payload too short.
func DecodeStackWalk(r *record.Record) (sw StackWalk, ok bool, err error) {
	k := Key{Class: ClassStackWalk, Code: uint16(r.Opcode), Version: r.Version, PtrSize: uint8(r.PointerSize)}
	sw.Opcode = r.Opcode
	if r.Version > 3 {
		return sw, false, nil
	}
	switch r.Opcode {
	case OpcodeStack:
		sw.Kind = KindStack
		err = swStack(k, r.UserData, &sw)
	case OpcodeStackKeyKernel, OpcodeStackKeyUser:
		sw.Kind = KindStackKeyRef
		err = swKeyRef(k, r.UserData, &sw)
	case OpcodeStackKeyCreate, OpcodeStackKeyDelete, OpcodeStackKeyRundwn:
		sw.Kind = KindStackKeyDef
		err = swKeyDef(k, r.UserData, &sw)
	default:
		return sw, false, nil
	}
	return sw, true, err
}
