package kernel

import "encoding/binary"

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
	for i, n := 0, f.Len(); i < n; i++ {
		dst = append(dst, f.At(i))
	}
	return dst
}

// stackHead is the length of the fixed part of a Stack or key reference.
const stackHead = 16

func decodeStack(k Key, b []byte, ev *Event) error {
	if err := stackHeader(k, b, ev); err != nil {
		return err
	}
	return frames(k, b, stackHead, ev)
}

func stackHeader(k Key, b []byte, ev *Event) error {
	if len(b) < stackHead {
		return &FieldError{Key: k, Field: "EventTimeStamp..StackThread", Offset: 0, Need: stackHead, Len: len(b)}
	}
	ev.StackTime = int64(binary.LittleEndian.Uint64(b))
	ev.Pid = binary.LittleEndian.Uint32(b[8:])
	ev.Tid = binary.LittleEndian.Uint32(b[12:])
	return nil
}

// frames takes the return addresses from b[off:]: a whole number of
// pointers, at least one.
func frames(k Key, b []byte, off int, ev *Event) error {
	ps := int(k.PtrSize)
	if ps != 4 && ps != 8 {
		return &FieldError{Key: k, Field: "frames (pointer size)", Offset: off, Need: 8, Len: len(b)}
	}
	rest := len(b) - off
	if rest < ps || rest%ps != 0 {
		return &FieldError{Key: k, Field: "frames", Offset: off + rest - rest%ps, Need: ps, Len: len(b)}
	}
	ev.Frames = Frames{b: b[off:], ptr: uint8(ps)}
	return nil
}

func decodeStackKeyRef(k Key, b []byte, ev *Event) error {
	if err := stackHeader(k, b, ev); err != nil {
		return err
	}
	ps := int(k.PtrSize)
	if len(b) < stackHead+ps {
		return &FieldError{Key: k, Field: "StackKey", Offset: stackHead, Need: ps, Len: len(b)}
	}
	ev.StackKey = readPtr(b[stackHead:], ps)
	return nil
}

func decodeStackKeyDef(k Key, b []byte, ev *Event) error {
	ps := int(k.PtrSize)
	if len(b) < ps {
		return &FieldError{Key: k, Field: "StackKey", Offset: 0, Need: ps, Len: len(b)}
	}
	ev.StackKey = readPtr(b, ps)
	return frames(k, b, ps, ev)
}

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
