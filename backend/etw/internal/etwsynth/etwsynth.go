// Package etwsynth builds byte-exact synthetic kernel ETW records and .etl
// files for tests, from the layouts in docs/etw.md, written field by field
// (not through the decoders' tables). It serves the tests of package etw
// (the pipeline, reading files) and of package live (the fake session's
// events, and the .etl a recording through the fake would have written),
// which cannot share unexported test helpers. Only 64-bit records and
// files are built.
package etwsynth

import (
	"encoding/binary"
	"sort"
	"unicode/utf16"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
)

type buf []byte

func (b buf) u32(v uint32) buf { return binary.LittleEndian.AppendUint32(b, v) }
func (b buf) u64(v uint64) buf { return binary.LittleEndian.AppendUint64(b, v) }
func (b buf) wstr(s string) buf {
	for _, c := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return binary.LittleEndian.AppendUint16(b, 0)
}
func (b buf) astr(s string) buf { return append(append(b, s...), 0) }

// Recs accumulates 64-bit records as an .etl reader or a live session
// gives them: kernel records with their group, opcode, version and the
// group's classic GUID as Provider.
type Recs struct {
	Recs []record.Record
	// CPU is the processor given to the records added next.
	CPU uint16
}

func (s *Recs) kernel(kind record.Kind, group, opcode uint8, version uint16, ts int64, tid, pid uint32, data []byte) {
	if kind == record.KindPerfInfo {
		tid, pid = record.NoID, record.NoID
	}
	s.Recs = append(s.Recs, record.Record{Kind: kind, Group: group, Provider: etl.GroupGUID(group), Opcode: opcode,
		Version: version, PointerSize: 8, Flags: etl.EventHeaderFlag64BitHeader | etl.EventHeaderFlagClassic,
		ThreadID: tid, ProcessID: pid, Timestamp: ts, CPU: s.CPU, UserData: data, FileOffset: -1, Buffer: -1})
}

// Header adds the EventTrace header record (a 64-bit QPC session at
// 10 MHz, 3000 MHz processors) at ts.
func (s *Recs) Header(ts int64) {
	s.kernel(record.KindSystem, 0, 0, 2, ts, 1, 4, headerPayload(etl.ClockTypeQPC, 3000))
}

// headerPayload is a 64-bit TRACE_LOGFILE_HEADER.
func headerPayload(clock, mhz uint32) buf {
	b := buf{}.u32(65536).u32(0x0001000A).u32(22631).u32(2) // buffer size, version 10.0, build, CPUs
	b = b.u64(0).u32(156250).u32(0).u32(0x00000001)         // end time, timer resolution, max size, mode (sequential file)
	b = b.u32(0).u32(1).u32(8).u32(0).u32(mhz)              // buffers written, start buffers, pointer size, events lost, MHz
	b = b.u64(0).u64(0)                                     // logger and file name pointers
	b = b.u32(0)                                            // time zone bias
	b = append(b, make([]byte, 172)...)                     // the rest of TIME_ZONE_INFORMATION
	b = b.u64(133000000000000000 - 36_000_000_000)          // boot time
	b = b.u64(10_000_000).u64(133000000000000000)           // perf frequency, start time
	b = b.u32(clock).u32(0)                                 // clock type, buffers lost
	return b.wstr("iotrace-synth").wstr(`C:\t\synth.etl`)
}

// Process adds a Process event (v4: Start 1, End 2, DCStart 3, DCEnd 4).
func (s *Recs) Process(ts int64, opcode uint8, pid, ppid uint32, image, cmd string) {
	b := buf{}.u64(0xfffffa8300000000 | uint64(pid)).u32(pid).u32(ppid).u32(1).u32(259).u64(0x1000).u32(0)
	b = b.u32(0).astr(image).wstr(cmd).wstr("").wstr("")
	s.kernel(record.KindSystem, record.GroupProcess, opcode, 4, ts, 0, pid, b)
}

// Thread adds a Thread event (v3: Start 1, End 2, DCStart 3, DCEnd 4).
func (s *Recs) Thread(ts int64, opcode uint8, pid, tid uint32) {
	b := buf{}.u32(pid).u32(tid)
	for i := 0; i < 7; i++ {
		b = b.u64(0)
	}
	s.kernel(record.KindSystem, record.GroupThread, opcode, 3, ts, tid, pid, b.u32(0).u32(0))
}

