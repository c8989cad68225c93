package kernel

import (
	"encoding/binary"
	"errors"
	"testing"
	"unicode/utf16"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// payload builds a byte-exact payload by explicit offsets, independent of
// the decoder's layout tables (the offsets come from docs/etw.md).
type payload []byte

func (p *payload) grow(n int) {
	if len(*p) < n {
		*p = append(*p, make([]byte, n-len(*p))...)
	}
}
func (p *payload) u32(off int, v uint32) *payload {
	p.grow(off + 4)
	binary.LittleEndian.PutUint32((*p)[off:], v)
	return p
}
func (p *payload) u64(off int, v uint64) *payload {
	p.grow(off + 8)
	binary.LittleEndian.PutUint64((*p)[off:], v)
	return p
}
func (p *payload) ptr(off, size int, v uint64) *payload {
	if size == 4 {
		return p.u32(off, uint32(v))
	}
	return p.u64(off, v)
}
func (p *payload) wstr(off int, s string) *payload {
	u := utf16.Encode([]rune(s))
	p.grow(off + 2*len(u) + 2)
	for i, c := range u {
		binary.LittleEndian.PutUint16((*p)[off+2*i:], c)
	}
	binary.LittleEndian.PutUint16((*p)[off+2*len(u):], 0)
	return p
}

func kernelRecord(group, opcode uint8, version uint16, ptr int, data []byte) *record.Record {
	return &record.Record{Kind: record.KindSystem, Group: group, Opcode: opcode, Version: version,
		PointerSize: ptr, UserData: data, ThreadID: 10, ProcessID: 20}
}

func decode(t *testing.T, r *record.Record) *Event {
	t.Helper()
	var ev Event
	ok, err := NewDecoder().Decode(r, &ev)
	if !ok || err != nil {
		t.Fatalf("decode %+v: ok=%v err=%v", KeyOf(r), ok, err)
	}
	return &ev
}

const (
	irp   = 0xfffffa8303b20b80
	fobj  = 0xfffffa8301234560
	fkey  = 0xfffff8a001300c50
	extra = 0x1122
)

// TestFileIoRequestLayouts checks every FileIo request layout family in v2
// and v3, x86 and x64, against offsets written out by hand.
func TestFileIoRequestLayouts(t *testing.T) {
	type want struct{ irp, fo, fk, ttid, off, size, flags, info, extra uint64 }
	cases := []struct {
		name    string
		opcode  uint8
		version uint16
		ptr     int
		build   func(p *payload)
		op      event.Op
		name16  string
	}{
		// Read/Write v3 x64: Offset 0, IrpPtr 8, FileObject 16, FileKey 24, TTID 32, IoSize 36, IoFlags 40.
		{"read v3 x64", 67, 3, 8, func(p *payload) {
			p.u64(0, 4096).ptr(8, 8, irp).ptr(16, 8, fobj).ptr(24, 8, fkey).u32(32, 1716).u32(36, 8704).u32(40, 0x43)
		}, event.OpRead, ""},
		// v3 x86: 0, 8, 12, 16, 20, 24, 28.
		{"write v3 x86", 68, 3, 4, func(p *payload) {
			p.u64(0, 4096).ptr(8, 4, irp&0xffffffff).ptr(12, 4, fobj&0xffffffff).ptr(16, 4, fkey&0xffffffff).u32(20, 1716).u32(24, 8704).u32(28, 0x43)
		}, event.OpWrite, ""},
		// v2 x64: Offset 0, IrpPtr 8, TTID 16 (P), FileObject 24, FileKey 32, IoSize 40, IoFlags 44.
		{"read v2 x64", 67, 2, 8, func(p *payload) {
			p.u64(0, 4096).ptr(8, 8, irp).ptr(16, 8, 1716).ptr(24, 8, fobj).ptr(32, 8, fkey).u32(40, 8704).u32(44, 0x43)
		}, event.OpRead, ""},
		// v2 x86: 0, 8, 12, 16, 20, 24, 28.
		{"read v2 x86", 67, 2, 4, func(p *payload) {
			p.u64(0, 4096).ptr(8, 4, irp&0xffffffff).ptr(12, 4, 1716).ptr(16, 4, fobj&0xffffffff).ptr(20, 4, fkey&0xffffffff).u32(24, 8704).u32(28, 0x43)
		}, event.OpRead, ""},
		// SimpleOp v3 x64: IrpPtr 0, FileObject 8, FileKey 16, TTID 24.
		{"close v3 x64", 66, 3, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, fobj).ptr(16, 8, fkey).u32(24, 1716)
		}, event.OpClose, ""},
		// SimpleOp v2 x64: IrpPtr 0, TTID 8, FileObject 16, FileKey 24.
		{"cleanup v2 x64", 65, 2, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, 1716).ptr(16, 8, fobj).ptr(24, 8, fkey)
		}, event.OpCleanup, ""},
		// SimpleOp v3 x86: 0, 4, 8, 12.
		{"flush v3 x86", 73, 3, 4, func(p *payload) {
			p.ptr(0, 4, irp&0xffffffff).ptr(4, 4, fobj&0xffffffff).ptr(8, 4, fkey&0xffffffff).u32(12, 1716)
		}, event.OpFlush, ""},
		// Info v3 x64: IrpPtr 0, FileObject 8, FileKey 16, ExtraInfo 24, TTID 32, InfoClass 36.
		{"setinfo v3 x64", 69, 3, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, fobj).ptr(16, 8, fkey).ptr(24, 8, extra).u32(32, 1716).u32(36, 13)
		}, event.OpSetInfo, ""},
		// Info v2 x64: IrpPtr 0, TTID 8, FileObject 16, FileKey 24, ExtraInfo 32, InfoClass 40.
		{"queryinfo v2 x64", 74, 2, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, 1716).ptr(16, 8, fobj).ptr(24, 8, fkey).ptr(32, 8, extra).u32(40, 13)
		}, event.OpStat, ""},
		// Info v3 x86: 0, 4, 8, 12, 16, 20.
		{"fsctl v3 x86", 75, 3, 4, func(p *payload) {
			p.ptr(0, 4, irp&0xffffffff).ptr(4, 4, fobj&0xffffffff).ptr(8, 4, fkey&0xffffffff).ptr(12, 4, extra).u32(16, 1716).u32(20, 13)
		}, event.OpFSControl, ""},
		// DirEnum v3 x64: IrpPtr 0, FileObject 8, FileKey 16, TTID 24, Length 28, InfoClass 32, FileIndex 36, FileName 40.
		{"direnum v3 x64", 72, 3, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, fobj).ptr(16, 8, fkey).u32(24, 1716).u32(28, 8704).u32(32, 13).u32(36, 0).wstr(40, "*.txt")
		}, event.OpReadDir, "*.txt"},
		// DirEnum v2 x64: IrpPtr 0, TTID 8, FileObject 16, FileKey 24, Length 32, InfoClass 36, FileIndex 40, FileName 44.
		{"dirnotify v2 x64", 77, 2, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, 1716).ptr(16, 8, fobj).ptr(24, 8, fkey).u32(32, 8704).u32(36, 13).u32(40, 0).wstr(44, "*.txt")
		}, event.OpNotify, "*.txt"},
		// DirEnum v3 x86: 0,4,8,12,16,20,24,28.
		{"direnum v3 x86", 72, 3, 4, func(p *payload) {
			p.ptr(0, 4, irp&0xffffffff).ptr(4, 4, fobj&0xffffffff).ptr(8, 4, fkey&0xffffffff).u32(12, 1716).u32(16, 8704).u32(20, 13).u32(24, 0).wstr(28, "*.txt")
		}, event.OpReadDir, "*.txt"},
		// PathOperation v3 x64: IrpPtr 0, FileObject 8, FileKey 16, ExtraInfo 24, TTID 32, InfoClass 36, FileName 40.
		{"renamepath v3 x64", 80, 3, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, fobj).ptr(16, 8, fkey).ptr(24, 8, extra).u32(32, 1716).u32(36, 10).wstr(40, `\Device\HarddiskVolume2\new.txt`)
		}, event.OpRename, `\Device\HarddiskVolume2\new.txt`},
		// PathOperation v3 x86: 0,4,8,12,16,20,24.
		{"deletepath v3 x86", 79, 3, 4, func(p *payload) {
			p.ptr(0, 4, irp&0xffffffff).ptr(4, 4, fobj&0xffffffff).ptr(8, 4, fkey&0xffffffff).ptr(12, 4, extra).u32(16, 1716).u32(20, 13).wstr(24, `\x`)
		}, event.OpDelete, `\x`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p payload
			c.build(&p)
			ev := decode(t, kernelRecord(record.GroupFileIo, c.opcode, c.version, c.ptr, p))
			mask := uint64(1<<64 - 1)
			if c.ptr == 4 {
				mask = 0xffffffff
			}
			if ev.Kind != KindFileRequest || ev.Op != c.op {
				t.Errorf("kind %v op %v, want request %v", ev.Kind, ev.Op, c.op)
			}
			if ev.Irp != irp&mask || ev.FileObject != fobj&mask || ev.FileKey != fkey&mask {
				t.Errorf("irp %#x fo %#x fk %#x", ev.Irp, ev.FileObject, ev.FileKey)
			}
			if !ev.HasTTID || ev.TTID != 1716 {
				t.Errorf("TTID %d (%v)", ev.TTID, ev.HasTTID)
			}
			switch c.op {
			case event.OpRead, event.OpWrite:
				if ev.Offset != 4096 || ev.Size != 8704 || ev.IOFlags != 0x43 {
					t.Errorf("offset %d size %d flags %#x", ev.Offset, ev.Size, ev.IOFlags)
				}
			case event.OpReadDir, event.OpNotify:
				if ev.Size != 8704 || ev.InfoClass != 13 {
					t.Errorf("length %d class %d", ev.Size, ev.InfoClass)
				}
			case event.OpSetInfo, event.OpStat, event.OpFSControl:
				if ev.ExtraInfo != extra || ev.InfoClass != 13 {
					t.Errorf("extra %#x class %d", ev.ExtraInfo, ev.InfoClass)
				}
			}
			if got := ev.Name.String(); got != c.name16 {
				t.Errorf("name %q, want %q", got, c.name16)
			}
			// Every shorter payload is an error naming a field, never a panic.
			full := []byte(p)
			for n := 0; n < len(full); n++ {
				var e2 Event
				if c.name16 != "" && n >= len(full)-2*len([]rune(c.name16))-2 {
					break // a truncated final string is accepted
				}
				_, err := NewDecoder().Decode(kernelRecord(record.GroupFileIo, c.opcode, c.version, c.ptr, full[:n]), &e2)
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field == "" {
					t.Fatalf("payload cut to %d bytes: err %v, want a FieldError", n, err)
				}
			}
		})
	}
}

