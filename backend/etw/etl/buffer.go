package etl

import "encoding/binary"

// BufferHeaderSize is the size of a WMI_BUFFER_HEADER, the same for 32-
// and 64-bit loggers. Records start right after it.
const BufferHeaderSize = 0x48

// Buffer flags (WMI_BUFFER_HEADER.BufferFlag, ETW_BUFFER_FLAG_*).
const (
	BufferFlagFlushMarker     = 0x0001
	BufferFlagEventsLost      = 0x0002
	BufferFlagBufferLost      = 0x0004
	BufferFlagRTBackupCorrupt = 0x0008
	BufferFlagRTBackup        = 0x0010
	BufferFlagProcIndex       = 0x0020
	BufferFlagCompressed      = 0x0040
)

// Buffer types (WMI_BUFFER_HEADER.BufferType, ETW_BUFFER_TYPE_*).
const (
	BufferTypeGeneric     = 0
	BufferTypeRundown     = 1
	BufferTypeCtxSwap     = 2
	BufferTypeRefTime     = 3
	BufferTypeHeader      = 4
	BufferTypeBatched     = 5
	BufferTypeEmptyMarker = 6
	BufferTypeDbgInfo     = 7
)

// CompressionXpress is the compression format of compressed buffers
// (COMPRESSION_FORMAT_XPRESS, MS-XCA plain LZ77).
const CompressionXpress = 3

// BufferHeader is a decoded WMI_BUFFER_HEADER.
type BufferHeader struct {
	// BufferSize is the size of the buffer in the file (the compressed
	// size for a compressed buffer); the next buffer starts that many
	// bytes further.
	BufferSize uint32
	// SavedOffset is the end of the used part, header included (the
	// uncompressed size for a compressed buffer); 0 in old files.
	SavedOffset uint32
	// CurrentOffset and Offset are the logger's fill positions; Offset
	// stands in for SavedOffset in old files.
	CurrentOffset uint32
	Offset        uint32
	// TimeStamp is when the buffer was flushed.
	TimeStamp int64
	// SequenceNumber orders the buffers of a logger.
	SequenceNumber int64
	// Processor is the processor whose events the buffer holds.
	Processor uint16
	// LoggerID is the session's logger id.
	LoggerID uint16
	// State is the ETW_BUFFER_STATE; in the header buffer of a compressed
	// file its low 16 bits are the compression format.
	State uint32
	// Flags are the BufferFlag* bits.
	Flags uint16
	// Type is the BufferType* of the buffer.
	Type uint16
}

// parseBufferHeader decodes b[:BufferHeaderSize].
func parseBufferHeader(b []byte) BufferHeader {
	_ = b[BufferHeaderSize-1]
	le := binary.LittleEndian
	h := BufferHeader{
		BufferSize:     le.Uint32(b[0x00:]),
		SavedOffset:    le.Uint32(b[0x04:]),
		CurrentOffset:  le.Uint32(b[0x08:]),
		TimeStamp:      int64(le.Uint64(b[0x10:])),
		SequenceNumber: int64(le.Uint64(b[0x18:])),
		LoggerID:       le.Uint16(b[0x2A:]),
		State:          le.Uint32(b[0x2C:]),
		Offset:         le.Uint32(b[0x30:]),
		Flags:          le.Uint16(b[0x34:]),
		Type:           le.Uint16(b[0x36:]),
	}
	if h.Flags&BufferFlagProcIndex != 0 {
		h.Processor = le.Uint16(b[0x28:]) & 0x07FF
	} else {
		h.Processor = uint16(b[0x28])
	}
	return h
}

// Compressed reports whether the buffer's records are XPRESS-compressed.
func (h *BufferHeader) Compressed() bool { return h.Flags&BufferFlagCompressed != 0 }

// Used returns the end of the used part of the buffer (header included):
// SavedOffset, or Offset in files that leave SavedOffset 0.
func (h *BufferHeader) Used() uint32 {
	if h.SavedOffset != 0 {
		return h.SavedOffset
	}
	return h.Offset
}

// BufferInfo is one entry of a Reader's buffer index.
type BufferInfo struct {
	// Index is the buffer's position in the file, from 0.
	Index int
	// FileOffset is where the buffer starts in the file.
	FileOffset int64
	BufferHeader
	// Truncated is set for the last buffer of a file cut short: only the
	// bytes present are read.
	Truncated bool
	// Duplicate is set for a buffer that repeats an earlier one, and for a
	// log-file header buffer past the first (a stray copy of a file's
	// start): it is not read.
	Duplicate bool
}
