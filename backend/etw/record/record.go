// Package record defines the portable ETW event record: what the ETL file
// reader produces from a file and what the live Windows session produces
// from an EVENT_RECORD, so that the same decoders serve both.
package record

import (
	"encoding/binary"
	"fmt"
)

// GUID is a Windows GUID in its in-memory layout.
type GUID struct {
	Data1 uint32
	Data2 uint16
	Data3 uint16
	Data4 [8]byte
}

// GUIDFromBytes decodes a little-endian in-memory GUID from b[0:16].
func GUIDFromBytes(b []byte) GUID {
	var g GUID
	g.Data1 = binary.LittleEndian.Uint32(b)
	g.Data2 = binary.LittleEndian.Uint16(b[4:])
	g.Data3 = binary.LittleEndian.Uint16(b[6:])
	copy(g.Data4[:], b[8:16])
	return g
}

// String renders the GUID in the registry form without braces.
func (g GUID) String() string {
	return fmt.Sprintf("%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		g.Data1, g.Data2, g.Data3, g.Data4[0], g.Data4[1], g.Data4[2], g.Data4[3],
		g.Data4[4], g.Data4[5], g.Data4[6], g.Data4[7])
}

// Kind is the family of header a record was logged with.
type Kind uint8

// Record kinds.
const (
	KindUnknown  Kind = iota
	KindSystem        // SYSTEM32/64 kernel header (with TID/PID and CPU times)
	KindCompact       // COMPACT32/64 kernel header
	KindPerfInfo      // PERFINFO32/64 kernel header: no TID/PID
	KindClassic       // FULL_HEADER (EVENT_TRACE_HEADER): classic / MOF event
	KindInstance      // INSTANCE header: classic event with instance ids
	KindEvent         // EVENT_HEADER: manifest or TraceLogging event
	KindMessage       // TraceMessage / WPP
)

var kindNames = [...]string{"unknown", "system", "compact", "perfinfo", "classic", "instance", "event", "message"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// NoID is the ThreadID/ProcessID of records whose header carries none
// (PERFINFO headers), as consumers of the OS API see it.
const NoID = ^uint32(0)

// Record is one decoded ETW event header plus its payload. UserData and
// the Ext items alias the reader's buffer and are valid only until the
// next record is read; Clone what must outlive it.
type Record struct {
	Kind Kind
	// HeaderType is the raw TRACE_HEADER_TYPE_* byte (0 for live records).
	HeaderType uint8
	// Provider is the provider GUID; for kernel headers, the classic GUID
	// of the event group (FileIo, DiskIo, ...).
	Provider GUID
	// Group is the kernel event group (1 DiskIo, 4 FileIo, ...) for
	// System/Compact/PerfInfo records; 0 otherwise.
	Group uint8
	// Opcode is the event type (kernel Type byte, EVENT_DESCRIPTOR.Opcode,
	// EVENT_TRACE_HEADER Class.Type).
	Opcode uint8
	// Version is the event version (kernel header Version, descriptor
	// Version, Class.Version).
	Version uint16
	// ID is the EVENT_DESCRIPTOR.Id of EVENT_HEADER records; 0 otherwise.
	ID uint16
	// Level, Channel, Task and Keyword come from the EVENT_DESCRIPTOR.
	Level   uint8
	Channel uint8
	Task    uint16
	Keyword uint64
	// Flags are the EVENT_HEADER flags (EVENT_HEADER_FLAG_*); for kernel
	// headers the reader sets the 32/64-bit flag from the header type.
	Flags uint16
	// PointerSize of the payload: 4 or 8, per record.
	PointerSize int
	// ThreadID and ProcessID of the logging context, NoID when absent.
	ThreadID, ProcessID uint32
	// Timestamp is the raw timestamp in the session's clock.
	Timestamp int64
	// CPU is the processor the record was logged on.
	CPU uint16
	// Ext are the extended data items of EVENT_HEADER records.
	Ext []ExtItem
	// UserData is the payload.
	UserData []byte
	// FileOffset is where the record starts in its file (-1 when live);
	// Buffer is the index of its buffer. Both are for error messages.
	FileOffset int64
	Buffer     int
}

// Clone returns a copy of r that owns its UserData and Ext data, so that
// it outlives the reader's buffer.
func (r *Record) Clone() Record {
	c := *r
	c.UserData = append([]byte(nil), r.UserData...)
	c.Ext = nil
	for _, e := range r.Ext {
		c.Ext = append(c.Ext, ExtItem{Type: e.Type, Data: append([]byte(nil), e.Data...)})
	}
	return c
}

// ExtItem is one EVENT_HEADER_EXTENDED_DATA_ITEM.
type ExtItem struct {
	Type uint16
	Data []byte
}

// Kernel event groups (the high byte of a kernel HookId).
const (
	GroupEventTrace   = 0x00
	GroupDiskIo       = 0x01
	GroupProcess      = 0x03
	GroupFileIo       = 0x04
	GroupThread       = 0x05
	GroupSystemConfig = 0x0B
	GroupPerfInfo     = 0x0F
	GroupImage        = 0x14
	GroupStackWalk    = 0x18
)