func TestFileIoCreateAndOpEnd(t *testing.T) {
	for _, c := range []struct {
		version uint16
		ptr     int
		build   func(p *payload)
	}{
		// v3 x64: IrpPtr 0, FileObject 8, TTID 16, CreateOptions 20, FileAttributes 24, ShareAccess 28, OpenPath 32.
		{3, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, fobj).u32(16, 1716).u32(20, 0x01000060).u32(24, 0x80).u32(28, 3).wstr(32, `\Device\HarddiskVolume2\a.txt`)
		}},
		// v2 x64: IrpPtr 0, TTID 8 (P), FileObject 16, CreateOptions 24, FileAttributes 28, ShareAccess 32, OpenPath 36.
		{2, 8, func(p *payload) {
			p.ptr(0, 8, irp).ptr(8, 8, 1716).ptr(16, 8, fobj).u32(24, 0x01000060).u32(28, 0x80).u32(32, 3).wstr(36, `\Device\HarddiskVolume2\a.txt`)
		}},
		// v3 x86: 0, 4, 8, 12, 16, 20, 24.
		{3, 4, func(p *payload) {
			p.ptr(0, 4, irp&0xffffffff).ptr(4, 4, fobj&0xffffffff).u32(8, 1716).u32(12, 0x01000060).u32(16, 0x80).u32(20, 3).wstr(24, `\Device\HarddiskVolume2\a.txt`)
		}},
		// v2 x86: 0, 4, 8, 12, 16, 20, 24 (TTID pointer-sized = 4).
		{2, 4, func(p *payload) {
			p.ptr(0, 4, irp&0xffffffff).ptr(4, 4, 1716).ptr(8, 4, fobj&0xffffffff).u32(12, 0x01000060).u32(16, 0x80).u32(20, 3).wstr(24, `\Device\HarddiskVolume2\a.txt`)
		}},
	} {
		var p payload
		c.build(&p)
		ev := decode(t, kernelRecord(record.GroupFileIo, 64, c.version, c.ptr, p))
		if ev.Op != event.OpOpen || ev.TTID != 1716 || ev.CreateOptions != 0x01000060 || ev.Attributes != 0x80 ||
			ev.ShareAccess != 3 || ev.Name.String() != `\Device\HarddiskVolume2\a.txt` {
			t.Errorf("create v%d ptr %d: %+v name %q", c.version, c.ptr, ev, ev.Name.String())
		}
		// OpEnd: IrpPtr 0, ExtraInfo P, NtStatus u32.
		var q payload
		q.ptr(0, c.ptr, 0x1234).ptr(c.ptr, c.ptr, 2).u32(2*c.ptr, 0xC0000034)
		ev = decode(t, kernelRecord(record.GroupFileIo, 76, c.version, c.ptr, q))
		if ev.Kind != KindFileOpEnd || ev.Irp != 0x1234 || ev.ExtraInfo != 2 || ev.Status != 0xC0000034 {
			t.Errorf("opend v%d ptr %d: %+v", c.version, c.ptr, ev)
		}
	}
}

