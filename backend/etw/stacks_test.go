package etw

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/internal/stackjoin"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/symbolize"
)

// Synthetic StackWalk, ImageID and iotrace provider records, written
// byte by byte from the layouts in docs/etw.md.

// stack adds a StackWalk Stack (32) for the event at evTs on tid.
func (s *synth) stack(ts, evTs int64, pid, tid uint32, frames ...uint64) {
	b := buf{}.u64(uint64(evTs)).u32(pid).u32(tid)
	for _, f := range frames {
		b = b.ptr(s.ptr, f)
	}
	s.add(record.KindPerfInfo, record.GroupStackWalk, 32, 2, ts, record.NoID, record.NoID, 0, b)
}

// keyRef adds a StackKeyKernel (37) or StackKeyUser (38).
func (s *synth) keyRef(ts int64, opcode uint8, evTs int64, pid, tid uint32, key uint64) {
	b := buf{}.u64(uint64(evTs)).u32(pid).u32(tid).ptr(s.ptr, key)
	s.add(record.KindPerfInfo, record.GroupStackWalk, opcode, 2, ts, record.NoID, record.NoID, 0, b)
}

// keyDef adds a KeyCreate (34), KeyDelete (35) or KeyRundown (36).
func (s *synth) keyDef(ts int64, opcode uint8, key uint64, frames ...uint64) {
	b := buf{}.ptr(s.ptr, key)
	for _, f := range frames {
		b = b.ptr(s.ptr, f)
	}
	s.add(record.KindPerfInfo, record.GroupStackWalk, opcode, 2, ts, record.NoID, record.NoID, 0, b)
}

func (s *synth) classic(ts int64, prov record.GUID, opcode uint8, version uint16, pid, tid uint32, data buf) {
	s.recs = append(s.recs, record.Record{Kind: record.KindClassic, Provider: prov, Opcode: opcode, Version: version,
		PointerSize: s.ptr, ThreadID: tid, ProcessID: pid, Timestamp: ts, UserData: data, FileOffset: int64(len(s.recs))})
}

// imageID adds KernelTraceControl ImageID (0).
func (s *synth) imageID(ts int64, base, size uint64, pid, tds uint32, name string) {
	s.classic(ts, kernel.GUIDImageID, 0, 2, pid, 1, buf{}.ptr(s.ptr, base).ptr(s.ptr, size).u32(pid).u32(tds).wstr(name))
}

// dbgID adds KernelTraceControl DbgID_RSDS (36).
func (s *synth) dbgID(ts int64, base uint64, pid uint32, guid [16]byte, age uint32, pdb string) {
	b := buf{}.ptr(s.ptr, base).u32(pid)
	b = append(b, guid[:]...)
	s.classic(ts, kernel.GUIDImageID, 36, 2, pid, 1, b.u32(age).astr(pdb))
}

// imageV2 adds an Image event with a TimeDateStamp.
func (s *synth) imageV2(ts int64, opcode uint8, pid uint32, base, size uint64, tds uint32, path string) {
	s.imageV2Sum(ts, opcode, pid, base, size, tds, 0x1234, path)
}

// imageV2Sum is imageV2 with the image's PE checksum.
func (s *synth) imageV2Sum(ts int64, opcode uint8, pid uint32, base, size uint64, tds, checksum uint32, path string) {
	b := buf{}.ptr(s.ptr, base).ptr(s.ptr, size).u32(pid).u32(checksum).u32(tds).u32(0).ptr(s.ptr, base)
	b = b.u32(0).u32(0).u32(0).u32(0).wstr(path)
	s.add(record.KindSystem, record.GroupImage, opcode, 2, ts, record.NoID, pid, 0, b)
}

// seqSink records facts and events in the order they arrive.
type seqSink struct {
	sink
	seq []any // *event.Fact or *event.Event, copies
}

func (s *seqSink) Event(e *event.Event) error {
	c := *e
	s.seq = append(s.seq, &c)
	return s.sink.Event(e)
}

func (s *seqSink) Fact(f *event.Fact) error {
	c := *f
	s.seq = append(s.seq, &c)
	return s.sink.Fact(f)
}

// stackOf returns the stack fact of e, checking it came before e.
func (s *seqSink) stackOf(t *testing.T, e *event.Event) *event.Fact {
	t.Helper()
	for _, x := range s.seq {
		switch v := x.(type) {
		case *event.Fact:
			if v.Kind == event.FactStack && v.Handle == e.Stack {
				return v
			}
		case *event.Event:
			if v.ID == e.ID {
				t.Fatalf("event %d refers to stack %d before its fact", e.ID, e.Stack)
			}
		}
	}
	t.Fatalf("event %d: stack %d has no fact", e.ID, e.Stack)
	return nil
}

func runSynth(t *testing.T, s *synth) *seqSink {
	t.Helper()
	out := &seqSink{}
	if err := Run(context.Background(), &SliceRecords{Recs: s.recs}, Options{}, out); err != nil {
		t.Fatal(err)
	}
	return out
}

const (
	kA, kB = 0xfffff80000101000, 0xfffff80000202000 // kernel return addresses (64-bit)
	uA, uB = 0x00007ff600001000, 0x00007ff600002000 // user ones
)

