package etw

import (
	"encoding/binary"
	"unicode/utf16"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Byte-exact synthetic records built from the layouts in docs/etw.md,
// written field by field (not through the decoder's tables).

type buf []byte

func (b buf) u32(v uint32) buf { return binary.LittleEndian.AppendUint32(b, v) }
func (b buf) u64(v uint64) buf { return binary.LittleEndian.AppendUint64(b, v) }
func (b buf) ptr(size int, v uint64) buf {
	if size == 4 {
		return b.u32(uint32(v))
	}
	return b.u64(v)
}
func (b buf) wstr(s string) buf {
	for _, c := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return binary.LittleEndian.AppendUint16(b, 0)
}
func (b buf) astr(s string) buf { return append(append(b, s...), 0) }

// synth builds a record stream for one pointer size and FileIo version.
type synth struct {
	ptr     int
	version uint16 // FileIo request layout: 2 or 3
	recs    []record.Record
}

func (s *synth) add(kind record.Kind, group, opcode uint8, version uint16, ts int64, tid, pid uint32, cpu uint16, data buf) {
	s.recs = append(s.recs, record.Record{Kind: kind, Group: group, Opcode: opcode, Version: version,
		PointerSize: s.ptr, ThreadID: tid, ProcessID: pid, Timestamp: ts, CPU: cpu, UserData: data, FileOffset: int64(len(s.recs))})
}

// header adds the EventTrace header at ts with a 10 MHz QPC clock.
func (s *synth) header(ts int64) {
	b := buf{}.u32(65536).u32(0x00020206).u32(9200).u32(4)
	b = b.u64(0).u32(156250).u32(0).u32(0x04010001).u32(10).u32(1).u32(uint32(s.ptr)).u32(0).u32(3592)
	b = b.ptr(s.ptr, 0).ptr(s.ptr, 0)
	b = append(b, make([]byte, 176)...)
	b = b.u64(0).u64(10_000_000).u64(132404000000000000).u32(1).u32(0)
	b = b.wstr("synth").wstr("synth.etl")
	s.add(record.KindSystem, 0, 0, 2, ts, 1, 4, 0, b)
}

func (s *synth) volume(ts int64, nt, dos string) {
	s.recs = append(s.recs, record.Record{Kind: record.KindClassic, Provider: kernel.GUIDSysConfig, Opcode: 35,
		PointerSize: s.ptr, ThreadID: 0, ProcessID: 0, Timestamp: ts, UserData: buf{}.wstr(nt).wstr(dos)})
}

func (s *synth) process(ts int64, opcode uint8, pid, ppid uint32, image, cmd string) {
	// Process v4: UniqueProcessKey P, ProcessId, ParentId, SessionId,
	// ExitStatus, DirectoryTableBase P, Flags, UserSID (none), ImageFileName, CommandLine,
	// PackageFullName, ApplicationId.
	b := buf{}.ptr(s.ptr, 0xfffffa8300000000|uint64(pid)).u32(pid).u32(ppid).u32(1).u32(259).ptr(s.ptr, 0x1000).u32(0)
	b = b.u32(0).astr(image).wstr(cmd).wstr("").wstr("")
	s.add(record.KindSystem, record.GroupProcess, opcode, 4, ts, record.NoID, pid, 0, b)
}

func (s *synth) thread(ts int64, opcode uint8, pid, tid uint32) {
	b := buf{}.u32(pid).u32(tid)
	for i := 0; i < 7; i++ {
		b = b.ptr(s.ptr, 0)
	}
	b = b.u32(0).u32(0)
	s.add(record.KindSystem, record.GroupThread, opcode, 3, ts, tid, pid, 0, b)
}

// image adds an Image event (group 0x14: Load 10, DCStart 3) in the v2
// layout: ImageBase P, ImageSize P, ProcessId, ImageChecksum,
// TimeDateStamp, Reserved0, DefaultBase P, Reserved1-4, FileName.
func (s *synth) image(ts int64, opcode uint8, pid uint32, base uint64, path string) {
	b := buf{}.ptr(s.ptr, base).ptr(s.ptr, 0x10000).u32(pid).u32(0x1234).u32(0x5000).u32(0).ptr(s.ptr, base)
	b = b.u32(0).u32(0).u32(0).u32(0).wstr(path)
	s.add(record.KindSystem, record.GroupImage, opcode, 2, ts, record.NoID, pid, 0, b)
}

// name adds a FileIo name event (0, 32, 35, 36) with a PERFINFO header.
func (s *synth) name(ts int64, opcode uint8, fileKey uint64, path string) {
	s.add(record.KindPerfInfo, record.GroupFileIo, opcode, 2, ts, record.NoID, record.NoID, 0, buf{}.ptr(s.ptr, fileKey).wstr(path))
}

// create adds FileIo Create (64).
func (s *synth) create(ts int64, tid, pid uint32, irp, fo uint64, options uint32, path string) {
	var b buf
	if s.version == 2 {
		b = buf{}.ptr(s.ptr, irp).ptr(s.ptr, uint64(tid)).ptr(s.ptr, fo)
	} else {
		b = buf{}.ptr(s.ptr, irp).ptr(s.ptr, fo).u32(tid)
	}
	b = b.u32(options).u32(0x80).u32(7).wstr(path)
	s.add(record.KindSystem, record.GroupFileIo, 64, s.version, ts, tid, pid, 1, b)
}

// rw adds FileIo Read (67) or Write (68).
func (s *synth) rw(ts int64, opcode uint8, tid, pid uint32, irp, fo, fk, offset uint64, size uint32) {
	b := buf{}.u64(offset)
	if s.version == 2 {
		b = b.ptr(s.ptr, irp).ptr(s.ptr, uint64(tid)).ptr(s.ptr, fo).ptr(s.ptr, fk)
	} else {
		b = b.ptr(s.ptr, irp).ptr(s.ptr, fo).ptr(s.ptr, fk).u32(tid)
	}
	b = b.u32(size).u32(0x1)
	s.add(record.KindSystem, record.GroupFileIo, opcode, s.version, ts, tid, pid, 2, b)
}

// simple adds FileIo Cleanup (65), Close (66) or Flush (73).
func (s *synth) simple(ts int64, opcode uint8, tid, pid uint32, irp, fo, fk uint64) {
	var b buf
	if s.version == 2 {
		b = buf{}.ptr(s.ptr, irp).ptr(s.ptr, uint64(tid)).ptr(s.ptr, fo).ptr(s.ptr, fk)
	} else {
		b = buf{}.ptr(s.ptr, irp).ptr(s.ptr, fo).ptr(s.ptr, fk).u32(tid)
	}
	s.add(record.KindSystem, record.GroupFileIo, opcode, s.version, ts, tid, pid, 3, b)
}

// info adds an Info-class request (SetInfo 69 .. FSControl 75).
func (s *synth) info(ts int64, opcode uint8, tid, pid uint32, irp, fo, fk, extra uint64, class uint32) {
	var b buf
	if s.version == 2 {
		b = buf{}.ptr(s.ptr, irp).ptr(s.ptr, uint64(tid)).ptr(s.ptr, fo).ptr(s.ptr, fk).ptr(s.ptr, extra).u32(class)
	} else {
		b = buf{}.ptr(s.ptr, irp).ptr(s.ptr, fo).ptr(s.ptr, fk).ptr(s.ptr, extra).u32(tid).u32(class)
	}
	s.add(record.KindSystem, record.GroupFileIo, opcode, s.version, ts, tid, pid, 3, b)
}

// opEnd adds FileIo OpEnd (76), logged in an arbitrary context.
func (s *synth) opEnd(ts int64, irp, extra uint64, status uint32) {
	s.add(record.KindSystem, record.GroupFileIo, 76, s.version, ts, 0, 0, 5, buf{}.ptr(s.ptr, irp).ptr(s.ptr, extra).u32(status))
}

// diskInit adds DiskIo ReadInit (12) / WriteInit (13) / FlushInit (15), v3.
func (s *synth) diskInit(ts int64, opcode uint8, tid, pid uint32, irp uint64) {
	s.add(record.KindSystem, record.GroupDiskIo, opcode, 3, ts, tid, pid, 3, buf{}.ptr(s.ptr, irp).u32(tid))
}

// diskDone adds a DiskIo Read (10) / Write (11) completion, v3, with a
// PERFINFO header (no context).
func (s *synth) diskDone(ts int64, opcode uint8, disk uint32, irp, fileKey, offset uint64, size uint32, resp uint64, issuer uint32) {
	b := buf{}.u32(disk).u32(0x43).u32(size).u32(0).u64(offset).ptr(s.ptr, fileKey).ptr(s.ptr, irp).u64(resp).u32(issuer)
	s.add(record.KindPerfInfo, record.GroupDiskIo, opcode, 3, ts, record.NoID, record.NoID, 0, b)
}

// sink records what it receives.
type sink struct {
	hdr     *event.Header
	events  []event.Event
	facts   []event.Fact
	trailer *event.Trailer
	begins  int
}

func (s *sink) Begin(h *event.Header) error { c := *h; s.hdr = &c; s.begins++; return nil }
func (s *sink) Event(e *event.Event) error  { s.events = append(s.events, *e); return nil }
func (s *sink) Fact(f *event.Fact) error    { s.facts = append(s.facts, *f); return nil }
func (s *sink) End(t *event.Trailer) error  { c := *t; s.trailer = &c; return nil }

func (s *sink) byNative(n string) []event.Event {
	var out []event.Event
	for _, e := range s.events {
		if e.Native == n {
			out = append(out, e)
		}
	}
	return out
}