func TestFileIoNameEvents(t *testing.T) {
	for _, c := range []struct {
		opcode uint8
		kind   Kind
	}{{0, KindFileName}, {32, KindFileName}, {35, KindFileNameDelete}, {36, KindFileRundown}} {
		for _, ptr := range []int{4, 8} {
			var p payload
			p.ptr(0, ptr, fkey&0xffffffff).wstr(ptr, `\Device\HarddiskVolume2\Windows\System32\ntdll.dll`)
			r := kernelRecord(record.GroupFileIo, c.opcode, 2, ptr, p)
			r.Kind = record.KindPerfInfo
			ev := decode(t, r)
			if ev.Kind != c.kind || ev.FileKey != fkey&0xffffffff || ev.Name.String() != `\Device\HarddiskVolume2\Windows\System32\ntdll.dll` {
				t.Errorf("opcode %d ptr %d: %+v", c.opcode, ptr, ev)
			}
		}
	}
}

func TestDiskIoLayouts(t *testing.T) {
	for _, ptr := range []int{4, 8} {
		for _, v := range []uint16{2, 3} {
			mask := uint64(1<<64 - 1)
			if ptr == 4 {
				mask = 0xffffffff
			}
			// Read: DiskNumber 0, IrpFlags 4, TransferSize 8, Reserved 12,
			// ByteOffset 16, FileObject 24, Irp 24+P, HighRes 24+2P,
			// IssuingThreadId 32+2P (v3).
			var p payload
			p.u32(0, 1).u32(4, 0x60043).u32(8, 8704).u64(16, 5412451328).ptr(24, ptr, fkey&mask).ptr(24+ptr, ptr, irp&mask).u64(24+2*ptr, 31941)
			if v == 3 {
				p.u32(32+2*ptr, 1716)
			}
			ev := decode(t, kernelRecord(record.GroupDiskIo, 10, v, ptr, p))
			if ev.Kind != KindDiskDone || ev.Op != event.OpBlockRead || ev.Disk != 1 || ev.IOFlags != 0x60043 ||
				ev.Size != 8704 || ev.Offset != 5412451328 || ev.FileKey != fkey&mask || ev.Irp != irp&mask ||
				ev.ResponseTime != 31941 || ev.HasTTID != (v == 3) || (v == 3 && ev.TTID != 1716) {
				t.Errorf("read v%d ptr %d: %+v", v, ptr, ev)
			}
			if v == 3 && len(p) != map[int]int{8: 52, 4: 44}[ptr] {
				t.Errorf("v3 read payload %d bytes", len(p))
			}
			// Init: Irp 0, IssuingThreadId P (v3).
			var q payload
			q.ptr(0, ptr, irp&mask)
			if v == 3 {
				q.u32(ptr, 1716)
			}
			for _, op := range []uint8{12, 13, 15} {
				ev = decode(t, kernelRecord(record.GroupDiskIo, op, v, ptr, q))
				if ev.Kind != KindDiskInit || ev.Irp != irp&mask {
					t.Errorf("init %d v%d ptr %d: %+v", op, v, ptr, ev)
				}
			}
			// FlushBuffers: DiskNumber 0, IrpFlags 4, HighRes 8, Irp 16, IssuingThreadId 16+P.
			var f payload
			f.u32(0, 0).u32(4, 0).u64(8, 786839).ptr(16, ptr, irp&mask)
			if v == 3 {
				f.u32(16+ptr, 960)
			}
			ev = decode(t, kernelRecord(record.GroupDiskIo, 14, v, ptr, f))
			if ev.Kind != KindDiskDone || ev.Op != event.OpBlockFlush || ev.ResponseTime != 786839 || ev.Irp != irp&mask ||
				(v == 3 && ev.TTID != 960) {
				t.Errorf("flush v%d ptr %d: %+v", v, ptr, ev)
			}
		}
	}
}

