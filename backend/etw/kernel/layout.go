package kernel

import (
	"encoding/binary"

	"github.com/iotrace/iotrace/event"
)

// ftype is the wire type of a payload field.
type ftype uint8

const (
	tPtr    ftype = iota // pointer: 4 or 8 bytes by the record's pointer size
	tU8                  // 1 byte
	tU16                 // 2 bytes
	tU32                 // 4 bytes
	tU64                 // 8 bytes
	tWStr                // NUL-terminated UTF-16LE string
	tAStr                // NUL-terminated ANSI string
	tSID                 // TOKEN_USER followed by a SID, or a 4-byte 0
	tRawSID              // a SID alone (manifest events): 8 bytes + 4 per sub-authority
	tFixedW              // UTF-16LE array of n code units, NUL-padded
	tSkip                // n bytes not decoded
)

// dest is where a field goes in an Event.
type dest uint8

const (
	dNone dest = iota
	dIrp
	dFileObject
	dFileKey
	dTTID
	dOffset
	dSize
	dIOFlags
	dInfoClass
	dFileIndex
	dExtraInfo
	dCreateOptions
	dAttributes
	dShare
	dStatus
	dDisk
	dPartition
	dResponse
	dPid
	dPPid
	dTid
	dSession
	dExitStatus
	dImageBase
	dImageSize
	dProcessors
	dMHz
	dName
	dName2
	dImageFileName
	dTimeDateStamp
	dChecksum
)

// field is one payload field of a layout.
type field struct {
	name string
	t    ftype
	n    int // code units of tFixedW, bytes of tSkip
	d    dest
}

// Shorthands that keep layouts readable.
func ptr(name string, d dest) field  { return field{name: name, t: tPtr, d: d} }
func u8(name string, d dest) field   { return field{name: name, t: tU8, d: d} }
func u16(name string, d dest) field  { return field{name: name, t: tU16, d: d} }
func u32(name string, d dest) field  { return field{name: name, t: tU32, d: d} }
func u64(name string, d dest) field  { return field{name: name, t: tU64, d: d} }
func wstr(name string, d dest) field { return field{name: name, t: tWStr, d: d} }
func astr(name string, d dest) field { return field{name: name, t: tAStr, d: d} }
func sid(name string) field          { return field{name: name, t: tSID} }
func rawSID(name string) field       { return field{name: name, t: tRawSID} }
func fixedW(name string, n int, d dest) field {
	return field{name: name, t: tFixedW, n: n, d: d}
}
func skip(name string, n int) field { return field{name: name, t: tSkip, n: n} }

// spec describes how to decode one (class, code, version, pointer size).
type spec struct {
	native string
	kind   Kind
	op     event.Op
	phase  Phase
	fields []field
	// fn, when set, decodes instead of fields.
	fn func(k Key, b []byte, ev *Event) error
}

// walk decodes b by fields into ev. Fields after the last one a layout
// lists are ignored (newer versions append fields). The last string of a
// payload may lack its terminator.
func walk(k Key, fields []field, b []byte, ev *Event) error {
	le := binary.LittleEndian
	off := 0
	ps := int(k.PtrSize)
	for i := range fields {
		f := &fields[i]
		var v uint64
		switch f.t {
		case tPtr, tU8, tU16, tU32, tU64:
			var n int
			switch f.t {
			case tPtr:
				n = ps
			case tU8:
				n = 1
			case tU16:
				n = 2
			case tU32:
				n = 4
			default:
				n = 8
			}
			if off+n > len(b) || off+n < off {
				return &FieldError{Key: k, Field: f.name, Offset: off, Need: n, Len: len(b)}
			}
			switch n {
			case 1:
				v = uint64(b[off])
			case 2:
				v = uint64(le.Uint16(b[off:]))
			case 4:
				v = uint64(le.Uint32(b[off:]))
			default:
				v = le.Uint64(b[off:])
			}
			off += n
			if f.d != dNone {
				setNum(ev, f.d, v)
			}
		case tWStr:
			if off > len(b) {
				return &FieldError{Key: k, Field: f.name, Offset: off, Len: len(b)}
			}
			s, next := scanW(b, off)
			off = next
			setStr(ev, f.d, s)
		case tAStr:
			if off > len(b) {
				return &FieldError{Key: k, Field: f.name, Offset: off, Len: len(b)}
			}
			s, next := scanA(b, off)
			off = next
			if f.d == dImageFileName {
				ev.ImageFileName = AStr(s)
			}
		case tSID:
			next, err := skipSID(k, f.name, b, off)
			if err != nil {
				return err
			}
			off = next
		case tRawSID:
			if off+8 > len(b) {
				return &FieldError{Key: k, Field: f.name, Offset: off, Need: 8, Len: len(b)}
			}
			n := 8 + 4*int(b[off+1])
			if off+n > len(b) {
				return &FieldError{Key: k, Field: f.name, Offset: off, Need: n, Len: len(b)}
			}
			off += n
		case tFixedW:
			n := 2 * f.n
			if off+n > len(b) {
				return &FieldError{Key: k, Field: f.name, Offset: off, Need: n, Len: len(b)}
			}
			s := b[off : off+n]
			for j := 0; j+1 < len(s); j += 2 {
				if s[j] == 0 && s[j+1] == 0 {
					s = s[:j]
					break
				}
			}
			off += n
			setStr(ev, f.d, s)
		case tSkip:
			if off+f.n > len(b) {
				return &FieldError{Key: k, Field: f.name, Offset: off, Need: f.n, Len: len(b)}
			}
			off += f.n
		}
	}
	return nil
}

