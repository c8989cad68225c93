package etw

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// A disk I/O pending while a later event takes its own stack keeps the
// stack of its Init.
func TestStackDiskKeepsItsOwn(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.thread(1000, 3, pidSvc, tidSvc)
	s.thread(1000, 3, pidSvc, tidSvc+4)
	s.name(1000, 36, fkA, `\Device\HarddiskVolume2\a.txt`)
	at := func(msec float64) int64 { return 1000 + int64(msec*ms) }
	s.diskInit(at(10), 12, tidSvc, pidSvc, irpB)
	s.stack(at(10), at(10), pidSvc, tidSvc, kA, uA)
	s.rw(at(11), 67, tidSvc+4, pidSvc, irpA, foA, fkA, 0, 4096)
	s.stack(at(11), at(11), pidSvc, tidSvc+4, kB, uB)
	s.opEnd(at(12), irpA, 4096, 0)
	s.diskDone(at(13), 10, 0, irpB, fkA, 0, 4096, 10000, tidSvc)
	out := runSynth(t, s)
	d := out.byNative("DiskIo/Read")
	if len(d) != 1 {
		t.Fatalf("%d disk reads, want 1", len(d))
	}
	f := out.stackOf(t, &d[0])
	if !slices.Equal(f.Kernel, []uint64{kA}) || !slices.Equal(f.User, []uint64{uA}) {
		t.Errorf("disk stack = kernel %x user %x, want kernel %x user %x", f.Kernel, f.User, uint64(kA), uint64(uA))
	}
	r := out.byNative("FileIo/Read")
	if len(r) != 1 {
		t.Fatalf("%d file reads, want 1", len(r))
	}
	if f := out.stackOf(t, &r[0]); !slices.Equal(f.Kernel, []uint64{kB}) || !slices.Equal(f.User, []uint64{uB}) {
		t.Errorf("read stack = kernel %x user %x, want kernel %x user %x", f.Kernel, f.User, uint64(kB), uint64(uB))
	}
}