func TestProcessThreadImage(t *testing.T) {
	// Process v4 x64 with a SID (TOKEN_USER 16 bytes + SID with 5 sub-authorities).
	var p payload
	p.u64(0, 0xfffffa83023ad940).u32(8, 144).u32(12, 4).u32(16, 1).u32(20, 259).u64(24, 0x44e1000).u32(32, 0)
	p.u64(36, 0xfffff8a000001234).u64(44, 0) // TOKEN_USER
	sidOff := 52
	p.grow(sidOff + 8 + 20)
	p[sidOff] = 1
	p[sidOff+1] = 5
	name := sidOff + 28
	p.grow(name + 12)
	copy(p[name:], "svchost.exe\x00")
	p.wstr(name+12, `C:\Windows\system32\svchost.exe -k netsvcs`)
	p.wstr(len(p), "")
	p.wstr(len(p), "")
	ev := decode(t, kernelRecord(record.GroupProcess, 3, 4, 8, p))
	if ev.Kind != KindProcess || ev.Phase != PhaseDCStart || ev.Pid != 144 || ev.PPid != 4 ||
		ev.ImageFileName.String() != "svchost.exe" || ev.Name2.String() != `C:\Windows\system32\svchost.exe -k netsvcs` {
		t.Errorf("process: %+v %q %q", ev, ev.ImageFileName.String(), ev.Name2.String())
	}
	// A newer version with trailing fields decodes with the v4 layout.
	ev = decode(t, kernelRecord(record.GroupProcess, 1, 9, 8, append(p, 1, 2, 3, 4, 5, 6, 7, 8)))
	if ev.Pid != 144 || ev.ImageFileName.String() != "svchost.exe" {
		t.Errorf("process v9: %+v", ev)
	}
	// Process v3 x86, no SID (4-byte 0).
	var q payload
	q.u32(0, 0x1000).u32(4, 3676).u32(8, 3508).u32(12, 1).u32(16, 0).u32(20, 0x2000).u32(24, 0)
	q.grow(28 + 13)
	copy(q[28:], "Test.x64.exe\x00")
	q.wstr(41, "Test.x64.exe")
	ev = decode(t, kernelRecord(record.GroupProcess, 1, 3, 4, q))
	if ev.Pid != 3676 || ev.PPid != 3508 || ev.ImageFileName.String() != "Test.x64.exe" || ev.Name2.String() != "Test.x64.exe" {
		t.Errorf("process v3 x86: %+v", ev)
	}

	var th payload
	th.u32(0, 3676).u32(4, 3680).grow(72)
	ev = decode(t, kernelRecord(record.GroupThread, 1, 3, 8, th))
	if ev.Kind != KindThread || ev.Pid != 3676 || ev.Tid != 3680 || ev.Phase != PhaseStart {
		t.Errorf("thread: %+v", ev)
	}

	// Image v2/v3 x64: FileName at 56; x86 at 44.
	for _, c := range []struct{ ptr, nameOff int }{{8, 56}, {4, 44}} {
		var im payload
		im.ptr(0, c.ptr, 0x77710000).ptr(c.ptr, c.ptr, 1404928).u32(2*c.ptr, 144).wstr(c.nameOff, `\SystemRoot\system32\ntdll.dll`)
		ev = decode(t, kernelRecord(record.GroupImage, 3, 2, c.ptr, im))
		if ev.Kind != KindImage || ev.ImageBase != 0x77710000 || ev.ImageSize != 1404928 || ev.Pid != 144 ||
			ev.Name.String() != `\SystemRoot\system32\ntdll.dll` {
			t.Errorf("image ptr %d: %+v", c.ptr, ev)
		}
	}
}

