package live

import (
	"unsafe"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// EVENT_HEADER flags used in conversion.
const (
	eventHeaderFlagExtendedInfo   = 0x0001
	eventHeaderFlag32BitHeader    = 0x0020
	eventHeaderFlag64BitHeader    = 0x0040
	eventHeaderFlagClassicHeader  = 0x0100
	eventHeaderFlagProcessorIndex = 0x0200
)

// item is one event copied out of the ETW callback: the record and the
// memory its UserData and Ext point into.
type item struct {
	rec  record.Record
	data []byte
	ext  []record.ExtItem
	seq  uint64 // arrival order, for the reorderer
	// await holds the item (an image load) in the reorderer until its
	// identity is read (images.go), or for one more window.
	await bool
}

// Convert copies the EVENT_RECORD er into the portable record rec, with
// its payload and extended items copied into *buf and *ext (grown as
// needed, reused across calls): rec stays valid after the callback
// returns, until buf and ext are reused. Kernel (classic) events keep the
// classic GUID of their class as Provider and are KindClassic; manifest
// and TraceLogging events are KindEvent.
func Convert(er *EventRecord, rec *record.Record, buf *[]byte, ext *[]record.ExtItem) {
	h := &er.EventHeader
	d := &h.EventDescriptor
	*rec = record.Record{
		Kind:       record.KindEvent,
		Provider:   record.GUID(h.ProviderID),
		Opcode:     d.Opcode,
		Version:    uint16(d.Version),
		ID:         d.ID,
		Level:      d.Level,
		Channel:    d.Channel,
		Task:       d.Task,
		Keyword:    d.Keyword,
		Flags:      h.Flags,
		ThreadID:   h.ThreadID,
		ProcessID:  h.ProcessID,
		Timestamp:  h.TimeStamp,
		FileOffset: -1,
		Buffer:     -1,
	}
	if h.Flags&eventHeaderFlagClassicHeader != 0 {
		rec.Kind = record.KindClassic
	}
	switch {
	case h.Flags&eventHeaderFlag32BitHeader != 0:
		rec.PointerSize = 4
	case h.Flags&eventHeaderFlag64BitHeader != 0:
		rec.PointerSize = 8
	default:
		rec.PointerSize = int(unsafe.Sizeof(uintptr(0)))
	}
	bc := &er.BufferContext
	if h.Flags&eventHeaderFlagProcessorIndex != 0 {
		rec.CPU = uint16(bc.ProcessorNumber) | uint16(bc.Alignment)<<8
	} else {
		rec.CPU = uint16(bc.ProcessorNumber)
	}

	// One copy of the payload and of every extended item, back to back.
	n := int(er.UserDataLength)
	var items []EventHeaderExtendedDataItem
	if er.ExtendedDataCount > 0 && er.ExtendedData != nil {
		items = unsafe.Slice((*EventHeaderExtendedDataItem)(er.ExtendedData), int(er.ExtendedDataCount))
		for i := range items {
			n += int(items[i].DataSize)
		}
	}
	b := *buf
	if cap(b) < n {
		b = make([]byte, n, n+n/2)
	}
	b = b[:0]
	if er.UserDataLength > 0 && er.UserData != nil {
		b = append(b, unsafe.Slice((*byte)(er.UserData), int(er.UserDataLength))...)
	}
	rec.UserData = b[:len(b):len(b)]
	e := (*ext)[:0]
	for i := range items {
		it := &items[i]
		start := len(b)
		if p := itemData(it); p != nil && it.DataSize > 0 {
			b = append(b, unsafe.Slice((*byte)(p), int(it.DataSize))...)
		}
		e = append(e, record.ExtItem{Type: it.ExtType, Data: b[start:len(b):len(b)]})
	}
	if len(e) > 0 {
		rec.Ext = e
	}
	*buf, *ext = b, e
}