// scanW returns the UTF-16 string at b[off:] without its terminator and
// the offset after the terminator (or len(b) when there is none).
func scanW(b []byte, off int) ([]byte, int) {
	// Four UTF-16 units at a time while a word is left: a unit is zero
	// when its lane of x has no bit set, which (x - lows) &^ x has the
	// top bit of for the first such lane (the units before it are
	// nonzero, so no borrow reaches it). The units are then looked at
	// one by one from that word on.
	j := off
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		if (x-0x0001000100010001)&^x&0x8000800080008000 != 0 {
			break
		}
	}
	for ; j+1 < len(b); j += 2 {
		if b[j] == 0 && b[j+1] == 0 {
			return b[off:j], j + 2
		}
	}
	end := off + (len(b)-off)&^1
	return b[off:end], len(b)
}

// scanA returns the ANSI string at b[off:] and the offset after its NUL.
func scanA(b []byte, off int) ([]byte, int) {
	for j := off; j < len(b); j++ {
		if b[j] == 0 {
			return b[off:j], j + 1
		}
	}
	return b[off:], len(b)
}

// skipSID skips a kernel event's UserSID: a 4-byte 0 when there is no
// token, else a TOKEN_USER (two pointers) followed by a SID of 8 bytes plus
// 4 per sub-authority.
func skipSID(k Key, name string, b []byte, off int) (int, error) {
	if off+4 > len(b) {
		return 0, &FieldError{Key: k, Field: name, Offset: off, Need: 4, Len: len(b)}
	}
	if binary.LittleEndian.Uint32(b[off:]) == 0 {
		return off + 4, nil
	}
	tok := 2 * int(k.PtrSize)
	if off+tok+8 > len(b) {
		return 0, &FieldError{Key: k, Field: name, Offset: off, Need: tok + 8, Len: len(b)}
	}
	subs := int(b[off+tok+1])
	n := tok + 8 + 4*subs
	if off+n > len(b) {
		return 0, &FieldError{Key: k, Field: name, Offset: off, Need: n, Len: len(b)}
	}
	return off + n, nil
}

func setNum(ev *Event, d dest, v uint64) {
	switch d {
	case dIrp:
		ev.Irp = v
	case dFileObject:
		ev.FileObject = v
	case dFileKey:
		ev.FileKey = v
	case dTTID:
		ev.TTID = uint32(v)
		ev.HasTTID = true
	case dOffset:
		ev.Offset = v
	case dSize:
		ev.Size = uint32(v)
	case dIOFlags:
		ev.IOFlags = uint32(v)
	case dInfoClass:
		ev.InfoClass = uint32(v)
	case dFileIndex:
		ev.FileIndex = uint32(v)
	case dExtraInfo:
		ev.ExtraInfo = v
	case dCreateOptions:
		ev.CreateOptions = uint32(v)
	case dAttributes:
		ev.Attributes = uint32(v)
	case dShare:
		ev.ShareAccess = uint32(v)
	case dStatus:
		ev.Status = uint32(v)
	case dDisk:
		ev.Disk = uint32(v)
	case dPartition:
		ev.Partition = uint32(v)
	case dResponse:
		ev.ResponseTime = v
	case dPid:
		ev.Pid = uint32(v)
	case dPPid:
		ev.PPid = uint32(v)
	case dTid:
		ev.Tid = uint32(v)
	case dSession:
		ev.SessionID = uint32(v)
	case dExitStatus:
		ev.ExitStatus = uint32(v)
	case dImageBase:
		ev.ImageBase = v
	case dTimeDateStamp:
		ev.TimeDateStamp = uint32(v)
	case dChecksum:
		ev.Checksum = uint32(v)
	case dImageSize:
		ev.ImageSize = v
	case dProcessors:
		ev.Processors = uint32(v)
	case dMHz:
		ev.MHz = uint32(v)
	}
}

func setStr(ev *Event, d dest, s []byte) {
	switch d {
	case dName:
		ev.Name = WStr(s)
	case dName2:
		ev.Name2 = WStr(s)
	}
}