func TestKernelFileManifest(t *testing.T) {
	// Kernel-File Create (id 12) version 1 uses the FileIo v3 layout.
	var p payload
	p.ptr(0, 8, irp).ptr(8, 8, fobj).u32(16, 1716).u32(20, 0x01000020).u32(24, 0).u32(28, 7).wstr(32, `\Device\HarddiskVolume2\x`)
	r := &record.Record{Kind: record.KindEvent, Provider: GUIDKernelFile, ID: 12, Version: 1, PointerSize: 8, UserData: p}
	ev := decode(t, r)
	if ev.Kind != KindFileRequest || ev.Op != event.OpOpen || ev.FileObject != fobj || ev.TTID != 1716 ||
		ev.Name.String() != `\Device\HarddiskVolume2\x` || ev.Native != "Kernel-File/Create" {
		t.Errorf("kernel-file create: %+v", ev)
	}
	// Read (15) v1 appends ExtraFlags.
	var q payload
	q.u64(0, 100).ptr(8, 8, irp).ptr(16, 8, fobj).ptr(24, 8, fkey).u32(32, 1716).u32(36, 512).u32(40, 0).u32(44, 0)
	r = &record.Record{Kind: record.KindEvent, Provider: GUIDKernelFile, ID: 15, Version: 1, PointerSize: 8, UserData: q}
	ev = decode(t, r)
	if ev.Op != event.OpRead || ev.Offset != 100 || ev.Size != 512 || ev.FileKey != fkey {
		t.Errorf("kernel-file read: %+v", ev)
	}
}