// Image adds an Image event (v3: Load 10, Unload 2, DCStart 3, DCEnd 4):
// ImageBase, ImageSize, ProcessId, ImageChecksum, TimeDateStamp,
// Reserved0, DefaultBase, Reserved1-4, FileName.
func (s *Recs) Image(ts int64, opcode uint8, pid uint32, base, size uint64, tds uint32, path string) {
	b := buf{}.u64(base).u64(size).u32(pid).u32(0xc0ffee).u32(tds).u32(0).u64(base)
	b = b.u32(0).u32(0).u32(0).u32(0).wstr(path)
	s.kernel(record.KindSystem, record.GroupImage, opcode, 3, ts, 0, pid, b)
}

// FileName adds a FileIo name event (Name 0, FileCreate 32, FileRundown
// 36) with a PERFINFO header.
func (s *Recs) FileName(ts int64, opcode uint8, fileKey uint64, path string) {
	s.kernel(record.KindPerfInfo, record.GroupFileIo, opcode, 2, ts, 0, 0, buf{}.u64(fileKey).wstr(path))
}

// Create adds FileIo Create (64, v3).
func (s *Recs) Create(ts int64, tid, pid uint32, irp, fo uint64, options uint32, path string) {
	b := buf{}.u64(irp).u64(fo).u32(tid).u32(options).u32(0x80).u32(7).wstr(path)
	s.kernel(record.KindSystem, record.GroupFileIo, 64, 3, ts, tid, pid, b)
}

// ReadWrite adds FileIo Read (67) or Write (68), v3.
func (s *Recs) ReadWrite(ts int64, opcode uint8, tid, pid uint32, irp, fo, fk, offset uint64, size uint32) {
	b := buf{}.u64(offset).u64(irp).u64(fo).u64(fk).u32(tid).u32(size).u32(0x1)
	s.kernel(record.KindSystem, record.GroupFileIo, opcode, 3, ts, tid, pid, b)
}

// OpEnd adds FileIo OpEnd (76, v3).
func (s *Recs) OpEnd(ts int64, tid, pid uint32, irp, extra uint64, status uint32) {
	s.kernel(record.KindSystem, record.GroupFileIo, 76, 3, ts, tid, pid, buf{}.u64(irp).u64(extra).u32(status))
}

// DiskInit adds DiskIo ReadInit (12) / WriteInit (13) / FlushInit (15), v3.
func (s *Recs) DiskInit(ts int64, opcode uint8, tid, pid uint32, irp uint64) {
	s.kernel(record.KindSystem, record.GroupDiskIo, opcode, 3, ts, tid, pid, buf{}.u64(irp).u32(tid))
}

// DiskDone adds a DiskIo Read (10) / Write (11) completion, v3, with a
// PERFINFO header.
func (s *Recs) DiskDone(ts int64, opcode uint8, disk uint32, irp, fileKey, offset uint64, size uint32, resp uint64, issuer uint32) {
	b := buf{}.u32(disk).u32(0x43).u32(size).u32(0).u64(offset).u64(fileKey).u64(irp).u64(resp).u32(issuer)
	s.kernel(record.KindPerfInfo, record.GroupDiskIo, opcode, 3, ts, 0, 0, b)
}

// Stack adds a StackWalk Stack (32, v2) for the event at evTs on thread
// tid: EventTimeStamp, StackProcess, StackThread, the return addresses.
func (s *Recs) Stack(ts, evTs int64, pid, tid uint32, frames ...uint64) {
	b := buf{}.u64(uint64(evTs)).u32(pid).u32(tid)
	for _, f := range frames {
		b = b.u64(f)
	}
	s.kernel(record.KindPerfInfo, record.GroupStackWalk, 32, 2, ts, 0, 0, b)
}

// KeyRef adds a StackWalk StackKeyKernel (37) or StackKeyUser (38), v2:
// EventTimeStamp, StackProcess, StackThread, StackKey.
func (s *Recs) KeyRef(ts int64, opcode uint8, evTs int64, pid, tid uint32, key uint64) {
	s.kernel(record.KindPerfInfo, record.GroupStackWalk, opcode, 2, ts, 0, 0, buf{}.u64(uint64(evTs)).u32(pid).u32(tid).u64(key))
}

// KeyDef adds a StackWalk KeyCreate (34), KeyDelete (35) or KeyRundown
// (36), v2: StackKey, the return addresses.
func (s *Recs) KeyDef(ts int64, opcode uint8, key uint64, frames ...uint64) {
	b := buf{}.u64(key)
	for _, f := range frames {
		b = b.u64(f)
	}
	s.kernel(record.KindPerfInfo, record.GroupStackWalk, opcode, 2, ts, 0, 0, b)
}