// TestLiveOnePartAsked: a live session asked for the kernel part of the
// stacks alone (--stacks kernel: the user frames filtered out) does not
// hold events for a user part that cannot come, nor flag them user-lost;
// a user part alone is not flagged kernel-lost.
func TestLiveOnePartAsked(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   Options
		frames []uint64
	}{
		{"kernel", Options{ExpectOpEnd: true, DiskIOInit: true, KernelStacksOnly: true}, []uint64{kB}},
		{"user", Options{ExpectOpEnd: true, DiskIOInit: true}, []uint64{uB}},
	} {
		s := &synth{ptr: 8, version: 3}
		s.header(1000)
		s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
		s.thread(1000, 3, pidSvc, tidSvc)
		s.diskInit(3000, 12, tidSvc, pidSvc, irpStackC)
		s.stack(3000, 3000, pidSvc, tidSvc, c.frames...)
		s.diskDone(3100, 10, 0, irpStackC, fkA, 0, 4096, 100, tidSvc)
		out := &seqSink{}
		p := NewPipeline(out, c.opts)
		for i := range s.recs {
			if err := p.Push(&s.recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(out.byNative("DiskIo/Read")); n != 1 {
			t.Errorf("%s: %d disk reads emitted before the end, want 1 (held for a part not asked for)", c.name, n)
		}
		if err := p.Close(nil); err != nil {
			t.Fatal(err)
		}
		disks := out.byNative("DiskIo/Read")
		if len(disks) != 1 {
			t.Fatalf("%s: %d disk reads", c.name, len(disks))
		}
		f := out.stackOf(t, &disks[0])
		if f.Flags != 0 || !slices.Equal(append(slices.Clone(f.Kernel), f.User...), c.frames) {
			t.Errorf("%s: stack %+v", c.name, f)
		}
		if got := out.trailer.Stats.Get(event.CountDropped, StatStackUserNever); got != 0 {
			t.Errorf("%s: user parts that never came: %d", c.name, got)
		}
	}
}

// TestLiveOnePartKeyRefs: with one part asked for, a cache key reference
// of the other part is left aside (counted), not joined.
func TestLiveOnePartKeyRefs(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.thread(1000, 3, pidSvc, tidSvc)
	s.keyDef(1500, 34, 0x100, kA)
	s.keyDef(1500, 34, 0x200, uA)
	s.diskInit(3000, 12, tidSvc, pidSvc, irpStackC)
	s.keyRef(3000, 37, 3000, pidSvc, tidSvc, 0x100)
	s.keyRef(3000, 38, 3000, pidSvc, tidSvc, 0x200)
	s.diskDone(3100, 10, 0, irpStackC, fkA, 0, 4096, 100, tidSvc)
	out := &seqSink{}
	p := NewPipeline(out, Options{ExpectOpEnd: true, DiskIOInit: true, KernelStacksOnly: true})
	for i := range s.recs {
		if err := p.Push(&s.recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(nil); err != nil {
		t.Fatal(err)
	}
	disks := out.byNative("DiskIo/Read")
	if len(disks) != 1 {
		t.Fatalf("%d disk reads", len(disks))
	}
	if f := out.stackOf(t, &disks[0]); f.Flags != 0 || !slices.Equal(f.Kernel, []uint64{kA}) || len(f.User) != 0 {
		t.Errorf("stack %+v", f)
	}
	if got := out.trailer.Stats.Get(event.CountInfo, StatStacksOff); got != 1 {
		t.Errorf("key references left aside: %d, want 1", got)
	}
}

// tidReuse is a thread that exits in the kernel (its last event's stack
// has no user part) and its ID reused by a thread of another process,
// whose event's user part comes when it returns to user mode.
func tidReuse(threadEnd bool, newPid uint32) *synth {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.process(1000, 3, pidSvc+4, 4, "other.exe", "other")
	s.thread(1000, 3, pidSvc, tidSvc)
	s.name(1000, 36, fkA, `\Device\HarddiskVolume2\a.txt`)
	at := func(msec float64) int64 { return 1000 + int64(msec*ms) }
	s.rw(at(10), 67, tidSvc, pidSvc, irpA, foA, fkA, 0, 4096)
	s.stack(at(10), at(10), pidSvc, tidSvc, kA)
	s.opEnd(at(11), irpA, 4096, 0)
	if threadEnd {
		s.thread(at(12), 2, pidSvc, tidSvc)
	}
	s.thread(at(20), 1, newPid, tidSvc)
	s.rw(at(21), 67, tidSvc, newPid, irpB, foA, fkA, 4096, 4096)
	s.stack(at(21), at(21), newPid, tidSvc, kB)
	s.opEnd(at(22), irpB, 4096, 0)
	s.stack(at(23), at(21), newPid, tidSvc, uB)
	return s
}

func checkTidReuse(t *testing.T, name string, out *seqSink) {
	t.Helper()
	reads := out.byNative("FileIo/Read")
	if len(reads) != 2 {
		t.Fatalf("%s: %d reads", name, len(reads))
	}
	for _, r := range reads {
		f := out.stackOf(t, &r)
		switch r.Offset {
		case 0:
			if len(f.User) != 0 || f.Flags != event.FactUserLost || !slices.Equal(f.Kernel, []uint64{kA}) {
				t.Errorf("%s: the ended thread's read got %+v", name, f)
			}
		default:
			if f.Flags != 0 || !slices.Equal(f.User, []uint64{uB}) || !slices.Equal(f.Kernel, []uint64{kB}) {
				t.Errorf("%s: the new thread's read got %+v", name, f)
			}
		}
	}
	if got := out.trailer.Stats.Get(event.CountDropped, StatStackUserGone); got != 1 {
		t.Errorf("%s: %q = %d, want 1", name, StatStackUserGone, got)
	}
}

// TestStackTidReused: a reused thread ID does not give a dead thread's
// event the user frames of another process's thread, in a file (by
// process) and in a live session (by process, and at the Thread End).
func TestStackTidReused(t *testing.T) {
	checkTidReuse(t, "file", runSynth(t, tidReuse(false, pidSvc+4)))
	// Reused in the same process: told apart by the Thread End.
	checkTidReuse(t, "file, same process", runSynth(t, tidReuse(true, pidSvc)))
	for _, end := range []bool{false, true} {
		s := tidReuse(end, pidSvc+4)
		out := &seqSink{}
		p := NewPipeline(out, Options{ExpectOpEnd: true})
		for i := range s.recs {
			r := &s.recs[i]
			if err := p.Push(r); err != nil {
				t.Fatal(err)
			}
			if r.Group == record.GroupThread && r.Opcode == 2 && len(out.byNative("FileIo/Read")) != 1 {
				t.Errorf("live: the ended thread's read still held after its Thread End")
			}
		}
		if err := p.Close(nil); err != nil {
			t.Fatal(err)
		}
		checkTidReuse(t, fmt.Sprintf("live, thread end %v", end), out)
	}
}

// TestStackSameTime: two events of one thread at one timestamp each take
// their own stack, in order; two events of thread 0 (one idle thread per
// processor) at one timestamp on two processors take the stack walked on
// their processor.
func TestStackSameTime(t *testing.T) {
	for _, live := range []bool{false, true} {
		s := &synth{ptr: 8, version: 3}
		s.header(1000)
		s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
		s.thread(1000, 3, pidSvc, tidSvc)
		s.name(1000, 36, fkA, `\Device\HarddiskVolume2\a.txt`)
		at := func(msec float64) int64 { return 1000 + int64(msec*ms) }
		s.rw(at(10), 67, tidSvc, pidSvc, irpA, foA, fkA, 0, 4096)
		s.stack(at(10), at(10), pidSvc, tidSvc, kA, uA)
		s.rw(at(10), 67, tidSvc, pidSvc, irpB, foA, fkA, 4096, 4096)
		s.stack(at(10), at(10), pidSvc, tidSvc, kB, uB)
		s.opEnd(at(12), irpA, 4096, 0)
		s.opEnd(at(12), irpB, 4096, 0)
		// Thread 0 on processors 1 and 2, one time.
		for _, c := range []struct {
			cpu uint16
			irp uint64
			k   uint64
		}{{1, irpStackC, kA}, {2, irpStackC + 0x100, kB}} {
			s.diskInit(at(20), 12, 0, 0, c.irp)
			s.recs[len(s.recs)-1].CPU = c.cpu
		}
		s.stack(at(20), at(20), 0, 0, kB) // processor 2's, logged first
		s.recs[len(s.recs)-1].CPU = 2
		s.stack(at(20), at(20), 0, 0, kA)
		s.recs[len(s.recs)-1].CPU = 1
		s.diskDone(at(21), 10, 0, irpStackC, fkA, 0, 4096, 100, 0)
		s.diskDone(at(21), 10, 0, irpStackC+0x100, fkA, 8192, 4096, 100, 0)
		var out *seqSink
		if live {
			// A live session meets each stack after its event; the
			// processors' records interleave (both Inits first).
			n := len(s.recs)
			s.recs[n-4], s.recs[n-3] = s.recs[n-3], s.recs[n-4]
			out = &seqSink{}
			p := NewPipeline(out, Options{ExpectOpEnd: true, DiskIOInit: true})
			for i := range s.recs {
				if err := p.Push(&s.recs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(nil); err != nil {
				t.Fatal(err)
			}
		} else {
			out = runSynth(t, s)
		}
		for _, r := range out.byNative("FileIo/Read") {
			want := []uint64{kA, uA}
			if r.Offset != 0 {
				want = []uint64{kB, uB}
			}
			if r.Stack == 0 {
				t.Errorf("live %v: read at %d: no stack", live, r.Offset)
				continue
			}
			if f := out.stackOf(t, &r); !slices.Equal(append(slices.Clone(f.Kernel), f.User...), want) {
				t.Errorf("live %v: read at %d: stack %x %x, want %x", live, r.Offset, f.Kernel, f.User, want)
			}
		}
		disks := out.byNative("DiskIo/Read")
		if len(disks) != 2 {
			t.Fatalf("live %v: %d disk reads", live, len(disks))
		}
		for _, d := range disks {
			want := []uint64{kA}
			if d.Offset != 0 {
				want = []uint64{kB}
			}
			if d.Stack == 0 {
				t.Errorf("live %v: disk read at %d: no stack", live, d.Offset)
				continue
			}
			if f := out.stackOf(t, &d); !slices.Equal(f.Kernel, want) {
				t.Errorf("live %v: disk read at %d: stack %x, want %x", live, d.Offset, f.Kernel, want)
			}
		}
		if got := out.trailer.Stats.Get(event.CountInfo, StatStackRecords); got != 4 {
			t.Errorf("live %v: stack records joined: %d, want 4", live, got)
		}
	}
}

// TestFirstPassUndecodedCounted: the records a file's first pass takes
// (stack walks, image identities, own-provider images) that no decoder
// knows are counted as not decoded, by kind, not dropped silently.
func TestFirstPassUndecodedCounted(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.classic(2000, kernel.GUIDImageID, 64, 2, pidSvc, 1, buf{}.u64(0x7ff700000000).u32(1)) // FileVersion
	s.classic(2000, kernel.GUIDImageID, 64, 2, pidSvc, 1, buf{}.u64(0x7ff800000000).u32(1))
	s.classic(2000, kernel.GUIDImageID, 0, 4, pidSvc, 1, buf{}.u64(0x7ff800000000).u32(1)) // ImageID v4
	s.add(record.KindPerfInfo, record.GroupStackWalk, 32, 4, 2100, record.NoID, record.NoID, 0, buf{}.u64(2100).u32(pidSvc).u32(tidSvc).u64(kA))
	s.add(record.KindPerfInfo, record.GroupStackWalk, 40, 2, 2100, record.NoID, record.NoID, 0, buf{}.u64(2100).u32(pidSvc).u32(tidSvc).u64(kA))
	im := ownprovider.Image{Base: 0x7ff700000000, Size: 0x20000, ProcessID: pidSvc, TimeDateStamp: 0x5010AC4B}
	s.classic(3000, ownprovider.GUID, ownprovider.OpcodeImage, ownprovider.Version+1, pidSvc, tidSvc, im.Encode())
	out := runSynth(t, s)
	var n uint64
	for _, c := range out.trailer.Stats.Sorted() {
		if strings.HasPrefix(c.Name, kernel.StatUndecoded) {
			t.Logf("%v", c)
			n += c.Value
		}
	}
	if n != 6 {
		t.Errorf("%d records counted not decoded, want 6\n%v", n, out.trailer.Stats.Sorted())
	}
}

// TestStackRequestNoHeaderThread: a FileIo request logged without a
// thread in its header takes the stack of its payload's issuing thread
// (TTID), in a file and in a live session; in a live session an event
// without a thread that cannot carry a stack (a disk completion) does not
// take the stack of another thread's event at its time.
func TestStackRequestNoHeaderThread(t *testing.T) {
	for _, live := range []bool{false, true} {
		s := &synth{ptr: 8, version: 3}
		s.header(1000)
		s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
		s.thread(1000, 3, pidSvc, tidSvc)
		s.name(1000, 36, fkA, `\Device\HarddiskVolume2\a.txt`)
		at := func(msec float64) int64 { return 1000 + int64(msec*ms) }
		s.rw(at(10), 67, tidSvc, pidSvc, irpA, foA, fkA, 0, 4096)
		s.recs[len(s.recs)-1].ThreadID = record.NoID
		s.stack(at(10), at(10), pidSvc, tidSvc, kA, uA)
		s.opEnd(at(12), irpA, 4096, 0)
		// A disk completion (no thread) at the time of an event of
		// another thread whose stack iotrace does not keep.
		s.diskInit(at(20), 12, tidSvc, pidSvc, irpB)
		s.thread(at(21), 3, pidSvc, tidSvc+4)
		s.diskDone(at(21), 10, 0, irpB, fkA, 0, 4096, 100, tidSvc)
		s.stack(at(21), at(21), pidSvc, tidSvc+4, kB, uB)
		var out *seqSink
		if live {
			out = &seqSink{}
			p := NewPipeline(out, Options{ExpectOpEnd: true, DiskIOInit: true})
			for i := range s.recs {
				if err := p.Push(&s.recs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(nil); err != nil {
				t.Fatal(err)
			}
		} else {
			out = runSynth(t, s)
		}
		reads := out.byNative("FileIo/Read")
		if len(reads) != 1 || reads[0].Stack == 0 {
			t.Errorf("live %v: %d reads, want one with a stack", live, len(reads))
		} else if f := out.stackOf(t, &reads[0]); !slices.Equal(f.Kernel, []uint64{kA}) || !slices.Equal(f.User, []uint64{uA}) {
			t.Errorf("live %v: read stack %+v", live, f)
		}
		st := out.trailer.Stats
		if got := st.Get(event.CountInfo, StatStacksOther); got != 1 {
			t.Errorf("live %v: stacks of other events %d, want 1 (the thread's)", live, got)
		}
		if got := st.Get(event.CountDropped, StatStacksLate); got != 0 {
			t.Errorf("live %v: stacks of events already emitted %d, want 0", live, got)
		}
	}
}
