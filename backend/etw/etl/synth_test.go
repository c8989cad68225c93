package etl

import (
	"encoding/binary"
	"unicode/utf16"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/backend/etw/xpress"
)

// Builders of byte-exact synthetic ETL data, from the documented layouts,
// for the cases no shared fixture covers and for fuzz seeds.

var le = binary.LittleEndian

// kernelRecord builds a SYSTEM, COMPACT or PERFINFO record.
func kernelRecord(ht uint8, version uint16, group, opcode uint8, tid, pid uint32, ts int64, ext, payload []byte) []byte {
	var hdr int
	switch ht {
	case HeaderSystem32, HeaderSystem64:
		hdr = sizeSystem
	case HeaderCompact32, HeaderCompact64:
		hdr = sizeCompact
	default:
		hdr = sizePerfInfo
	}
	b := make([]byte, hdr, hdr+len(ext)+len(payload))
	le.PutUint16(b[0:], version)
	b[2], b[3] = ht, 0xC0
	le.PutUint16(b[4:], uint16(hdr+len(ext)+len(payload)))
	b[6], b[7] = opcode, group
	if hdr == sizePerfInfo {
		le.PutUint64(b[8:], uint64(ts))
	} else {
		le.PutUint32(b[8:], tid)
		le.PutUint32(b[12:], pid)
		le.PutUint64(b[16:], uint64(ts))
	}
	b = append(b, ext...)
	return append(b, payload...)
}

// classicRecord builds a FULL or INSTANCE record.
func classicRecord(ht uint8, guid record.GUID, opcode uint8, version uint16, tid, pid uint32, ts int64, payload []byte) []byte {
	hdr := sizeFull
	if ht == HeaderInstance32 || ht == HeaderInstance64 {
		hdr = sizeInstance
	}
	b := make([]byte, hdr, hdr+len(payload))
	le.PutUint16(b[0:], uint16(hdr+len(payload)))
	b[2], b[3] = ht, 0xC0
	b[4], b[5] = opcode, 4
	le.PutUint16(b[6:], version)
	le.PutUint32(b[8:], tid)
	le.PutUint32(b[12:], pid)
	le.PutUint64(b[16:], uint64(ts))
	putGUID(b[24:], guid)
	return append(b, payload...)
}

type extItem struct {
	typ  uint16
	data []byte
}

// eventRecord builds an EVENT_HEADER record with extended items.
func eventRecord(ht uint8, flags uint16, guid record.GUID, id uint16, version, opcode uint8, tid, pid uint32, ts int64, ext []extItem, payload []byte) []byte {
	b := make([]byte, sizeEvent)
	if len(ext) > 0 {
		flags |= EventHeaderFlagExtendedInfo
	}
	b[2], b[3] = ht, 0xC0
	le.PutUint16(b[4:], flags)
	le.PutUint32(b[8:], tid)
	le.PutUint32(b[12:], pid)
	le.PutUint64(b[16:], uint64(ts))
	putGUID(b[24:], guid)
	le.PutUint16(b[40:], id)
	b[42], b[43], b[44], b[45] = version, 11, 4, opcode
	le.PutUint16(b[46:], 7)
	le.PutUint64(b[48:], 0x8000000000000010)
	for i, e := range ext {
		item := make([]byte, 8+align8(len(e.data)))
		le.PutUint16(item[2:], e.typ)
		if i < len(ext)-1 {
			le.PutUint16(item[4:], 1)
		}
		le.PutUint16(item[6:], uint16(len(e.data)))
		copy(item[8:], e.data)
		b = append(b, item...)
	}
	b = append(b, payload...)
	le.PutUint16(b[0:], uint16(len(b)))
	return b
}

// messageRecord builds a TraceMessage record.
func messageRecord(msgNum, opts uint16, guid record.GUID, ts int64, tid, pid uint32, payload []byte) []byte {
	b := make([]byte, 8)
	b[3] = 0x90
	le.PutUint16(b[4:], msgNum)
	le.PutUint16(b[6:], opts)
	if opts&messageSequence != 0 {
		b = le.AppendUint32(b, 42)
	}
	if opts&messageGUID != 0 {
		var g [16]byte
		putGUID(g[:], guid)
		b = append(b, g[:]...)
	} else if opts&messageComponentID != 0 {
		b = le.AppendUint32(b, 7)
	}
	if opts&messageTimestamp != 0 {
		b = le.AppendUint64(b, uint64(ts))
	}
	if opts&messageSystemInfo != 0 {
		b = le.AppendUint32(b, tid)
		b = le.AppendUint32(b, pid)
	}
	b = append(b, payload...)
	le.PutUint16(b[0:], uint16(len(b)))
	return b
}

func putGUID(b []byte, g record.GUID) {
	le.PutUint32(b[0:], g.Data1)
	le.PutUint16(b[4:], g.Data2)
	le.PutUint16(b[6:], g.Data3)
	copy(b[8:16], g.Data4[:])
}