// Sample adds a PerfInfo SampledProfile (46) of thread tid at ip with a
// PERFINFO header: a record with no thread in its header.
func (s *Recs) Sample(ts int64, ip uint64, tid uint32) {
	s.kernel(record.KindPerfInfo, record.GroupPerfInfo, 46, 2, ts, 0, 0, buf{}.u64(ip).u32(tid).u32(1))
}

// Own adds an event of iotrace's own provider (a classic event, as
// TraceEvent writes it).
func (s *Recs) Own(ts int64, opcode uint8, pid, tid uint32, payload []byte) {
	s.Recs = append(s.Recs, record.Record{Kind: record.KindClassic, Provider: ownprovider.GUID, Opcode: opcode,
		Version: ownprovider.Version, PointerSize: 8, Flags: etl.EventHeaderFlag64BitHeader | etl.EventHeaderFlagClassic,
		ThreadID: tid, ProcessID: pid, Timestamp: ts, CPU: s.CPU, UserData: payload, FileOffset: -1, Buffer: -1})
}

// OwnEvent adds an event of iotrace's own provider as EventWrite writes
// it: an EVENT_HEADER record whose event id and opcode are the
// ownprovider opcode.
func (s *Recs) OwnEvent(ts int64, opcode uint8, pid, tid uint32, payload []byte) {
	s.Recs = append(s.Recs, record.Record{Kind: record.KindEvent, Provider: ownprovider.GUID, ID: uint16(opcode), Opcode: opcode,
		Version: ownprovider.Version, Level: 4, PointerSize: 8, Flags: etl.EventHeaderFlag64BitHeader,
		ThreadID: tid, ProcessID: pid, Timestamp: ts, CPU: s.CPU, UserData: payload, FileOffset: -1, Buffer: -1})
}

// Record header sizes and types of the records ETL writes.
const (
	sizeSystem   = 0x20
	sizePerfInfo = 0x10
	sizeFull     = 0x30
	sizeEvent    = 0x50
	bufferSize   = 64 << 10
)

// HeaderSize is the size of r's header in an .etl buffer (its payload
// follows).
func HeaderSize(r *record.Record) int {
	switch r.Kind {
	case record.KindSystem:
		return sizeSystem
	case record.KindPerfInfo:
		return sizePerfInfo
	case record.KindEvent:
		return sizeEvent
	}
	return sizeFull
}

// encode returns the bytes of r as it lies in an .etl buffer.
func encode(r *record.Record) []byte {
	le := binary.LittleEndian
	var b []byte
	switch r.Kind {
	case record.KindSystem:
		b = make([]byte, sizeSystem, sizeSystem+len(r.UserData))
		le.PutUint16(b[0:], r.Version)
		b[2] = etl.HeaderSystem64
		le.PutUint16(b[4:], uint16(sizeSystem+len(r.UserData)))
		b[6], b[7] = r.Opcode, r.Group
		le.PutUint32(b[8:], r.ThreadID)
		le.PutUint32(b[12:], r.ProcessID)
		le.PutUint64(b[16:], uint64(r.Timestamp))
	case record.KindPerfInfo:
		b = make([]byte, sizePerfInfo, sizePerfInfo+len(r.UserData))
		le.PutUint16(b[0:], r.Version)
		b[2] = etl.HeaderPerfInfo64
		le.PutUint16(b[4:], uint16(sizePerfInfo+len(r.UserData)))
		b[6], b[7] = r.Opcode, r.Group
		le.PutUint64(b[8:], uint64(r.Timestamp))
	case record.KindClassic:
		b = make([]byte, sizeFull, sizeFull+len(r.UserData))
		le.PutUint16(b[0:], uint16(sizeFull+len(r.UserData)))
		b[2] = etl.HeaderFull64
		b[4], b[5] = r.Opcode, 4
		le.PutUint16(b[6:], r.Version)
		le.PutUint32(b[8:], r.ThreadID)
		le.PutUint32(b[12:], r.ProcessID)
		le.PutUint64(b[16:], uint64(r.Timestamp))
		g := r.Provider
		le.PutUint32(b[24:], g.Data1)
		le.PutUint16(b[28:], g.Data2)
		le.PutUint16(b[30:], g.Data3)
		copy(b[32:40], g.Data4[:])
	case record.KindEvent:
		b = make([]byte, sizeEvent, sizeEvent+len(r.UserData))
		le.PutUint16(b[0:], uint16(sizeEvent+len(r.UserData)))
		b[2] = etl.HeaderEventHeader64
		le.PutUint16(b[4:], r.Flags&^etl.EventHeaderFlagExtendedInfo)
		le.PutUint32(b[8:], r.ThreadID)
		le.PutUint32(b[12:], r.ProcessID)
		le.PutUint64(b[16:], uint64(r.Timestamp))
		g := r.Provider
		le.PutUint32(b[24:], g.Data1)
		le.PutUint16(b[28:], g.Data2)
		le.PutUint16(b[30:], g.Data3)
		copy(b[32:40], g.Data4[:])
		le.PutUint16(b[40:], r.ID)
		b[42], b[43], b[44], b[45] = uint8(r.Version), r.Channel, r.Level, r.Opcode
		le.PutUint16(b[46:], r.Task)
		le.PutUint64(b[48:], r.Keyword)
	default:
		panic("etwsynth: cannot encode a record of kind " + r.Kind.String())
	}
	b[3] = 0xC0 // TRACE_HEADER_FLAG | TRACE_HEADER_EVENT_TRACE
	return append(b, r.UserData...)
}