func TestUnknownCounted(t *testing.T) {
	d := NewDecoder()
	var ev Event
	// An unknown FileIo version: counted as dropped (it may hold I/O).
	ok, err := d.Decode(kernelRecord(record.GroupFileIo, 67, 9, 8, make([]byte, 64)), &ev)
	if ok || err != nil {
		t.Fatalf("unknown version: ok=%v err=%v", ok, err)
	}
	// Another provider: counted as info.
	for i := 0; i < 3; i++ {
		d.Decode(&record.Record{Kind: record.KindEvent, Provider: mustGUID("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"), ID: 10}, &ev)
	}
	d.Decode(kernelRecord(0x0F, 46, 2, 8, nil), &ev) // PerfInfo sample
	d.Decode(&record.Record{Kind: record.KindEvent, Provider: mustGUID("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"), ID: 82}, &ev)
	var s event.Stats
	d.Stats(&s)
	// One counter per provider (or kernel group) that is not I/O, with
	// the total; one per opcode and version for the I/O classes.
	if s.Total(event.CountDropped) != 1 || s.Total(event.CountInfo) != 5 || len(s.Counters) != 3 ||
		s.Get(event.CountInfo, StatUndecoded+"provider Microsoft-Windows-DotNETRuntime {e13c0d23-ccbc-4e12-931b-d9cc2eee27e4}") != 4 ||
		s.Get(event.CountInfo, StatUndecoded+"kernel PerfInfo") != 1 ||
		s.Get(event.CountDropped, StatUndecodedIO+"FileIo/Read v9 x64") != 1 {
		t.Errorf("stats: %+v", s.Sorted())
	}
	var detail event.Stats
	d.StatsDetail(&detail)
	if len(detail.Counters) != 3 || detail.Get(event.CountInfo, StatUndecodedDetail+"provider Microsoft-Windows-DotNETRuntime {e13c0d23-ccbc-4e12-931b-d9cc2eee27e4} id 10 v0 x64") != 3 {
		t.Errorf("detail: %+v", detail.Sorted())
	}
	if d.Unknown() != 6 {
		t.Errorf("unknown %d", d.Unknown())
	}
}

