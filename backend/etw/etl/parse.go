package etl

import (
	"encoding/binary"
	"fmt"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// Record header types (TRACE_HEADER_TYPE_*), the third byte of every
// record.
const (
	HeaderSystem32      = 0x01
	HeaderSystem64      = 0x02
	HeaderCompact32     = 0x03
	HeaderCompact64     = 0x04
	HeaderFull32        = 0x0A
	HeaderInstance32    = 0x0B
	HeaderTimed         = 0x0C
	HeaderError         = 0x0D
	HeaderWnode         = 0x0E
	HeaderMessage       = 0x0F
	HeaderPerfInfo32    = 0x10
	HeaderPerfInfo64    = 0x11
	HeaderEventHeader32 = 0x12
	HeaderEventHeader64 = 0x13
	HeaderFull64        = 0x14
	HeaderInstance64    = 0x15
)

// HeaderTypeName returns the name of a TRACE_HEADER_TYPE_* value
// ("SYSTEM64", "EVENT_HEADER32", ...).
func HeaderTypeName(t uint8) string {
	switch t {
	case HeaderSystem32:
		return "SYSTEM32"
	case HeaderSystem64:
		return "SYSTEM64"
	case HeaderCompact32:
		return "COMPACT32"
	case HeaderCompact64:
		return "COMPACT64"
	case HeaderFull32:
		return "FULL32"
	case HeaderInstance32:
		return "INSTANCE32"
	case HeaderTimed:
		return "TIMED"
	case HeaderError:
		return "ERROR"
	case HeaderWnode:
		return "WNODE"
	case HeaderMessage:
		return "MESSAGE"
	case HeaderPerfInfo32:
		return "PERFINFO32"
	case HeaderPerfInfo64:
		return "PERFINFO64"
	case HeaderEventHeader32:
		return "EVENT_HEADER32"
	case HeaderEventHeader64:
		return "EVENT_HEADER64"
	case HeaderFull64:
		return "FULL64"
	case HeaderInstance64:
		return "INSTANCE64"
	}
	return fmt.Sprintf("type%#02x", t)
}

// Marker flag bits (the fourth byte of every record).
const (
	markerTraceHeader = 0x80 // TRACE_HEADER_FLAG
	markerEventTrace  = 0x40 // TRACE_HEADER_EVENT_TRACE
	markerMessage     = 0x10 // TRACE_MESSAGE
)

// EVENT_HEADER flags the reader interprets or sets.
const (
	EventHeaderFlagExtendedInfo = 0x0001
	EventHeaderFlag32BitHeader  = 0x0020
	EventHeaderFlag64BitHeader  = 0x0040
	EventHeaderFlagClassic      = 0x0100
)

// Extended data item types the reader creates for PERFINFO headers
// (EVENT_HEADER_EXT_TYPE_PEBS_INDEX, _PMC_COUNTERS).
const (
	ExtTypePEBSIndex   = 7
	ExtTypePMCCounters = 8
)

// TraceMessage option flags (TRACE_MESSAGE_*).
const (
	messageSequence    = 0x01
	messageGUID        = 0x02
	messageComponentID = 0x04
	messageTimestamp   = 0x08
	messageSystemInfo  = 0x20
	messagePointer32   = 0x40
	messagePointer64   = 0x80
)

// Fixed header sizes.
const (
	sizeSystem   = 0x20
	sizeCompact  = 0x18
	sizePerfInfo = 0x10
	sizeFull     = 0x30
	sizeInstance = 0x48
	sizeEvent    = 0x50
)

// parse results.
const (
	resRecord = iota // rec holds a record
	resSkip          // a record of a rare header type, skipped (counted)
	resEnd           // no more records in this buffer
	resFiller        // filler (zero or 0xFFFFFFFF) before the end of the used part
)

// fieldError is a malformed record: which field, at which position of the
// (uncompressed) buffer.
type fieldError struct {
	pos   int
	field string
	msg   string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

func errAt(pos int, field, format string, args ...any) *fieldError {
	return &fieldError{pos: pos, field: field, msg: fmt.Sprintf(format, args...)}
}

// recordParser decodes records; it owns the backing array of the Ext items
// it hands out.
type recordParser struct {
	ext []record.ExtItem
	// filePointerSize is the logger's pointer size, for message records
	// that do not state theirs.
	filePointerSize int
}

// parse decodes the record at data[pos:] into rec and returns its size in
// bytes (before the 8-byte alignment). lastTS is the timestamp given to
// message records that carry none.
func (p *recordParser) parse(data []byte, pos int, rec *record.Record, lastTS int64) (int, int, *fieldError) {
	rem := len(data) - pos
	if rem < 4 {
		return 0, resEnd, nil
	}
	b := data[pos:]
	le := binary.LittleEndian
	marker := b[3]
	if m := le.Uint32(b); m == 0 || m == 0xFFFFFFFF {
		// Filler: the logger left the rest of the buffer unused.
		return 0, resFiller, nil
	}
	if marker&markerTraceHeader == 0 {
		return 0, 0, errAt(pos, "record marker", "%#08x is not a record header (flag 0x80 missing)", le.Uint32(b))
	}
	ht := b[2]
	if marker&markerMessage != 0 && marker&markerEventTrace == 0 {
		return p.parseMessage(b, pos, rec, lastTS)
	}
	var size, hdr int
	switch ht {
	case HeaderSystem32, HeaderSystem64:
		hdr = sizeSystem
	case HeaderCompact32, HeaderCompact64:
		hdr = sizeCompact
	case HeaderPerfInfo32, HeaderPerfInfo64:
		hdr = sizePerfInfo
	case HeaderFull32, HeaderFull64:
		hdr = sizeFull
	case HeaderInstance32, HeaderInstance64:
		hdr = sizeInstance
	case HeaderEventHeader32, HeaderEventHeader64:
		hdr = sizeEvent
	default:
		// TIMED, ERROR, WNODE and unknown types: the size is the first
		// u16; skip the record.
		size = int(le.Uint16(b))
		if size < 4 || size > rem {
			return 0, 0, errAt(pos, "record size", "%d bytes (header type %#02x) with %d bytes left in the buffer", size, ht, rem)
		}
		return size, resSkip, nil
	}
	if rem < hdr {
		return 0, 0, errAt(pos, "record header", "%s header needs %d bytes, %d left in the buffer", HeaderTypeName(ht), hdr, rem)
	}
	switch ht {
	case HeaderSystem32, HeaderSystem64, HeaderCompact32, HeaderCompact64, HeaderPerfInfo32, HeaderPerfInfo64:
		size = int(le.Uint16(b[4:]))
	default:
		size = int(le.Uint16(b))
	}
	if size < hdr || size > rem {
		return 0, 0, errAt(pos, "record size", "%d bytes for a %s record (header %d bytes) with %d bytes left in the buffer", size, HeaderTypeName(ht), hdr, rem)
	}
	b = b[:size]
	rec.HeaderType = ht
	if rec.Ext != nil {
		rec.Ext = nil // no write barrier when it already is
	}
	rec.ID, rec.Level, rec.Channel, rec.Task, rec.Keyword = 0, 0, 0, 0, 0
	switch ht {
	case HeaderSystem32, HeaderSystem64, HeaderCompact32, HeaderCompact64:
		parseSystem(b, ht, rec)
	case HeaderPerfInfo32, HeaderPerfInfo64:
		if err := p.parsePerfInfo(b, pos, ht, rec); err != nil {
			return 0, 0, err
		}
	case HeaderFull32, HeaderFull64, HeaderInstance32, HeaderInstance64:
		parseClassic(b, ht, rec)
	case HeaderEventHeader32, HeaderEventHeader64:
		if err := p.parseEventHeader(b, pos, ht, rec); err != nil {
			return 0, 0, err
		}
	}
	return size, resRecord, nil
}

// parseSystem decodes a SYSTEM_TRACE_HEADER or its compact form (b is
// the record).
func parseSystem(b []byte, ht byte, rec *record.Record) {
	le := binary.LittleEndian
	rec.Kind = record.KindSystem
	hdr := sizeSystem
	if ht == HeaderCompact32 || ht == HeaderCompact64 {
		rec.Kind, hdr = record.KindCompact, sizeCompact
	}
	rec.Version = le.Uint16(b)
	rec.Opcode = b[6]
	rec.Group = b[7]
	rec.Provider = GroupGUID(rec.Group)
	rec.ThreadID = le.Uint32(b[8:])
	rec.ProcessID = le.Uint32(b[12:])
	rec.Timestamp = int64(le.Uint64(b[16:]))
	setKernelPointer(rec, ht == HeaderSystem32 || ht == HeaderCompact32)
	rec.UserData = b[hdr:]
}

// parsePerfInfo decodes a PERFINFO_TRACE_HEADER and the PEBS index and
// PMC counters its version bits announce (b is the record, at pos in the
// buffer).
func (p *recordParser) parsePerfInfo(b []byte, pos int, ht byte, rec *record.Record) *fieldError {
	le := binary.LittleEndian
	size := len(b)
	rec.Kind = record.KindPerfInfo
	v := le.Uint16(b)
	rec.Version = v &^ 0x8700
	rec.Opcode = b[6]
	rec.Group = b[7]
	rec.Provider = GroupGUID(rec.Group)
	rec.ThreadID, rec.ProcessID = record.NoID, record.NoID
	rec.Timestamp = int64(le.Uint64(b[8:]))
	setKernelPointer(rec, ht == HeaderPerfInfo32)
	off := sizePerfInfo
	p.ext = p.ext[:0]
	if v&0x8000 != 0 {
		if size-off < 8 {
			return errAt(pos+off, "PERFINFO PEBS index", "needs 8 bytes, record has %d left", size-off)
		}
		p.ext = append(p.ext, record.ExtItem{Type: ExtTypePEBSIndex, Data: b[off : off+8]})
		off += 8
	}
	if n := int(v>>8) & 7; n > 0 {
		if size-off < 8*n {
			return errAt(pos+off, "PERFINFO PMC counters", "%d counters need %d bytes, record has %d left", n, 8*n, size-off)
		}
		p.ext = append(p.ext, record.ExtItem{Type: ExtTypePMCCounters, Data: b[off : off+8*n]})
		off += 8 * n
	}
	if len(p.ext) > 0 {
		rec.Ext = p.ext
	}
	rec.UserData = b[off:]
	return nil
}

// parseClassic decodes an EVENT_TRACE_HEADER (a classic provider's) or
// its instance form (b is the record).
func parseClassic(b []byte, ht byte, rec *record.Record) {
	le := binary.LittleEndian
	rec.Kind = record.KindClassic
	hdr := sizeFull
	if ht == HeaderInstance32 || ht == HeaderInstance64 {
		rec.Kind, hdr = record.KindInstance, sizeInstance
	}
	rec.Opcode = b[4]
	rec.Level = b[5]
	rec.Version = le.Uint16(b[6:])
	rec.Group = 0
	rec.ThreadID = le.Uint32(b[8:])
	rec.ProcessID = le.Uint32(b[12:])
	rec.Timestamp = int64(le.Uint64(b[16:]))
	rec.Provider = record.GUIDFromBytes(b[24:])
	setKernelPointer(rec, ht == HeaderFull32 || ht == HeaderInstance32)
	rec.UserData = b[hdr:]
}

// parseEventHeader decodes an EVENT_HEADER (a manifest or TraceLogging
// provider's) and its extended data items (b is the record, at pos in
// the buffer).
func (p *recordParser) parseEventHeader(b []byte, pos int, ht byte, rec *record.Record) *fieldError {
	le := binary.LittleEndian
	size := len(b)
	rec.Kind = record.KindEvent
	flags := le.Uint16(b[4:])
	rec.Flags = flags
	rec.ThreadID = le.Uint32(b[8:])
	rec.ProcessID = le.Uint32(b[12:])
	rec.Timestamp = int64(le.Uint64(b[16:]))
	rec.Provider = record.GUIDFromBytes(b[24:])
	rec.Group = 0
	rec.ID = le.Uint16(b[40:])
	rec.Version = uint16(b[42])
	rec.Channel = b[43]
	rec.Level = b[44]
	rec.Opcode = b[45]
	rec.Task = le.Uint16(b[46:])
	rec.Keyword = le.Uint64(b[48:])
	switch {
	case flags&EventHeaderFlag32BitHeader != 0:
		rec.PointerSize = 4
	case flags&EventHeaderFlag64BitHeader != 0:
		rec.PointerSize = 8
	case ht == HeaderEventHeader32:
		rec.PointerSize = 4
	default:
		rec.PointerSize = 8
	}
	off := sizeEvent
	if flags&EventHeaderFlagExtendedInfo != 0 {
		p.ext = p.ext[:0]
		for {
			if size-off < 8 {
				return errAt(pos+off, "extended data item", "item header needs 8 bytes, record has %d left", size-off)
			}
			typ := le.Uint16(b[off+2:])
			link := le.Uint16(b[off+4:])
			n := int(le.Uint16(b[off+6:]))
			if size-off-8 < n {
				return errAt(pos+off, "extended data item size", "%d bytes (type %d), record has %d left", n, typ, size-off-8)
			}
			p.ext = append(p.ext, record.ExtItem{Type: typ, Data: b[off+8 : off+8+n]})
			off += 8 + align8(n)
			if off > size {
				off = size
			}
			if link&1 == 0 {
				break
			}
		}
		rec.Ext = p.ext
	}
	rec.UserData = b[off:]
	return nil
}

// setKernelPointer sets the pointer size and the 32/64-bit header flag of
// a non-EVENT_HEADER record from its header type.
func setKernelPointer(rec *record.Record, is32 bool) {
	if is32 {
		rec.PointerSize = 4
		rec.Flags = EventHeaderFlag32BitHeader | EventHeaderFlagClassic
	} else {
		rec.PointerSize = 8
		rec.Flags = EventHeaderFlag64BitHeader | EventHeaderFlagClassic
	}
}

// parseMessage decodes a TraceMessage (WPP) record: MESSAGE_TRACE_HEADER
// {u16 Size; u8 Reserved; u8 Flags; u16 MessageNumber; u16 OptionFlags},
// then, by option flag and in this order: sequence number, GUID or
// component id, timestamp, thread and process ids.
func (p *recordParser) parseMessage(b []byte, pos int, rec *record.Record, lastTS int64) (int, int, *fieldError) {
	le := binary.LittleEndian
	rem := len(b)
	if rem < 8 {
		return 0, 0, errAt(pos, "message header", "needs 8 bytes, %d left in the buffer", rem)
	}
	size := int(le.Uint16(b))
	if size < 8 || size > rem {
		return 0, 0, errAt(pos, "record size", "%d bytes for a message record with %d bytes left in the buffer", size, rem)
	}
	b = b[:size]
	opt := le.Uint16(b[6:])
	need := 8
	if opt&messageSequence != 0 {
		need += 4
	}
	if opt&messageGUID != 0 {
		need += 16
	} else if opt&messageComponentID != 0 {
		need += 4
	}
	if opt&messageTimestamp != 0 {
		need += 8
	}
	if opt&messageSystemInfo != 0 {
		need += 8
	}
	if size < need {
		return 0, 0, errAt(pos, "message header", "option flags %#x need %d bytes, record has %d", opt, need, size)
	}
	*rec = record.Record{
		Kind:        record.KindMessage,
		HeaderType:  HeaderMessage, // the byte itself is reserved (0)
		ID:          le.Uint16(b[4:]),
		PointerSize: p.filePointerSize,
		ThreadID:    record.NoID,
		ProcessID:   record.NoID,
		Timestamp:   lastTS,
	}
	switch {
	case opt&messagePointer32 != 0:
		rec.PointerSize = 4
	case opt&messagePointer64 != 0:
		rec.PointerSize = 8
	}
	setKernelPointer(rec, rec.PointerSize == 4)
	rec.Flags &^= EventHeaderFlagClassic
	off := 8
	if opt&messageSequence != 0 {
		off += 4
	}
	if opt&messageGUID != 0 {
		rec.Provider = record.GUIDFromBytes(b[off:])
		off += 16
	} else if opt&messageComponentID != 0 {
		off += 4 // a component id, not a GUID: Provider stays zero
	}
	if opt&messageTimestamp != 0 {
		rec.Timestamp = int64(le.Uint64(b[off:]))
		off += 8
	}
	if opt&messageSystemInfo != 0 {
		rec.ThreadID = le.Uint32(b[off:])
		rec.ProcessID = le.Uint32(b[off+4:])
		off += 8
	}
	rec.UserData = b[off:]
	return size, resRecord, nil
}

func align8(n int) int { return (n + 7) &^ 7 }