// ETL returns an uncompressed 64-bit .etl file: a header buffer holding
// the EventTrace header record (timestamp headerTS), then each
// processor's records (by Record.CPU, in timestamp order) in 64 KiB
// buffers. recs must not hold a header record.
func ETL(headerTS int64, recs []record.Record) []byte { return ETLWith(headerTS, 3000, recs) }

// ETLWith is ETL with the processor speed, in MHz, its header gives.
func ETLWith(headerTS int64, mhz uint32, recs []record.Record) []byte {
	var hdr Recs
	hdr.kernel(record.KindSystem, 0, 0, 2, headerTS, 1, 4, headerPayload(etl.ClockTypeQPC, mhz))
	out := buffer(0, 0, etl.BufferTypeHeader, [][]byte{encode(&hdr.Recs[0])})
	byCPU := map[uint16][]*record.Record{}
	var cpus []int
	for i := range recs {
		c := recs[i].CPU
		if _, ok := byCPU[c]; !ok {
			cpus = append(cpus, int(c))
		}
		byCPU[c] = append(byCPU[c], &recs[i])
	}
	sort.Ints(cpus)
	seq := int64(1)
	for _, c := range cpus {
		list := byCPU[uint16(c)]
		sort.SliceStable(list, func(i, j int) bool { return list[i].Timestamp < list[j].Timestamp })
		var pending [][]byte
		used := etl.BufferHeaderSize
		for _, r := range list {
			b := encode(r)
			if used+len(b) > bufferSize {
				out = append(out, buffer(uint16(c), seq, etl.BufferTypeGeneric, pending)...)
				seq++
				pending, used = nil, etl.BufferHeaderSize
			}
			pending = append(pending, b)
			used += (len(b) + 7) &^ 7
		}
		if len(pending) > 0 {
			out = append(out, buffer(uint16(c), seq, etl.BufferTypeGeneric, pending)...)
			seq++
		}
	}
	return out
}

// buffer builds one 64 KiB buffer of records (8-byte aligned).
func buffer(cpu uint16, seq int64, typ uint16, recs [][]byte) []byte {
	le := binary.LittleEndian
	data := make([]byte, etl.BufferHeaderSize, bufferSize)
	for _, r := range recs {
		data = append(data, r...)
		for len(data)%8 != 0 {
			data = append(data, 0)
		}
	}
	used := len(data)
	for len(data) < bufferSize {
		data = append(data, 0xFF)
	}
	le.PutUint32(data[0x00:], bufferSize)
	le.PutUint32(data[0x04:], uint32(used))
	le.PutUint32(data[0x08:], uint32(used))
	le.PutUint64(data[0x10:], 133000000000000000)
	le.PutUint64(data[0x18:], uint64(seq))
	le.PutUint16(data[0x28:], cpu)
	le.PutUint32(data[0x30:], uint32(used))
	flags := uint16(etl.BufferFlagProcIndex)
	if typ == etl.BufferTypeHeader {
		flags |= etl.BufferFlagFlushMarker
	}
	le.PutUint16(data[0x34:], flags)
	le.PutUint16(data[0x36:], typ)
	return data
}
