package etw

import "encoding/binary"

// LooksLikeETL reports whether a file beginning with head is an ETL file:
// its first WMI_BUFFER_HEADER (0x48 bytes) has BufferType 4 (header), and
// the first record is the EventTrace header logged with a kernel SYSTEM
// header (32- or 64-bit, flags 0xC0, group 0, type 0).
func LooksLikeETL(head []byte) bool {
	if len(head) < 0x50 {
		return false
	}
	le := binary.LittleEndian
	if le.Uint16(head[0x36:]) != 4 { // BufferType: header
		return false
	}
	typ, flags := head[0x4A], head[0x4B]
	if (typ != 0x01 && typ != 0x02) || flags&0xC0 != 0xC0 {
		return false
	}
	return head[0x4E] == 0 && head[0x4F] == 0 // EventTrace group, Header type
}