// stackScenario: a FileIo read with a whole stack, a disk read whose
// compressed stack is defined only at the end (reference before its
// definition), the user part of the disk read shared by a second kernel
// event of the thread, a stack of a record iotrace does not decode, a
// truncated stack, and a stack of a thread event.
func stackScenario(ptr int) *synth {
	s := &synth{ptr: ptr, version: 3}
	k1, k2, u1, u2 := uint64(kA), uint64(kB), uint64(uA), uint64(uB)
	if ptr == 4 {
		k1, k2, u1, u2 = 0x80101000, 0x80202000, 0x00401000, 0x00402000
	}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.thread(1000, 3, pidSvc, tidSvc)
	s.name(1000, 36, fkA, `\Device\HarddiskVolume2\a.txt`)
	at := func(msec float64) int64 { return 1000 + int64(msec*ms) }
	// A read with a whole stack, then its OpEnd.
	s.rw(at(10), 67, tidSvc, pidSvc, irpA, foA, fkA, 0, 4096)
	s.stack(at(10), at(10), pidSvc, tidSvc, k1, k2, u1, u2)
	s.opEnd(at(11), irpA, 4096, 0)
	// The same stack again: one fact.
	s.rw(at(12), 67, tidSvc, pidSvc, irpA, foA, fkA, 0, 4096)
	s.stack(at(12), at(12), pidSvc, tidSvc, k1, k2, u1, u2)
	s.opEnd(at(13), irpA, 4096, 0)
	// Two disk reads of one system call: kernel key references at each
	// Init, one user key reference when the thread returns to user mode
	// (after both completed); the keys are defined at the end.
	s.diskInit(at(20), 12, tidSvc, pidSvc, irpB)
	s.keyRef(at(20), 37, at(20), pidSvc, tidSvc, 0x10)
	s.diskDone(at(21), 10, 0, irpB, fkA, 0, 4096, 10000, tidSvc)
	s.diskInit(at(22), 12, tidSvc, pidSvc, irpStackC)
	s.keyRef(at(22), 37, at(22), pidSvc, tidSvc, 0x20)
	s.diskDone(at(23), 10, 0, irpStackC, fkA, 4096, 4096, 10000, tidSvc)
	s.keyRef(at(24), 38, at(20), pidSvc, tidSvc, 0x10) // same key value, user space
	// A CPU sample (iotrace does not decode it) and its stack.
	s.sample(at(29), tidSvc, k1)
	s.stack(at(30), at(29), pidSvc, tidSvc, k1, u1)
	// A truncated stack: a frame cut short.
	s.add(record.KindPerfInfo, record.GroupStackWalk, 32, 2, at(31), record.NoID, record.NoID, 0,
		buf{}.u64(uint64(at(31))).u32(pidSvc).u32(tidSvc).u32(0x1234)[:16+ptr+2])
	// A thread start with its stack: not kept.
	s.thread(at(40), 1, pidSvc, tidSvc+1)
	s.stack(at(40), at(40), pidSvc, tidSvc+1, k1, u1)
	// The key rundown at the end.
	s.keyDef(at(50), 36, 0x10, k2, k1)
	s.keyDef(at(50), 36, 0x20, k1)
	s.keyDef(at(50), 36, 0x10, u2, u1) // user key 0x10
	return s
}

// sample adds a PerfInfo SampledProfile (46) of thread tid at ip, which
// iotrace does not decode.
func (s *synth) sample(ts int64, tid uint32, ip uint64) {
	s.add(record.KindSystem, record.GroupPerfInfo, 46, 2, ts, tid, record.NoID, 0, buf{}.ptr(s.ptr, ip).u32(tid).u32(0))
}

// TestStackOrphans: the stacks no event takes are told apart. A stack
// right after a record iotrace does not decode, or of a record with no
// thread in its header more than stackjoin.NumRecent records before it or on
// another processor, is of a record of the trace (information); one of
// no record of its time and thread lost its event and is a problem
// (CountLost); a user part alone is not looked for. A source that applies
// the first pass's filter before its merge gives the same counts.
func TestStackOrphans(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.thread(1000, 3, pidSvc, tidSvc)
	// A sample and its stack right after it.
	s.sample(2000, tidSvc, kA)
	s.stack(2000, 2000, pidSvc, tidSvc, kA, uA)
	// A sample with no thread in its header, stackjoin.NumRecent+4 samples of
	// another thread, then its stack.
	s.add(record.KindSystem, record.GroupPerfInfo, 46, 2, 3000, record.NoID, record.NoID, 0, buf{}.ptr(8, kA).u32(tidSvc).u32(0))
	for i := range stackjoin.NumRecent + 4 {
		s.sample(3001+int64(i), tidSvc+1, kB)
	}
	s.stack(3100, 3000, pidSvc, tidSvc, kA, uA)
	// A sample with no thread in its header on processor 1, its stack
	// on processor 0.
	s.add(record.KindSystem, record.GroupPerfInfo, 46, 2, 3200, record.NoID, record.NoID, 1, buf{}.ptr(8, kA).u32(tidSvc).u32(0))
	s.stack(3201, 3200, pidSvc, tidSvc, kB)
	// Stacks of no record: a whole one, a kernel key reference (with
	// the user part of its system call), and a user part alone.
	s.stack(4000, 3900, pidSvc, tidSvc, kA, uB)
	s.keyRef(4100, 37, 4050, pidSvc, tidSvc, 0x10)
	s.keyRef(4200, 38, 4050, pidSvc, tidSvc, 0x20)
	s.stack(4300, 4250, pidSvc, tidSvc, uA)
	s.keyDef(5000, 36, 0x10, kB)
	s.keyDef(5000, 36, 0x20, uB)
	for _, src := range []Records{&SliceRecords{Recs: s.recs}, &keptSlice{recs: s.recs, t0: 1 << 62}, &keptSlice{recs: s.recs, t0: 1000}} {
		out := &seqSink{}
		if err := Run(context.Background(), src, Options{}, out); err != nil {
			t.Fatal(err)
		}
		st := &out.trailer.Stats
		for _, c := range []struct {
			kind event.CounterKind
			name string
			want uint64
		}{
			{event.CountInfo, StatStacksNoEvent, 3},
			{event.CountLost, StatStacksOrphan, 3}, // the key reference's user part is counted with it
			{event.CountInfo, StatStacksUserAlone, 1},
		} {
			if got := st.Get(c.kind, c.name); got != c.want {
				t.Errorf("%T: %s = %d, want %d\n%v", src, c.name, got, c.want, st.Sorted())
			}
		}
		if !slices.ContainsFunc(st.Problems(), func(c event.Counter) bool { return c.Name == StatStacksOrphan && c.Value == 3 }) {
			t.Errorf("%T: orphan stacks not among the problems %v", src, st.Problems())
		}
	}
	// iotrace print's summary lists them among the problems.
	var b strings.Builder
	if err := Run(context.Background(), &SliceRecords{Recs: s.recs}, Options{}, output.NewText(&b, output.Options{})); err != nil {
		t.Fatal(err)
	}
	_, problems, _ := strings.Cut(b.String(), "# PROBLEMS")
	if !strings.Contains(problems, "lost       "+StatStacksOrphan+": 3\n") {
		t.Errorf("print's summary:\n%s", b.String())
	}
}

// keptSlice is a SliceRecords that applies the first pass's filter as the
// file reader does: to every record, then passing on those it keeps and
// those at or before t0.
type keptSlice struct {
	recs []record.Record
	t0   int64
}