// synthHeader describes the TRACE_LOGFILE_HEADER of a synthetic file.
type synthHeader struct {
	ptr        int // 4 or 8
	clockType  uint32
	perfFreq   int64
	cpuMHz     uint32
	startTime  int64 // FILETIME
	headerTS   int64
	eventsLost uint32
	buffersLst uint32
	mode       uint32
	cpus       uint32
	build      uint32
	bufSize    uint32
	written    uint32
	logger     string
	file       string
}

func putUTF16z(s string) []byte {
	var b []byte
	for _, c := range utf16.Encode([]rune(s)) {
		b = le.AppendUint16(b, c)
	}
	return append(b, 0, 0)
}

// logfileHeaderRecord builds the SYSTEM EventTrace/Header record.
func logfileHeaderRecord(h synthHeader) []byte {
	l := layout64
	ht := uint8(HeaderSystem64)
	if h.ptr == 4 {
		l, ht = layout32, HeaderSystem32
	}
	p := make([]byte, l.names)
	le.PutUint32(p[0:], h.bufSize)
	p[4], p[5], p[6], p[7] = 10, 0, 1, 5
	le.PutUint32(p[8:], h.build)
	le.PutUint32(p[12:], h.cpus)
	le.PutUint64(p[16:], uint64(h.startTime+10_000_000))
	le.PutUint32(p[24:], 156250)
	le.PutUint32(p[32:], h.mode)
	le.PutUint32(p[36:], h.written)
	le.PutUint32(p[40:], 1)
	le.PutUint32(p[44:], uint32(h.ptr))
	le.PutUint32(p[48:], h.eventsLost)
	le.PutUint32(p[52:], h.cpuMHz)
	le.PutUint32(p[l.timeZone:], uint32(0xFFFFFFC4)) // bias -60
	copy(p[l.timeZone+4:], putUTF16z("W. Europe Standard Time"))
	le.PutUint64(p[l.bootTime:], uint64(h.startTime-36_000_000_000))
	le.PutUint64(p[l.perfFreq:], uint64(h.perfFreq))
	le.PutUint64(p[l.startTime:], uint64(h.startTime))
	le.PutUint32(p[l.reservedFlags:], h.clockType)
	le.PutUint32(p[l.buffersLost:], h.buffersLst)
	p = append(p, putUTF16z(h.logger)...)
	p = append(p, putUTF16z(h.file)...)
	return kernelRecord(ht, 2, 0, 0, 100, 200, h.headerTS, nil, p)
}

// synthBuffer builds one buffer of records (8-byte aligned), compressed
// when compress is set. size is the on-disk size of an uncompressed buffer
// (0: just large enough).
func synthBuffer(cpu uint16, seq int64, typ, flags uint16, size int, compress bool, recs ...[]byte) []byte {
	data := make([]byte, BufferHeaderSize)
	for _, r := range recs {
		data = append(data, r...)
		for len(data)%8 != 0 {
			data = append(data, 0)
		}
	}
	used := len(data)
	if compress {
		flags |= BufferFlagCompressed
		data = xpress.Compress(append([]byte(nil), data[:BufferHeaderSize]...), data[BufferHeaderSize:])
		size = len(data)
	} else if size < used {
		size = used
	}
	for len(data) < size {
		data = append(data, 0xFF)
	}
	le.PutUint32(data[0x00:], uint32(size))
	le.PutUint32(data[0x04:], uint32(used))
	le.PutUint32(data[0x08:], uint32(used))
	le.PutUint64(data[0x10:], 133000000000000000)
	le.PutUint64(data[0x18:], uint64(seq))
	flags |= BufferFlagProcIndex
	le.PutUint16(data[0x28:], cpu)
	le.PutUint32(data[0x2C:], CompressionXpress)
	le.PutUint32(data[0x30:], uint32(used))
	le.PutUint16(data[0x34:], flags)
	le.PutUint16(data[0x36:], typ)
	return data
}

// synthFile concatenates a header buffer (holding the log-file header
// record and extra records) and the given buffers.
func synthFile(h synthHeader, headerExtra [][]byte, buffers ...[]byte) []byte {
	if h.written == 0 { // the header counts the buffers the file holds
		h.written = uint32(1 + len(buffers))
	}
	recs := append([][]byte{logfileHeaderRecord(h)}, headerExtra...)
	out := synthBuffer(0, 0, BufferTypeHeader, BufferFlagFlushMarker, 0, false, recs...)
	for _, b := range buffers {
		out = append(out, b...)
	}
	return out
}

// defaultSynthHeader is a 64-bit QPC session.
func defaultSynthHeader() synthHeader {
	return synthHeader{
		ptr: 8, clockType: ClockTypeQPC, perfFreq: 10_000_000, cpuMHz: 3000,
		startTime: 133000000000000000, headerTS: 1_000_000, cpus: 4, build: 22631,
		bufSize: 4096, logger: "iotrace-test", file: `C:\t\x.etl`,
	}
}
