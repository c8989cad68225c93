package kernel

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

func kpRecord(id, version uint16, ptr int, data []byte) *record.Record {
	return &record.Record{Kind: record.KindEvent, Provider: GUIDKernelProc, ID: id, Version: version,
		PointerSize: ptr, UserData: data, ThreadID: 10, ProcessID: 20}
}

// TestKernelProcessLayouts decodes byte-exact Microsoft-Windows-Kernel-
// Process payloads written by offset from the manifest layouts (the
// ProcessStart v0 and ProcessStop v1 offsets match the records of the Tx
// Process.etl fixture), and every truncation of them.
func TestKernelProcessLayouts(t *testing.T) {
	const exe = `\Device\HarddiskVolume2\Program Files (x86)\Microsoft Visual Studio 10.0\Common7\IDE\devenv.exe`
	var start0 payload // ProcessID @0, CreateTime @4, ParentProcessID @12, SessionID @16, ImageName @20
	start0.u32(0, 5864).u64(4, 0x01cb779c9ae2ea90).u32(12, 3324).u32(16, 1).wstr(20, exe)
	var start1 payload // v1: Flags @20, ImageName @24
	start1.u32(0, 5864).u64(4, 0x01cb779c9ae2ea90).u32(12, 3324).u32(16, 1).u32(20, 0).wstr(24, exe)
	start1.u32(len(start1), 0xabcd).u32(len(start1), 0x5000).wstr(len(start1), "").wstr(len(start1), "") // v2 tail
	var start3 payload                                                                                   // v3: seq @4, CreateTime @12, ParentProcessID @20, parent seq @24, SessionID @32, Flags @36, elevation @40, @44, SID @48
	start3.u32(0, 5864).u64(4, 77).u64(12, 0x01cb779c9ae2ea90).u32(20, 3324).u64(24, 12).u32(32, 1).u32(36, 0).u32(40, 1).u32(44, 0)
	start3.grow(48 + 12) // S-1-16-8192: revision 1, one sub-authority
	start3[48], start3[49] = 1, 1
	start3[48+7] = 16
	start3.u32(56, 8192).wstr(60, exe)
	for _, c := range []struct {
		version uint16
		data    payload
	}{{0, start0}, {1, start1}, {2, start1}, {3, start3}} {
		ev := decode(t, kpRecord(KernelProcessStart, c.version, 8, c.data))
		if ev.Kind != KindProcess || ev.Phase != PhaseStart || ev.Pid != 5864 || ev.PPid != 3324 || ev.SessionID != 1 ||
			ev.Name.String() != exe || ev.Native != "Kernel-Process/ProcessStart" {
			t.Errorf("ProcessStart v%d: %+v %q", c.version, ev, ev.Name.String())
		}
	}
	ev := decode(t, kpRecord(KernelProcessRundown, 0, 8, start1))
	if ev.Kind != KindProcess || ev.Phase != PhaseDCStart || ev.Pid != 5864 || ev.Name.String() != exe {
		t.Errorf("ProcessRundown v0: %+v", ev)
	}

	// ProcessStop v1 (91 bytes in the fixture): ImageName at 76.
	var stop1 payload
	stop1.u32(0, 5380).u64(4, 1).u64(12, 2).u32(20, 259).u32(24, 3).u32(28, 0x60).u64(32, 0x59d000).u64(40, 0x706000)
	stop1.u64(48, 0x33c3149f00).u32(56, 12).u32(60, 1).u32(64, 0x34).u32(68, 0).u32(72, 0)
	stop1 = append(stop1, "SearchProtocol\x00"...)
	if len(stop1) != 91 {
		t.Fatalf("stop v1 payload is %d bytes", len(stop1))
	}
	var stop0 payload // v0: ImageName at 48
	stop0.u32(0, 5380).u64(4, 1).u64(12, 2).u32(20, 259).u32(24, 3).u32(28, 0x60).u64(32, 1).u64(40, 2)
	stop0 = append(stop0, "SearchProtocol\x00"...)
	var stop2 payload // v2: ProcessSequenceNumber after ProcessID, ImageName at 84
	stop2.u32(0, 5380).u64(4, 99).u64(12, 1).u64(20, 2).u32(28, 259).grow(84)
	stop2 = append(stop2, "SearchProtocol\x00"...)
	for _, c := range []struct {
		version uint16
		data    payload
	}{{0, stop0}, {1, stop1}, {2, stop2}} {
		ev := decode(t, kpRecord(KernelProcessStop, c.version, 8, c.data))
		if ev.Kind != KindProcess || ev.Phase != PhaseEnd || ev.Pid != 5380 || ev.ExitStatus != 259 ||
			ev.ImageFileName.String() != "SearchProtocol" {
			t.Errorf("ProcessStop v%d: %+v %q", c.version, ev, ev.ImageFileName.String())
		}
	}

	// ThreadStart/Stop v1: ProcessID, ThreadID, then addresses.
	var th payload
	th.u32(0, 3664).u32(4, 2900).grow(68)
	for id, phase := range map[uint16]Phase{KernelThreadStart: PhaseStart, KernelThreadStop: PhaseEnd} {
		ev := decode(t, kpRecord(id, 1, 8, th))
		if ev.Kind != KindThread || ev.Phase != phase || ev.Pid != 3664 || ev.Tid != 2900 {
			t.Errorf("thread id %d: %+v", id, ev)
		}
	}

	// ImageLoad v0: ImageBase P, ImageSize P, ProcessID, checksum,
	// timestamp, DefaultBase P, ImageName (x64 @36, x86 @24).
	for _, c := range []struct{ ptr, nameOff int }{{8, 36}, {4, 24}} {
		var im payload
		im.ptr(0, c.ptr, 0x749f0000).ptr(c.ptr, c.ptr, 0x19000).u32(2*c.ptr, 2800).u32(2*c.ptr+4, 0x1db56).
			u32(2*c.ptr+8, 0x4ab33e50).ptr(2*c.ptr+12, c.ptr, 0x749f0000).wstr(c.nameOff, `\Windows\System32\cmd.exe`)
		for id, phase := range map[uint16]Phase{KernelImageLoad: PhaseStart, KernelImageUnload: PhaseEnd} {
			ev := decode(t, kpRecord(id, 0, c.ptr, im))
			if ev.Kind != KindImage || ev.Phase != phase || ev.Pid != 2800 || ev.ImageBase != 0x749f0000 ||
				ev.ImageSize != 0x19000 || ev.Name.String() != `\Windows\System32\cmd.exe` {
				t.Errorf("image id %d ptr %d: %+v", id, c.ptr, ev)
			}
		}
	}

	// Truncations: an error naming the field, never a panic. The last
	// string may lack its terminator, so cut before it.
	for _, c := range []struct {
		id, version uint16
		data        payload
		cut         int
		field       string
	}{
		{KernelProcessStart, 0, start0, 14, "ParentProcessID"},
		{KernelProcessStart, 3, start3, 50, "MandatoryLabel"},
		{KernelProcessStart, 3, start3, 58, "MandatoryLabel"},
		{KernelProcessStop, 1, stop1, 60, "ReadOperationCount..HardFaultCount"},
		{KernelThreadStart, 1, th, 6, "ThreadID"},
	} {
		_, err := NewDecoder().Decode(kpRecord(c.id, c.version, 8, c.data[:c.cut]), &Event{})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("id %d v%d cut at %d: %v, want a FieldError on %s", c.id, c.version, c.cut, err, c.field)
		}
	}
	// Priority changes are known and ignored, not counted as unknown.
	d := NewDecoder()
	if ok, err := d.Decode(kpRecord(KernelCPUPriority, 0, 8, make([]byte, 16)), &Event{}); !ok || err != nil || d.Unknown() != 0 {
		t.Errorf("priority change: ok=%v err=%v unknown=%d", ok, err, d.Unknown())
	}
	// An unknown version is not guessed.
	if ok, _ := NewDecoder().Decode(kpRecord(KernelProcessStart, 9, 8, start3), &Event{}); ok {
		t.Error("ProcessStart v9 decoded")
	}
}