func (k *keptSlice) Each(ctx context.Context, fn func(*record.Record) error) error {
	return (&SliceRecords{Recs: k.recs}).Each(ctx, fn)
}

func (k *keptSlice) EachKept(ctx context.Context, keep func(*record.Record) bool, fn func(*record.Record) error) error {
	var pass []*record.Record
	for i := range k.recs {
		if keep(&k.recs[i]) || k.recs[i].Timestamp <= k.t0 {
			pass = append(pass, &k.recs[i])
		}
	}
	for _, r := range pass {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (k *keptSlice) Stats() event.Stats { return event.Stats{} }

func TestStacksJoined(t *testing.T) {
	for _, ptr := range []int{8, 4} {
		t.Run(map[int]string{8: "x64", 4: "x86"}[ptr], func(t *testing.T) {
			k1, k2, u1, u2 := uint64(kA), uint64(kB), uint64(uA), uint64(uB)
			if ptr == 4 {
				k1, k2, u1, u2 = 0x80101000, 0x80202000, 0x00401000, 0x00402000
			}
			out := runSynth(t, stackScenario(ptr))
			reads := out.byNative("FileIo/Read")
			if len(reads) != 2 {
				t.Fatalf("%d reads", len(reads))
			}
			f := out.stackOf(t, &reads[0])
			if !slices.Equal(f.Kernel, []uint64{k1, k2}) || !slices.Equal(f.User, []uint64{u1, u2}) || f.Flags != 0 {
				t.Errorf("read stack %+v", f)
			}
			if reads[1].Stack != reads[0].Stack {
				t.Errorf("identical stacks not interned: %d, %d", reads[0].Stack, reads[1].Stack)
			}
			disks := out.byNative("DiskIo/Read")
			if len(disks) != 2 {
				t.Fatalf("%d disk reads", len(disks))
			}
			d1, d2 := out.stackOf(t, &disks[0]), out.stackOf(t, &disks[1])
			if !slices.Equal(d1.Kernel, []uint64{k2, k1}) || !slices.Equal(d1.User, []uint64{u2, u1}) {
				t.Errorf("disk 1 stack %+v", d1)
			}
			if !slices.Equal(d2.Kernel, []uint64{k1}) || !slices.Equal(d2.User, []uint64{u2, u1}) {
				t.Errorf("disk 2 stack (user part shared) %+v", d2)
			}
			n := 0
			for _, x := range out.facts {
				if x.Kind == event.FactStack {
					n++
				}
			}
			if n != 3 {
				t.Errorf("%d stack facts, want 3", n)
			}
			st := &out.trailer.Stats
			for _, c := range []struct {
				kind event.CounterKind
				name string
				want uint64
			}{
				{event.CountInfo, StatStacksFile, 2},
				{event.CountInfo, StatStacksDisk, 2},
				{event.CountInfo, StatStackRecords, 5},
				{event.CountInfo, StatStackUserShared, 1},
				{event.CountInfo, StatStacksNoEvent, 1},
				{event.CountInfo, StatStacksOther, 1},
				{event.CountDropped, StatDecodeErrors + ": StackWalk/Stack v2 " + map[int]string{8: "x64", 4: "x86"}[ptr], 1},
			} {
				if got := st.Get(c.kind, c.name); got != c.want {
					t.Errorf("%s = %d, want %d\n%v", c.name, got, c.want, st.Sorted())
				}
			}
		})
	}
}

// TestStackKeyUndefined: a reference to a key no definition names loses
// that part, flagged and counted.
func TestStackKeyUndefined(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.diskInit(2000, 12, tidSvc, pidSvc, irpB)
	s.keyRef(2000, 37, 2000, pidSvc, tidSvc, 0x10)
	s.keyRef(2001, 38, 2000, pidSvc, tidSvc, 0x30)
	s.diskDone(3000, 10, 0, irpB, fkA, 0, 4096, 100, tidSvc)
	s.keyDef(4000, 36, 0x10, kA)
	s.keyDef(4000, 36, 0x30, kB) // a kernel definition: not the user key
	out := runSynth(t, s)
	d := out.byNative("DiskIo/Read")
	if len(d) != 1 {
		t.Fatalf("%d disk reads", len(d))
	}
	f := out.stackOf(t, &d[0])
	if !slices.Equal(f.Kernel, []uint64{kA}) || len(f.User) != 0 || f.Flags != event.FactUserLost {
		t.Errorf("stack %+v", f)
	}
	if got := out.trailer.Stats.Get(event.CountDropped, StatStackKeyUndefined); got != 1 {
		t.Errorf("undefined keys %d", got)
	}
}

// TestKernelFileExtStack: a manifest event's stack in its extended data.
func TestKernelFileExtStack(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	// Kernel-File Create (id 12, v1): Irp, FileObject, IssuingThreadId,
	// CreateOptions, CreateAttributes, ShareAccess, FileName.
	b := buf{}.u64(irpA).u64(foA).u32(tidSvc).u32(0x01000000).u32(0).u32(7).wstr(`\Device\HarddiskVolume2\x`)
	ext := buf{}.u64(0).u64(kA).u64(uA)
	s.recs = append(s.recs, record.Record{Kind: record.KindEvent, Provider: kernel.GUIDKernelFile, ID: 12, Version: 1,
		PointerSize: 8, ThreadID: tidSvc, ProcessID: pidSvc, Timestamp: 2000, UserData: b,
		Ext: []record.ExtItem{{Type: 6, Data: ext}}})
	out := runSynth(t, s)
	if len(out.events) != 1 || out.events[0].Stack == 0 {
		t.Fatalf("events %+v", out.events)
	}
	f := out.stackOf(t, &out.events[0])
	if !slices.Equal(f.Kernel, []uint64{kA}) || !slices.Equal(f.User, []uint64{uA}) {
		t.Errorf("stack %+v", f)
	}
}

const irpStackC = 0xffffc000000c0000

var testGUID = [16]byte{0x00, 0x21, 0x48, 0x72, 0x1c, 0x1c, 0x03, 0x4a, 0xae, 0xd8, 0xc4, 0xc7, 0x1c, 0x2e, 0x8d, 0x1d}

// TestModuleIdentity: Image events become module facts with their PE and
// PDB identity, whether the identity records come before their image
// (merged traces) or after it (iotrace's own provider, live); an identity
// without its image is counted.
func TestModuleIdentity(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.volume(1000, `\Device\HarddiskVolume2\`, `C:\`)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	// Merged trace: ImageID, DbgID_RSDS, then the image rundown.
	s.imageID(2000, 0xfffff80021489000, 7634944, 0, 1343269963, "ntkrnlmp.exe")
	s.dbgID(2000, 0xfffff80021489000, 0, testGUID, 2, "ntkrnlmp.pdb")
	s.imageV2(2000, 3, 0, 0xfffff80021489000, 7634944, 0, `\SystemRoot\system32\ntoskrnl.exe`)
	// Live (iotrace provider): the load, then its identity.
	s.imageV2(3000, 10, pidSvc, 0x7ff700000000, 0x20000, 0, `\Device\HarddiskVolume2\Windows\System32\svchost.exe`)
	im := ownprovider.Image{Base: 0x7ff700000000, Size: 0x20000, ProcessID: pidSvc, TimeDateStamp: 0x5010AC4B,
		Age: 3, PdbGUID: record.GUIDFromBytes(testGUID[:]), FileName: `C:\Windows\System32\svchost.exe`, PdbName: `d:\build\svchost.pdb`}
	s.classic(3000, ownprovider.GUID, ownprovider.OpcodeImage, ownprovider.Version, pidSvc, tidSvc, im.Encode())
	// An identity without its image.
	s.dbgID(4000, 0x7ff800000000, pidSvc, testGUID, 1, "lost.pdb")
	// The iotrace provider's volume map, and a marker.
	s.classic(4500, ownprovider.GUID, ownprovider.OpcodeVolume, ownprovider.Version, 0, 0,
		(&ownprovider.Volume{NtPath: `\Device\HarddiskVolume9`, DosPath: `E:`}).Encode())
	s.classic(4600, ownprovider.GUID, ownprovider.OpcodeMarker, ownprovider.Version, pidSvc, tidSvc, ownprovider.Marker("phase 2"))
	s.imageV2(5000, 10, pidSvc, 0x7ff900000000, 0x1000, 0, `\Device\HarddiskVolume9\x.dll`)
	s.imageV2(6000, 2, pidSvc, 0x7ff900000000, 0x1000, 0, `\Device\HarddiskVolume9\x.dll`)
	// An image event without time stamp or checksum: both from iotrace's
	// image record.
	s.imageV2Sum(7000, 10, pidSvc, 0x7ffa00000000, 0x3000, 0, 0, `\Device\HarddiskVolume2\y.dll`)
	s.classic(7000, ownprovider.GUID, ownprovider.OpcodeImage, ownprovider.Version, pidSvc, tidSvc,
		(&ownprovider.Image{Base: 0x7ffa00000000, Size: 0x3000, ProcessID: pidSvc, TimeDateStamp: 0x5010AC4C, CheckSum: 0xabcdef,
			FileName: `C:\y.dll`}).Encode())
	out := runSynth(t, s)
	var mods []event.Fact
	for _, f := range out.facts {
		if f.Kind == event.FactModule {
			mods = append(mods, f)
		}
	}
	if len(mods) != 5 {
		t.Fatalf("%d module facts: %+v", len(mods), mods)
	}
	k := mods[0]
	if k.Pid != 0 || k.Handle != 0xfffff80021489000 || k.Size != 7634944 || !k.Rundown ||
		k.Name != `C:\Windows\system32\ntoskrnl.exe` && !strings.HasSuffix(k.Name, `system32\ntoskrnl.exe`) ||
		k.Detail != "pe:5010AC4B748000/00001234" || k.Image != "pdb:ntkrnlmp.pdb/724821001C1C4A03AED8C4C71C2E8D1D2" {
		t.Errorf("kernel module %+v", k)
	}
	u := mods[1]
	if u.Pid != pidSvc || u.Handle != 0x7ff700000000 || u.Rundown || u.Name != `C:\Windows\System32\svchost.exe` ||
		u.Detail != "pe:5010AC4B20000/00001234" || u.Image != symbolize.PDBID("svchost.pdb", testGUID, 3) {
		t.Errorf("user module %+v", u)
	}
	if y := mods[4]; y.Name != `C:\y.dll` || y.Detail != "pe:5010AC4C3000/00ABCDEF" {
		t.Errorf("module identified by iotrace's record %+v", y)
	}
	if x := mods[2]; x.Name != `E:\x.dll` || x.Image != "" || x.Detail != "" {
		t.Errorf("module on the iotrace volume %+v", x)
	}
	if x := mods[3]; !x.End || x.Handle != 0x7ff900000000 || x.Pid != pidSvc {
		t.Errorf("unload %+v", x)
	}
	st := &out.trailer.Stats
	if got := st.Get(event.CountUnresolved, StatIdentityNoImage); got != 1 {
		t.Errorf("identities without image %d\n%v", got, st.Sorted())
	}
	if got := st.Get(event.CountInfo, StatModulesPDB); got != 2 {
		t.Errorf("modules with PDB %d", got)
	}
	m := out.byNative("iotrace/mark")
	if len(m) != 1 || m[0].Note != "phase 2" || m[0].Op != event.OpMarker || m[0].Pid != pidSvc {
		t.Errorf("markers %+v", m)
	}
}

// TestPerfViewStacks checks the PerfView fixture's stacks and modules
// against values read independently of the decoder:
//
//   - the Kernel-File Creates with a stack: the records of provider
//     edd08927-… with event id 12 that carry an extended item of type 6
//     (STACK_TRACE64), counted here from the raw records (562);
//   - the disk I/Os with a stack: the DiskIo Init records (group 1,
//     opcodes 12, 13, 15) for which some StackWalk record (group 0x18,
//     opcodes 32, 37, 38) has the Init's timestamp at payload offset 0
//     and its thread at offset 12, scanned here by hand (1,231: every
//     disk I/O of the file);
//   - ntoskrnl's identity: the DbgID_RSDS record (KernelTraceControl
//     opcode 36) whose ImageBase (offset 0) is 0xfffff80021489000, its
//     GUID (offset 12) and age (offset 28) read by hand here and printed
//     once: 72482100-1c1c-4a03-aed8-c4c71c2e8d1d, age 2, ntkrnlmp.pdb
//     (the golden TraceEvent baseline shows the start of the GUID,
//     "72482100-1c1c-4a03-a…", Age=2 and PDBFileName=ntkrnlmp.pdb);
//     ImageSize 7,634,944 and TimeDateStamp 1,343,269,963 are in the
//     baseline's ImageID and Image/DCStart lines, and the checksum
//     ImageChecksum=6,989,512 (0x6AA6C8) in the Image/DCStart line of
//     ImageBase 0xfffff80021489000 (golden/perfview_win8_x64_kernel_
//     diskio_fileio-names_clr_compressed.traceevent-baseline.txt, the
//     line after the ImageID of OriginalFileName=ntkrnlmp.exe);
//   - the stack records no event takes (6,933): every stack record
//     (opcodes 32, 37, 38) has a record of its time and thread (or of its
//     time, with no thread in the header) in the trace, found here over
//     the whole file: none is of a lost event.
func TestPerfViewStacks(t *testing.T) {
	path := filepath.Join(testenv.ETLDir(t), fixtureWin8)
	// The independent scan.
	r, err := etl.Open(path, etl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type key struct {
		ts  int64
		tid uint32
	}
	inits := map[key]bool{} // true: a flush (FlushInit, opcode 15)
	stacked := map[key]bool{}
	recs := map[key]bool{} // every record but stack walks
	var walks []key        // the stack records' events'

	extStacks := 0
	var rsds []byte
	_, err = r.Read(context.Background(), func(rec *record.Record) error {
		switch {
		case rec.Kind == record.KindEvent && rec.Provider == kernel.GUIDKernelFile && rec.ID == 12:
			for _, x := range rec.Ext {
				if x.Type == 6 {
					extStacks++
				}
			}
		case rec.Group == record.GroupDiskIo && rec.Kind != record.KindClassic && (rec.Opcode == 12 || rec.Opcode == 13 || rec.Opcode == 15):
			inits[key{rec.Timestamp, rec.ThreadID}] = rec.Opcode == 15
		case rec.Group == record.GroupStackWalk && rec.Kind != record.KindClassic && rec.Opcode >= 32 && rec.Opcode != 35 && rec.Opcode != 36 && len(rec.UserData) >= 16:
			k := key{int64(binary.LittleEndian.Uint64(rec.UserData)), binary.LittleEndian.Uint32(rec.UserData[12:])}
			stacked[k] = true
			walks = append(walks, k)
		case rec.Kind == record.KindClassic && rec.Provider == kernel.GUIDImageID && rec.Opcode == 36 &&
			binary.LittleEndian.Uint64(rec.UserData) == 0xfffff80021489000:
			rsds = slices.Clone(rec.UserData)
		}
		if rec.Group != record.GroupStackWalk || rec.Kind == record.KindClassic {
			recs[key{rec.Timestamp, rec.ThreadID}] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	diskStacks, flushStacks, flushes := 0, 0, 0
	for k, flush := range inits {
		if flush {
			flushes++
		}
		switch {
		case stacked[k] && flush:
			flushStacks++
		case stacked[k]:
			diskStacks++
		}
	}
	if extStacks != 562 || diskStacks+flushStacks != 1231 || len(inits) != 1231 || flushes != 2 || flushStacks != 2 {
		t.Fatalf("independent scan: %d Kernel-File stacks, %d+%d of %d disk Inits (%d flushes) with a stack",
			extStacks, diskStacks, flushStacks, len(inits), flushes)
	}
	orphans := 0
	for _, k := range walks {
		if !recs[k] && !recs[key{k.ts, record.NoID}] {
			orphans++
		}
	}
	if len(walks) != 9359 || orphans != 0 {
		t.Fatalf("independent scan: %d stack records, %d of no record", len(walks), orphans)
	}
	if len(rsds) < 45 {
		t.Fatalf("no DbgID_RSDS for ntoskrnl")
	}
	var guid [16]byte
	copy(guid[:], rsds[12:28])
	age := binary.LittleEndian.Uint32(rsds[28:])
	pdb := string(rsds[32 : len(rsds)-1])
	if guid != testGUID || age != 2 || pdb != "ntkrnlmp.pdb" {
		t.Fatalf("hand-read identity: %x age %d %q", guid, age, pdb)
	}

	// The pipeline.
	out := &seqSink{}
	if err := ReadFile(context.Background(), path, Options{}, out); err != nil {
		t.Fatal(err)
	}
	st := &out.trailer.Stats
	if got := st.Get(event.CountInfo, StatStacksFile); got != uint64(extStacks) {
		t.Errorf("file requests with a stack: %d, want %d", got, extStacks)
	}
	// Reads and writes, and flushes, counted apart alike: as many with
	// a stack as there are.
	if got, n := st.Get(event.CountInfo, StatStacksDisk), st.Get(event.CountInfo, StatDiskIOs); got != uint64(diskStacks) || n != uint64(len(inits)-flushes) {
		t.Errorf("disk I/Os with a stack: %d of %d, want %d of %d", got, n, diskStacks, len(inits)-flushes)
	}
	if got, n := st.Get(event.CountInfo, StatStacksFlush), st.Get(event.CountInfo, StatDiskFlushes); got != uint64(flushStacks) || n != uint64(flushes) {
		t.Errorf("disk flushes with a stack: %d of %d, want %d of %d", got, n, flushStacks, flushes)
	}
	// The 6,933 stack records no event takes: 6,932 of records
	// iotrace does not decode (samples, CLR…), a user part alone (its
	// event more than stackjoin.NumRecent records before it), none of a lost
	// event.
	for _, c := range []struct {
		kind event.CounterKind
		name string
		want uint64
	}{
		{event.CountInfo, StatStacksNoEvent, 6932},
		{event.CountInfo, StatStacksUserAlone, 1},
		{event.CountLost, StatStacksOrphan, uint64(orphans)},
	} {
		if got := st.Get(c.kind, c.name); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	var nt *event.Fact
	for i := range out.facts {
		f := &out.facts[i]
		if f.Kind == event.FactModule && f.Handle == 0xfffff80021489000 && f.Pid == 0 {
			nt = f
			break
		}
	}
	if nt == nil || nt.Size != 7634944 || !strings.HasSuffix(strings.ToLower(nt.Name), `\ntoskrnl.exe`) ||
		nt.Detail != "pe:5010AC4B748000/006AA6C8" || nt.Image != symbolize.PDBID(pdb, guid, age) {
		t.Fatalf("ntoskrnl module %+v", nt)
	}
	// Every frame of the stacks is inside a known module or counted as
	// outside every one by the stacks table.
	tab := stacks.New(stacks.Options{})
	for _, f := range out.facts {
		tab.Fact(&f)
	}
	var frames, outside, withStack int
	type cacheKey struct {
		stack uint64
		pid   uint32
		start int64
	}
	firstOutside := map[cacheKey]int{}
	for i := range out.events {
		e := &out.events[i]
		if e.Stack == 0 {
			continue
		}
		withStack++
		raw, ok := tab.Raw(e.Stack)
		if !ok {
			t.Fatalf("event %d: stack %d unknown", e.ID, e.Stack)
		}
		// The table names a stack once per process (the modules of
		// the first event that uses it): so does this count.
		ck := cacheKey{e.Stack, e.Pid, e.ProcStart}
		n, seen := firstOutside[ck]
		if !seen {
			for _, a := range raw.Kernel {
				if !inModule(out.facts, e, a, true) {
					n++
				}
			}
			// A user part may hold the kernel frames of a user-mode
			// callback (win32k): named from the kernel's modules.
			for _, a := range raw.User {
				if !inModule(out.facts, e, a, false) && !inModule(out.facts, e, a, true) {
					n++
				}
			}
			firstOutside[ck] = n
		}
		frames += len(raw.Kernel) + len(raw.User)
		outside += n
		tab.Frames(e)
	}
	if withStack != extStacks+diskStacks+flushStacks {
		t.Errorf("%d events with a stack, want %d", withStack, extStacks+diskStacks+flushStacks)
	}
	var counted uint64
	var problems []string
	for _, c := range tab.Problems() {
		problems = append(problems, c.Name)
		if strings.Contains(c.Name, "outside every known module") || strings.Contains(c.Name, "no kernel symbols") {
			counted += c.Value
		}
	}
	if frames == 0 || counted != uint64(outside) {
		t.Errorf("%d frames, %d outside every module, the table counts %d\n%v", frames, outside, counted, problems)
	}
	t.Logf("%d events with a stack, %d frames, %d outside every known module (JIT code)", withStack, frames, outside)
}

// inModule reports whether a module fact of e's process (the kernel's for
// kernel frames) held addr-1 at e's time.
func inModule(facts []event.Fact, e *event.Event, addr uint64, kernelFrame bool) bool {
	pid, start := e.Pid, e.ProcStart
	if kernelFrame {
		pid, start = 0, 0
	}
	in := false
	for i := range facts {
		f := &facts[i]
		if f.Kind != event.FactModule || f.Pid != pid || f.ProcStart != start || addr-1 < f.Handle || addr-1 >= f.Handle+f.Size {
			continue
		}
		if f.End {
			if f.Time <= e.Time {
				in = false
			}
			continue
		}
		if f.Rundown || f.Time <= e.Time {
			in = true
		}
	}
	return in
}

// TestLiveIdentityAndStacks pushes records one by one, as a live session
// does: the iotrace image record right after its Image Load (same
// timestamp) and the merged-trace records before theirs give the modules
// their identity; a Stack right after its request joins it, one right
// after a record iotrace does not decode is told from one of no record.
func TestLiveIdentityAndStacks(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.volume(1000, `\Device\HarddiskVolume2\`, `C:\`)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.thread(1000, 3, pidSvc, tidSvc)
	s.imageID(2000, 0xfffff80021489000, 7634944, 0, 1343269963, "ntkrnlmp.exe")
	s.dbgID(2000, 0xfffff80021489000, 0, testGUID, 2, "ntkrnlmp.pdb")
	s.imageV2(2000, 3, 0, 0xfffff80021489000, 7634944, 0, `\SystemRoot\system32\ntoskrnl.exe`)
	s.imageV2(3000, 10, pidSvc, 0x7ff700000000, 0x20000, 0, `\Device\HarddiskVolume2\Windows\System32\svchost.exe`)
	im := ownprovider.Image{Base: 0x7ff700000000, Size: 0x20000, ProcessID: pidSvc, TimeDateStamp: 0x5010AC4B,
		Age: 3, PdbGUID: record.GUIDFromBytes(testGUID[:]), PdbName: "svchost.pdb"}
	s.classic(3000, ownprovider.GUID, ownprovider.OpcodeImage, ownprovider.Version, pidSvc, tidSvc, im.Encode())
	s.dbgID(3500, 0x7ff800000000, pidSvc, testGUID, 1, "lost.pdb")
	s.rw(4000, 67, tidSvc, pidSvc, irpA, foA, fkA, 0, 4096)
	s.stack(4000, 4000, pidSvc, tidSvc, kA, uA)
	s.opEnd(4100, irpA, 4096, 0)
	s.add(record.KindSystem, record.GroupPerfInfo, 46, 2, 4150, tidSvc, pidSvc, 0, buf{}.u64(kB).u32(tidSvc).u32(0)) // not decoded
	s.stack(4200, 4150, pidSvc, tidSvc, kB)
	s.stack(4300, 4250, pidSvc, tidSvc, kB) // no event
	out := &seqSink{}
	p := NewPipeline(out, Options{ExpectOpEnd: true})
	for i := range s.recs {
		if err := p.Push(&s.recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(nil); err != nil {
		t.Fatal(err)
	}
	var mods []event.Fact
	for _, f := range out.facts {
		if f.Kind == event.FactModule {
			mods = append(mods, f)
		}
	}
	if len(mods) != 2 || mods[0].Image != "pdb:ntkrnlmp.pdb/724821001C1C4A03AED8C4C71C2E8D1D2" ||
		mods[0].Detail != "pe:5010AC4B748000/00001234" || mods[1].Image != symbolize.PDBID("svchost.pdb", testGUID, 3) ||
		mods[1].Detail != "pe:5010AC4B20000/00001234" || mods[1].Name != `C:\Windows\System32\svchost.exe` {
		t.Fatalf("modules %+v", mods)
	}
	reads := out.byNative("FileIo/Read")
	if len(reads) != 1 {
		t.Fatalf("%d reads", len(reads))
	}
	f := out.stackOf(t, &reads[0])
	if !slices.Equal(f.Kernel, []uint64{kA}) || !slices.Equal(f.User, []uint64{uA}) {
		t.Errorf("stack %+v", f)
	}
	st := &out.trailer.Stats
	if st.Get(event.CountUnresolved, StatIdentityNoImage) != 1 || st.Get(event.CountInfo, StatStacksUndecoded) != 1 ||
		st.Get(event.CountInfo, StatStacksNoRecent) != 1 {
		t.Errorf("counters %v", st.Sorted())
	}
}

// TestLiveUserPartLater: in a live session the user part of a kernel
// event's stack comes when its thread returns to user mode, after the
// event completed: the event is held until then (or until the end, its
// stack flagged user-lost and counted).
func TestLiveUserPartLater(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.thread(1000, 3, pidSvc, tidSvc)
	s.thread(1000, 3, pidSvc, tidSvc+1)
	// A read and the disk read it causes, on one thread, one system call.
	s.rw(2000, 67, tidSvc, pidSvc, irpA, foA, fkA, 0, 4096)
	s.stack(2000, 2000, pidSvc, tidSvc, kA)
	s.diskInit(2100, 12, tidSvc, pidSvc, irpB)
	s.stack(2100, 2100, pidSvc, tidSvc, kB, kA)
	s.diskDone(2500, 10, 0, irpB, fkA, 0, 4096, 100, tidSvc)
	s.opEnd(2600, irpA, 4096, 0)
	s.stack(2700, 2000, pidSvc, tidSvc, uA, uB) // the return to user mode
	// Another thread whose user part never comes.
	s.diskInit(3000, 12, tidSvc+1, pidSvc, irpStackC)
	s.stack(3000, 3000, pidSvc, tidSvc+1, kB)
	s.diskDone(3100, 10, 0, irpStackC, fkA, 0, 4096, 100, tidSvc+1)
	out := &seqSink{}
	p := NewPipeline(out, Options{ExpectOpEnd: true, DiskIOInit: true})
	for i := range s.recs {
		if err := p.Push(&s.recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(nil); err != nil {
		t.Fatal(err)
	}
	reads, disks := out.byNative("FileIo/Read"), out.byNative("DiskIo/Read")
	if len(reads) != 1 || len(disks) != 2 {
		t.Fatalf("%d reads, %d disk reads", len(reads), len(disks))
	}
	if f := out.stackOf(t, &reads[0]); !slices.Equal(f.Kernel, []uint64{kA}) || !slices.Equal(f.User, []uint64{uA, uB}) || f.Flags != 0 {
		t.Errorf("read stack %+v", f)
	}
	var d1, d2 *event.Event
	for i := range disks {
		if disks[i].Tid == tidSvc {
			d1 = &disks[i]
		} else {
			d2 = &disks[i]
		}
	}
	if f := out.stackOf(t, d1); !slices.Equal(f.Kernel, []uint64{kB, kA}) || !slices.Equal(f.User, []uint64{uA, uB}) {
		t.Errorf("disk stack %+v", f)
	}
	if f := out.stackOf(t, d2); !slices.Equal(f.Kernel, []uint64{kB}) || len(f.User) != 0 || f.Flags != event.FactUserLost {
		t.Errorf("disk stack without its user part %+v", f)
	}
	if got := out.trailer.Stats.Get(event.CountDropped, StatStackUserNever); got != 1 {
		t.Errorf("user parts that never came: %d\n%v", got, out.trailer.Stats.Sorted())
	}
}

// ownImage adds an iotrace image identity record at ts.
func (s *synth) ownImage(ts int64, pid uint32, base, size uint64, tds uint32, file, pdb string, age uint32) {
	im := ownprovider.Image{Base: base, Size: size, ProcessID: pid, TimeDateStamp: tds, Age: age,
		PdbGUID: record.GUIDFromBytes(testGUID[:]), FileName: file, PdbName: pdb}
	s.classic(ts, ownprovider.GUID, ownprovider.OpcodeImage, ownprovider.Version, 4242, 77, im.Encode())
}

// TestOwnIdentityByBase: iotrace image identities written by `record -o
// t.etl` carry the time they were written, not their image's: a file's
// reader gives each to the image of its process and base that agrees
// with it (TimeDateStamp, size, file name), whether it comes before or
// after; a stale identity never names another image at the same base;
// those that disagree with their image, or have none, are counted.
func TestOwnIdentityByBase(t *testing.T) {
	const (
		bLate, bEarly, bReused, bWrong, bNoName, bOrphan = 0x7ff100000000, 0x7ff200000000, 0x7ff300000000, 0x7ff400000000, 0x7ff500000000, 0x7ff600000000
	)
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.volume(1000, `\Device\HarddiskVolume2\`, `C:\`)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	// Written before its image's load (an image already loaded when the
	// companion started, logged again by the recording's rundown later).
	s.ownImage(1500, pidSvc, bEarly, 0x3000, 0x22, `\Device\HarddiskVolume2\early.dll`, "early.pdb", 2)
	s.imageV2(2000, 10, pidSvc, bLate, 0x2000, 0x11, `\Device\HarddiskVolume2\late.dll`)
	s.imageV2(2100, 3, pidSvc, bEarly, 0x3000, 0x22, `\Device\HarddiskVolume2\early.dll`)
	// One base, two images in turn.
	s.imageV2(3000, 10, pidSvc, bReused, 0x4000, 0x33, `\Device\HarddiskVolume2\first.dll`)
	s.imageV2(3500, 2, pidSvc, bReused, 0x4000, 0x33, `\Device\HarddiskVolume2\first.dll`)
	s.imageV2(4000, 10, pidSvc, bReused, 0x4000, 0x44, `\Device\HarddiskVolume2\second.dll`)
	// An image whose identity is of another build, and one without a
	// time stamp whose identity is of another file.
	s.imageV2(4500, 10, pidSvc, bWrong, 0x5000, 0x55, `\Device\HarddiskVolume2\wrong.dll`)
	s.imageV2(4600, 10, pidSvc, bNoName, 0x6000, 0, `\Device\HarddiskVolume2\named.dll`)
	// The identities, written later, in another order.
	s.ownImage(9000, pidSvc, bReused, 0x4000, 0x44, `\Device\HarddiskVolume2\second.dll`, "second.pdb", 4)
	s.ownImage(9100, pidSvc, bLate, 0x2000, 0x11, `\Device\HarddiskVolume2\late.dll`, "late.pdb", 1)
	s.ownImage(9200, pidSvc, bReused, 0x4000, 0x33, `\Device\HarddiskVolume2\first.dll`, "first.pdb", 3)
	s.ownImage(9300, pidSvc, bWrong, 0x5000, 0x56, `\Device\HarddiskVolume2\wrong.dll`, "wrong.pdb", 5)
	s.ownImage(9400, pidSvc, bNoName, 0x6000, 0x66, `\Device\HarddiskVolume2\other.dll`, "other.pdb", 6)
	s.ownImage(9500, pidSvc, bOrphan, 0x7000, 0x77, `\Device\HarddiskVolume2\orphan.dll`, "orphan.pdb", 7)
	s.ownImage(9600, pidSvc+1, bLate, 0x2000, 0x11, `\Device\HarddiskVolume2\late.dll`, "late.pdb", 1) // another process
	out := runSynth(t, s)
	got := map[string]string{}
	for _, f := range out.facts {
		if f.Kind == event.FactModule && !f.End {
			got[f.Name] = f.Image
		}
	}
	want := map[string]string{
		`C:\late.dll`:   symbolize.PDBID("late.pdb", testGUID, 1),
		`C:\early.dll`:  symbolize.PDBID("early.pdb", testGUID, 2),
		`C:\first.dll`:  symbolize.PDBID("first.pdb", testGUID, 3),
		`C:\second.dll`: symbolize.PDBID("second.pdb", testGUID, 4),
		`C:\wrong.dll`:  "",
		`C:\named.dll`:  "",
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: image %q (present %v), want %q", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("modules %v", got)
	}
	st := &out.trailer.Stats
	for name, w := range map[string]uint64{StatIdentityMismatch: 2, StatIdentityNoImage: 2} {
		if g := st.Get(event.CountUnresolved, name); g != w {
			t.Errorf("%s = %d, want %d\n%v", name, g, w, st.Sorted())
		}
	}
	if g := st.Get(event.CountInfo, StatModulesPDB); g != 4 {
		t.Errorf("modules with a PDB identity: %d", g)
	}
}

// TestOwnIdentityLiveChecked: live, an iotrace identity right after its
// image joins it by process and base; one that disagrees with the image
// is counted, not used.
func TestOwnIdentityLiveChecked(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.imageV2(2000, 10, pidSvc, 0x7ff100000000, 0x2000, 0x11, `\Device\HarddiskVolume2\a.dll`)
	s.ownImage(2000, pidSvc, 0x7ff100000000, 0x2000, 0x11, `\Device\HarddiskVolume2\a.dll`, "a.pdb", 1)
	s.imageV2(3000, 10, pidSvc, 0x7ff200000000, 0x2000, 0x22, `\Device\HarddiskVolume2\b.dll`)
	s.ownImage(3000, pidSvc, 0x7ff200000000, 0x2000, 0x23, `\Device\HarddiskVolume2\b.dll`, "b.pdb", 1)
	out := &seqSink{}
	p := NewPipeline(out, Options{})
	for i := range s.recs {
		if err := p.Push(&s.recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(nil); err != nil {
		t.Fatal(err)
	}
	var imgs []string
	for _, f := range out.facts {
		if f.Kind == event.FactModule {
			imgs = append(imgs, f.Image)
		}
	}
	if len(imgs) != 2 || imgs[0] != symbolize.PDBID("a.pdb", testGUID, 1) || imgs[1] != "" {
		t.Errorf("module images %q", imgs)
	}
	if g := out.trailer.Stats.Get(event.CountUnresolved, StatIdentityMismatch); g != 1 {
		t.Errorf("mismatches %d", g)
	}
}

// TestIdentityConflictCounted: two identity records of one image that
// disagree (another build's time stamp, another PDB) keep the first and
// are counted, in a file's two passes as in one: the first pass, which
// collects them, counts nothing itself.
func TestIdentityConflictCounted(t *testing.T) {
	const base = 0xfffff80021489000
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.imageID(2000, base, 7634944, 0, 1343269963, "ntkrnlmp.exe")
	s.imageID(2000, base, 7634944, 0, 1343269964, "ntkrnlmp.exe") // another build
	s.dbgID(2000, base, 0, testGUID, 2, "ntkrnlmp.pdb")
	other := testGUID
	other[0]++
	s.dbgID(2000, base, 0, other, 2, "ntkrnlmp.pdb") // another PDB
	s.imageV2(2000, 3, 0, base, 7634944, 0, `\SystemRoot\system32\ntoskrnl.exe`)
	out := runSynth(t, s)
	if g := out.trailer.Stats.Get(event.CountInfo, StatIdentityConflict); g != 2 {
		t.Errorf("%s = %d, want 2\n%v", StatIdentityConflict, g, out.trailer.Stats.Sorted())
	}
	for _, f := range out.facts {
		if f.Kind == event.FactModule && !f.End && f.Image != symbolize.PDBID("ntkrnlmp.pdb", testGUID, 2) {
			t.Errorf("module %s: image %q, want the first record's PDB", f.Name, f.Image)
		}
	}
}

// TestLiveStackAmongOtherProcessors: once the processors' buffers are
// merged by time, more than numTargets records of other processors may
// come between an event and its stack walk (logged on the event's
// processor): the walk is still joined to its event.
func TestLiveStackAmongOtherProcessors(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.thread(1000, 3, pidSvc, tidSvc)
	s.rw(4000, 67, tidSvc, pidSvc, irpA, foA, fkA, 0, 4096) // processor 2
	for i := range 3 * numTargets {
		s.add(record.KindSystem, record.GroupPerfInfo, 46, 2, 4001+int64(i), tidSvc+7, pidSvc, 1,
			buf{}.u64(kB).u32(tidSvc+7).u32(0)) // not decoded, processor 1
	}
	s.stack(4500, 4000, pidSvc, tidSvc, kA, uA)
	s.recs[len(s.recs)-1].CPU = 2
	s.opEnd(4600, irpA, 4096, 0)
	out := &seqSink{}
	p := NewPipeline(out, Options{ExpectOpEnd: true})
	for i := range s.recs {
		if err := p.Push(&s.recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(nil); err != nil {
		t.Fatal(err)
	}
	reads := out.byNative("FileIo/Read")
	if len(reads) != 1 {
		t.Fatalf("%d reads", len(reads))
	}
	f := out.stackOf(t, &reads[0])
	if !slices.Equal(f.Kernel, []uint64{kA}) || !slices.Equal(f.User, []uint64{uA}) {
		t.Errorf("stack %+v", f)
	}
	if n := out.trailer.Stats.Get(event.CountInfo, StatStacksNoRecent); n != 0 {
		t.Errorf("%d stacks matched no recent record", n)
	}
}