func TestHeader(t *testing.T) {
	for _, ptr := range []int{4, 8} {
		var p payload
		p.u32(0, 65536).u32(4, 0x00020206).u32(8, 9200).u32(12, 8).u32(44, uint32(ptr)).u32(48, 3).u32(52, 3592)
		tz := 56 + 2*ptr
		p.u32(tz, 480)
		p.u64(tz+176, 1).u64(tz+184, 10_000_000).u64(tz+192, 132404000000000000).u32(tz+200, 1).u32(tz+204, 2)
		p.wstr(tz+208, "Relogger").wstr(len(p), "[multiple files]")
		ev := decode(t, kernelRecord(0, 0, 2, ptr, p))
		h := ev.Header
		if ev.Kind != KindTraceHeader || h == nil || h.OSVersion() != "6.2.9200" || h.PerfFreq != 10_000_000 ||
			h.StartTime != 132404000000000000 || h.ClockType != 1 || h.BuffersLost != 2 || h.EventsLost != 3 ||
			h.NumberOfProcessors != 8 || h.SessionName != "Relogger" || h.LogFileName != "[multiple files]" || h.UTCOffsetMinutes != 480 {
			t.Errorf("header ptr %d: %+v", ptr, h)
		}
		_, err := NewDecoder().Decode(kernelRecord(0, 0, 2, ptr, p[:100]), &Event{})
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("truncated header: %v", err)
		}
	}
}

func TestParseGUID(t *testing.T) {
	g, err := ParseGUID("{90cbdc39-4a3e-11d1-84f4-0000f80464e3}")
	if err != nil || g != GUIDFileIo || g.String() != "90cbdc39-4a3e-11d1-84f4-0000f80464e3" {
		t.Errorf("%v %v", g, err)
	}
	for _, bad := range []string{"", "90cbdc39-4a3e-11d1-84f4-0000f80464e", "zzcbdc39-4a3e-11d1-84f4-0000f80464e3"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
}