// TestClassOf: every class GUID maps back to its class, and the GUIDs
// differ in their first 32 bits (ClassOf relies on it).
func TestClassOf(t *testing.T) {
	seen := map[uint32]Class{}
	for c := ClassEventTrace; c < numClasses; c++ {
		g := classGUID[c]
		if o, dup := seen[g.Data1]; dup {
			t.Errorf("%v and %v share Data1 %08x", c, o, g.Data1)
		}
		seen[g.Data1] = c
		if got := ClassOf(&record.Record{Kind: record.KindEvent, Provider: g}); got != c {
			t.Errorf("ClassOf(%v) = %v, want %v", g, got, c)
		}
		near := g
		near.Data4[7] ^= 1
		if got := ClassOf(&record.Record{Kind: record.KindClassic, Provider: near}); got != ClassUnknown {
			t.Errorf("ClassOf(%v) = %v, want unknown", near, got)
		}
	}
	if got := ClassOf(&record.Record{Kind: record.KindPerfInfo, Group: record.GroupDiskIo, Provider: GUIDFileIo}); got != ClassDiskIo {
		t.Errorf("kernel header: %v", got)
	}
	// Other providers, whatever their Data1 (those of the table's slots
	// and their neighbours included): unknown, as by a comparison with
	// every class GUID.
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 100000; i++ {
		g := record.GUID{Data1: rng.Uint32(), Data2: uint16(rng.Uint32()), Data3: uint16(rng.Uint32())}
		if i < 64 {
			g.Data1 = classGUID[1+i%int(numClasses-1)].Data1 + uint32(i/int(numClasses-1)) // near a class's Data1
			g.Data2 ^= 1
		}
		want := ClassUnknown
		for c := ClassEventTrace; c < numClasses; c++ {
			if classGUID[c] == g {
				want = c
			}
		}
		if got := ClassOf(&record.Record{Kind: record.KindEvent, Provider: g}); got != want {
			t.Fatalf("ClassOf(%v) = %v, want %v", g, got, want)
		}
	}
}

func TestCodeFilter(t *testing.T) {
	f := NewCodeFilter(func(k Kind, op event.Op) bool { return k == KindFileRundown || k == KindImage })
	for _, c := range []struct {
		r    *record.Record
		want bool
	}{
		{kernelRecord(record.GroupFileIo, OpcodeFileRundown, 2, 8, nil), true},
		{kernelRecord(record.GroupFileIo, OpcodeRead, 3, 8, nil), false},
		{kernelRecord(record.GroupImage, OpcodeImageDCStart, 3, 8, nil), true},
		{kernelRecord(record.GroupProcess, OpcodeProcessImageLoad, 3, 8, nil), true},
		{kpRecord(KernelImageLoad, 0, 8, nil), true},
		{kpRecord(KernelImageLoad+256, 0, 8, nil), false},
		{kernelRecord(record.GroupStackWalk, 32, 2, 8, nil), false},
	} {
		if got := f.Match(c.r); got != c.want {
			t.Errorf("Match(%v) = %v, want %v", KeyOf(c.r), got, c.want)
		}
	}
}
