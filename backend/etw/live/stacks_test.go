package live

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/backend/etw/internal/etwsynth"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// stackFixture is a real Windows 8 x64 kernel trace with stack walks on
// its disk and file events.
const stackFixture = "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl"

// stackRecords returns the first n kernel FileIo, DiskIo and StackWalk
// records of the stack fixture, in time order.
func stackRecords(t *testing.T, n int) (recs []record.Record, walks int) {
	all, _ := fixtureRecords(t, stackFixture)
	for i := range all {
		r := &all[i]
		switch {
		case isStackWalk(r):
			walks++
		case r.Provider == kernel.GUIDFileIo || r.Provider == kernel.GUIDDiskIo:
		default:
			continue
		}
		recs = append(recs, *r)
		if len(recs) == n {
			break
		}
	}
	if walks == 0 {
		t.Fatalf("%s: no StackWalk record among the first %d", stackFixture, len(recs))
	}
	return recs, walks
}

// TestStackWalkRecordsConvert: the StackWalk EVENT_RECORDs a session
// delivers (classic header, class StackWalk, opcode 32, 64-bit) come out
// of Convert as the records an .etl file gives: kind, class, opcode,
// pointer size and payload (timestamp, process, thread, addresses).
func TestStackWalkRecordsConvert(t *testing.T) {
	recs, walks := stackRecords(t, 1<<30)
	var rec record.Record
	var buf []byte
	var ext []record.ExtItem
	n := 0
	for i := range recs {
		in := &recs[i]
		if !isStackWalk(in) {
			continue
		}
		er, keep := eventRecordOf(in)
		if er.EventHeader.Flags&eventHeaderFlagClassicHeader == 0 || er.EventHeader.Flags&eventHeaderFlag64BitHeader == 0 {
			t.Fatalf("record %d: EVENT_RECORD flags %#x", i, er.EventHeader.Flags)
		}
		Convert(er, &rec, &buf, &ext)
		_ = keep
		if rec.Kind != record.KindClassic || !isStackWalk(&rec) || rec.PointerSize != 8 ||
			string(rec.UserData) != string(in.UserData) || rec.Timestamp != in.Timestamp {
			t.Fatalf("record %d: %+v\nwant %+v", i, rec, *in)
		}
		// The payload's own timestamp is the event's it follows.
		if len(rec.UserData) < stackWalkHeader+8 || (len(rec.UserData)-stackWalkHeader)%8 != 0 {
			t.Fatalf("record %d: stack payload of %d bytes", i, len(rec.UserData))
		}
		n++
	}
	if n != walks || n < 200 {
		t.Errorf("%d stack walks converted, %d in the fixture", n, walks)
	}
}

// TestStacksLive: --stacks asks the main session (not the rundown one)
// for stack walks on the FileIo requests and the DiskIo Init events, after
// starting it and before consuming it; every StackWalk record it delivers
// reaches the decoder.
func TestStacksLive(t *testing.T) {
	recs, walks := stackRecords(t, 20000)
	for _, s := range []backend.Stacks{backend.StacksBoth, backend.StacksUser, backend.StacksKernel} {
		f := newFakeAPI()
		f.mainEvents = recs
		sink := &memSink{}
		if err := runFake(t, f, Config{QueueSize: 1 << 16}, backend.Options{Stacks: s}, sink, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if len(f.stackCalls) != 1 || f.stackCalls[0].session != "iotrace-4242" {
			t.Fatalf("stacks %v: SetStackTracing calls %+v", s, f.stackCalls)
		}
		ids := f.stackCalls[0].ids
		has := func(g record.GUID, op uint8) bool {
			for _, id := range ids {
				if id.EventGUID == GUID(g) && id.Type == op && id.Reserved == [7]uint8{} {
					return true
				}
			}
			return false
		}
		for _, op := range []uint8{kernel.OpcodeCreate, kernel.OpcodeRead, kernel.OpcodeWrite, kernel.OpcodeCleanup,
			kernel.OpcodeClose, kernel.OpcodeFlush, kernel.OpcodeSetInfo, kernel.OpcodeDelete, kernel.OpcodeRename,
			kernel.OpcodeDirEnum, kernel.OpcodeQueryInfo, kernel.OpcodeFSControl} {
			if !has(kernel.GUIDFileIo, op) {
				t.Errorf("no stacks on FileIo opcode %d", op)
			}
		}
		for _, op := range []uint8{kernel.OpcodeDiskReadInit, kernel.OpcodeDiskWriteInit, kernel.OpcodeDiskFlushInit} {
			if !has(kernel.GUIDDiskIo, op) {
				t.Errorf("no stacks on DiskIo opcode %d", op)
			}
		}
		// Not on completions: their stack is the interrupt's, the
		// pipeline keeps the issuer's.
		for _, op := range []uint8{kernel.OpcodeDiskRead, kernel.OpcodeDiskWrite, kernel.OpcodeDiskFlushBuffers} {
			if has(kernel.GUIDDiskIo, op) {
				t.Errorf("stacks asked on DiskIo completion %d", op)
			}
		}
		if has(kernel.GUIDFileIo, kernel.OpcodeOpEnd) || len(ids) != 19 {
			t.Errorf("%d events asked for (OpEnd among them: %v)", len(ids), has(kernel.GUIDFileIo, kernel.OpcodeOpEnd))
		}
		st := sink.trailer.Stats
		if got := st.Get(event.CountDropped, StatQueueOverflow); got != 0 {
			t.Fatalf("queue overflow %d", got)
		}
		if got := st.Get(event.CountInfo, StatStackWalks); got != uint64(walks) {
			t.Errorf("stacks %v: %d stack walks reached the decoder, %d delivered", s, got, walks)
		}
		noPart := st.Get(event.CountInfo, StatStackWalksNoPart)
		if (s == backend.StacksBoth) != (noPart == 0) {
			t.Errorf("stacks %v: %d walks dropped for lack of frames", s, noPart)
		}
	}
	// No --stacks: no call.
	f := newFakeAPI()
	if err := runFake(t, f, Config{}, backend.Options{}, &memSink{}, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(f.stackCalls) != 0 {
		t.Errorf("SetStackTracing called without --stacks: %+v", f.stackCalls)
	}
}

// TestStacksRefusedBySession: a session that refuses stack tracing is
// stopped and the error names --stacks and the cause.
func TestStacksRefusedBySession(t *testing.T) {
	f := newFakeAPI()
	f.stackErr = ErrInvalidParameter
	err := runFake(t, f, Config{}, backend.Options{Stacks: backend.StacksBoth}, &memSink{}, time.Second)
	if !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), "--stacks") {
		t.Fatalf("Run: %v", err)
	}
	if len(f.sessions) != 0 {
		t.Errorf("sessions left running: %v", f.sessions)
	}
	_, err = New(Config{API: f}).RecordETL(context.Background(), backend.Options{Stacks: backend.StacksBoth}, testenv.TempDir(t)+"/x.etl")
	if !errors.Is(err, ErrInvalidParameter) || len(f.sessions) != 0 {
		t.Fatalf("RecordETL: %v, sessions %v", err, f.sessions)
	}
}

// TestRecordETLStacks: the recording session is asked for the same stack
// walks; --stacks user says the file keeps both parts.
func TestRecordETLStacks(t *testing.T) {
	f := newFakeAPI()
	// The kernel, as the image-load companion's start-up rundown has it.
	f.imageEvents = []record.Record{imageRecord(kernel.OpcodeImageDCStart, 10, 0, 0xfffff80000000000, 0x1000000, 7, `\SystemRoot\system32\ntoskrnl.exe`)}
	var warns []string
	opts := backend.Options{Stacks: backend.StacksUser, Duration: time.Millisecond, Warn: func(s string) { warns = append(warns, s) }}
	if _, err := New(Config{API: f}).RecordETL(context.Background(), opts, `C:\t\s.etl`); err != nil {
		t.Fatal(err)
	}
	if len(f.stackCalls) != 1 || f.stackCalls[0].session != "iotrace-4242" || len(f.stackCalls[0].ids) != len(StackEvents()) {
		t.Fatalf("SetStackTracing calls %+v", f.stackCalls)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "keeps both") {
		t.Errorf("warnings %q", warns)
	}
}

func walkPayload(p int, addrs ...uint64) []byte {
	b := make([]byte, stackWalkHeader, stackWalkHeader+p*len(addrs))
	binary.LittleEndian.PutUint64(b, 12345)
	binary.LittleEndian.PutUint32(b[8:], 7)
	binary.LittleEndian.PutUint32(b[12:], 9)
	for _, a := range addrs {
		if p == 8 {
			b = binary.LittleEndian.AppendUint64(b, a)
		} else {
			b = binary.LittleEndian.AppendUint32(b, uint32(a))
		}
	}
	return b
}

func TestStackFilter(t *testing.T) {
	const k1, k2, u1, u2 = 0xfffff80001234567, 0xfffff80007654321, 0x00007ff612340000, 0x00007ff600001111
	for _, c := range []struct {
		s    backend.Stacks
		p    int
		in   []uint64
		want []uint64 // nil: dropped
	}{
		{backend.StacksBoth, 8, []uint64{k1, k2, u1, u2}, []uint64{k1, k2, u1, u2}},
		{backend.StacksUser, 8, []uint64{k1, k2, u1, u2}, []uint64{u1, u2}},
		{backend.StacksKernel, 8, []uint64{k1, k2, u1, u2}, []uint64{k1, k2}},
		// A user process's kernel-only walk: its user part comes
		// later; passed whole (the pipeline drops the kernel frames).
		{backend.StacksUser, 8, []uint64{k1, k2}, []uint64{k1, k2}},
		{backend.StacksKernel, 8, []uint64{u1}, nil},
		{backend.StacksUser, 4, []uint64{0x82001000, 0x401000}, []uint64{0x401000}},
		{backend.StacksKernel, 4, []uint64{0x82001000, 0x401000}, []uint64{0x82001000}},
	} {
		f := newStackFilter(c.s)
		r := record.Record{Provider: record.GUID(StackWalkGUID), Opcode: OpcodeStackWalk, PointerSize: c.p, UserData: walkPayload(c.p, c.in...)}
		keep := f.apply(&r)
		if keep != (c.want != nil) {
			t.Errorf("%v %d-bit %x: keep %v", c.s, c.p*8, c.in, keep)
			continue
		}
		if keep && string(r.UserData) != string(walkPayload(c.p, c.want...)) {
			t.Errorf("%v %d-bit %x: payload %x, want frames %x", c.s, c.p*8, c.in, r.UserData, c.want)
		}
		if !keep && f.noPart != 1 {
			t.Errorf("dropped walk not counted")
		}
	}
	// The System process's kernel-only walk: no user part ever.
	f := newStackFilter(backend.StacksUser)
	sys := walkPayload(8, k1, k2)
	binary.LittleEndian.PutUint32(sys[8:], 4)
	if r := (record.Record{PointerSize: 8, UserData: sys}); f.apply(&r) || f.noPart != 1 {
		t.Error("a System thread's kernel walk kept under --stacks user")
	}
	// Too short to be a stack: passed whole for the decoder to count.
	f = newStackFilter(backend.StacksUser)
	r := record.Record{PointerSize: 8, UserData: []byte{1, 2, 3}}
	if !f.apply(&r) || len(r.UserData) != 3 {
		t.Error("short record not passed on")
	}
	if newStackFilter(backend.StacksNone) != nil {
		t.Error("a filter for --stacks none")
	}
}

// FuzzStackFilter: any StackWalk payload is trimmed or passed on, never a
// panic, and trimming only removes frames.
func FuzzStackFilter(f *testing.F) {
	f.Add(walkPayload(8, 0xfffff80001234567, 0x7ff612340000), uint8(1), uint8(8))
	f.Add(walkPayload(4, 0x82001000, 0x401000), uint8(2), uint8(4))
	f.Fuzz(func(t *testing.T, b []byte, s, ptr uint8) {
		flt := newStackFilter(backend.Stacks(s % 4))
		if flt == nil {
			return
		}
		r := record.Record{Provider: record.GUID(StackWalkGUID), Opcode: OpcodeStackWalk, PointerSize: int(ptr), UserData: append([]byte(nil), b...)}
		if flt.apply(&r) && len(r.UserData) > len(b) {
			t.Fatalf("%d bytes grew to %d", len(b), len(r.UserData))
		}
	})
}

// TestStacksDefaults: with --stacks, twice the events in flight and held
// for reordering (a walk follows most events); an explicit size stays.
func TestStacksDefaults(t *testing.T) {
	f := newFakeAPI()
	c, err := New(Config{}).defaults(f, &backend.Options{Stacks: backend.StacksUser})
	if err != nil {
		t.Fatal(err)
	}
	if c.QueueSize != 2*defaultQueueSize || c.ReorderLimit != 2*defaultReorderLimit {
		t.Errorf("with stacks: queue %d, reorder limit %d", c.QueueSize, c.ReorderLimit)
	}
	c, _ = New(Config{QueueSize: 10}).defaults(f, &backend.Options{})
	if c.QueueSize != 10 || c.ReorderLimit != 0 {
		t.Errorf("without stacks: queue %d, reorder limit %d", c.QueueSize, c.ReorderLimit)
	}
}

// BenchmarkStackFilter: trimming one 32-frame walk (16 kernel, 16 user
// frames) to its user part, as --stacks user does for every walk.
func BenchmarkStackFilter(b *testing.B) {
	var addrs []uint64
	for i := 0; i < 16; i++ {
		addrs = append(addrs, 0xfffff80001000000+uint64(i)*0x100)
	}
	for i := 0; i < 16; i++ {
		addrs = append(addrs, 0x7ff600000000+uint64(i)*0x100)
	}
	src := walkPayload(8, addrs...)
	buf := make([]byte, len(src))
	f := newStackFilter(backend.StacksUser)
	r := record.Record{Provider: record.GUID(StackWalkGUID), Opcode: OpcodeStackWalk, PointerSize: 8}
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		copy(buf, src)
		r.UserData = buf
		if !isStackWalk(&r) || !f.apply(&r) || len(r.UserData) != 16+16*8 {
			b.Fatal("not trimmed")
		}
	}
}

// TestStackWalksJoinedLive: StackWalk EVENT_RECORDs the session delivers
// right after FileIo requests and DiskIo Inits (same thread and
// timestamp) come out of a live trace joined to their events: each event
// names a stack fact with the frames asked for (--stacks both: kernel
// and user; user or kernel: that part only, nothing flagged lost).
func TestStackWalksJoinedLive(t *testing.T) {
	const (
		pid, tid = 900, 901
		k1, k2   = 0xfffff80000101000, 0xfffff80000202000
		u1, u2   = 0x7ff600001000, 0x7ff600002000
		fo       = 0xffffc00000a00000
	)
	var s etwsynth.Recs
	s.Create(1000, tid, pid, 0xa1, fo, 0, `\Device\HarddiskVolume3\app\data.bin`)
	s.Stack(1000, 1000, pid, tid, k1, k2, u1, u2)
	s.OpEnd(1100, tid, pid, 0xa1, 0, 0)
	s.ReadWrite(2000, 67, tid, pid, 0xa2, fo, fo, 0, 4096)
	s.Stack(2000, 2000, pid, tid, k2, u2)
	s.DiskInit(2100, 12, tid, pid, 0xd1)
	s.Stack(2100, 2100, pid, tid, k1, u1, u2)
	s.DiskDone(2500, 10, 0, 0xd1, fo, 0, 4096, 400, tid)
	s.OpEnd(2600, tid, pid, 0xa2, 4096, 0)
	type want struct{ kernel, user []uint64 }
	all := map[string]want{
		"FileIo/Create": {[]uint64{k1, k2}, []uint64{u1, u2}},
		"FileIo/Read":   {[]uint64{k2}, []uint64{u2}},
		"DiskIo/Read":   {[]uint64{k1}, []uint64{u1, u2}},
	}
	for _, mode := range []backend.Stacks{backend.StacksBoth, backend.StacksUser, backend.StacksKernel} {
		f := newFakeAPI()
		f.mainEvents = s.Recs
		sink := &memSink{}
		if err := runFake(t, f, Config{}, backend.Options{Stacks: mode}, sink, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		facts := map[uint64]event.Fact{}
		for _, x := range sink.facts {
			if x.Kind == event.FactStack {
				facts[x.Handle] = x
			}
		}
		seen := 0
		for _, e := range sink.events {
			w, ok := all[e.Native]
			if !ok {
				continue
			}
			seen++
			if mode == backend.StacksUser {
				w.kernel = nil
			}
			if mode == backend.StacksKernel {
				w.user = nil
			}
			x, ok := facts[e.Stack]
			if !ok || !slices.Equal(x.Kernel, w.kernel) || !slices.Equal(x.User, w.user) || x.Flags != 0 {
				t.Errorf("stacks %v: %s stack %d %+v, want kernel %x user %x", mode, e.Native, e.Stack, x, w.kernel, w.user)
			}
		}
		st := sink.trailer.Stats
		if seen != 3 || st.Get(event.CountInfo, etw.StatStackRecords) != 3 || st.Get(event.CountInfo, StatStackWalks) != 3 ||
			st.Get(event.CountDropped, etw.StatStackUserNever) != 0 || st.Get(event.CountInfo, etw.StatStacksNoRecent) != 0 {
			t.Errorf("stacks %v: %d events; stats %v", mode, seen, st.Sorted())
		}
	}
}

// TestDeferredUserPartLive: Windows walks the user part of a kernel
// event's stack when the thread returns to user mode, after the request
// completed: the event waits for it and gets it under --stacks both and
// user (user: without the kernel frames), not under kernel; a system
// thread's kernel-only walk under --stacks user is dropped, counted.
func TestDeferredUserPartLive(t *testing.T) {
	const (
		pid, tid = 900, 901
		k1, k2   = 0xfffff80000101000, 0xfffff80000202000
		u1, u2   = 0x7ff600001000, 0x7ff600002000
		fo       = 0xffffc00000a00000
	)
	var s etwsynth.Recs
	s.ReadWrite(2000, 67, tid, pid, 0xa2, fo, fo, 0, 4096)
	s.Stack(2000, 2000, pid, tid, k1, k2)
	s.OpEnd(2600, tid, pid, 0xa2, 4096, 0)
	s.Stack(2700, 2000, pid, tid, u1, u2) // the return to user mode
	// The System process's lazy writer: kernel frames only, ever.
	s.ReadWrite(3000, 68, 8, 4, 0xa3, fo, fo, 0, 4096)
	s.Stack(3000, 3000, 4, 8, k2)
	s.OpEnd(3100, 8, 4, 0xa3, 4096, 0)
	for _, c := range []struct {
		mode           backend.Stacks
		kernel, user   []uint64
		system         []uint64 // the write's kernel frames (nil: no stack)
		noPart, joined uint64
	}{
		{backend.StacksBoth, []uint64{k1, k2}, []uint64{u1, u2}, []uint64{k2}, 0, 3},
		{backend.StacksUser, nil, []uint64{u1, u2}, nil, 1, 2},
		{backend.StacksKernel, []uint64{k1, k2}, nil, []uint64{k2}, 1, 2},
	} {
		f := newFakeAPI()
		f.mainEvents = s.Recs
		sink := &memSink{}
		if err := runFake(t, f, Config{}, backend.Options{Stacks: c.mode}, sink, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		facts := map[uint64]event.Fact{}
		for _, x := range sink.facts {
			if x.Kind == event.FactStack {
				facts[x.Handle] = x
			}
		}
		n := 0
		for _, e := range sink.events {
			switch e.Native {
			case "FileIo/Read":
				x, ok := facts[e.Stack]
				if !ok || !slices.Equal(x.Kernel, c.kernel) || !slices.Equal(x.User, c.user) || x.Flags != 0 {
					t.Errorf("stacks %v: read stack %d %+v", c.mode, e.Stack, x)
				}
				n++
			case "FileIo/Write":
				x, ok := facts[e.Stack]
				if (c.system == nil) != (e.Stack == 0) || c.system != nil && (!ok || !slices.Equal(x.Kernel, c.system) || len(x.User) != 0 || x.Flags != 0) {
					t.Errorf("stacks %v: system write stack %d %+v", c.mode, e.Stack, x)
				}
				n++
			}
		}
		st := sink.trailer.Stats
		if n != 2 || st.Get(event.CountInfo, StatStackWalksNoPart) != c.noPart || st.Get(event.CountInfo, etw.StatStackRecords) != c.joined ||
			st.Get(event.CountDropped, etw.StatStackUserNever) != 0 || st.Get(event.CountDropped, etw.StatStacksLate) != 0 {
			t.Errorf("stacks %v: %d events; stats %v", c.mode, n, st.Sorted())
		}
	}
}

// TestStackJoinedManyCPUs: on a machine with many processors, the live
// stream (merged by time) puts other processors' events between an
// event and its StackWalk, which the kernel logs right after it on the
// same processor: 40 file requests here, more than the 32 recent events
// a walk's event is looked for among. The walk still joins its event.
func TestStackJoinedManyCPUs(t *testing.T) {
	const (
		pid, tid = 900, 901
		k1, u1   = 0xfffff80000101000, 0x7ff600001000
		fo       = 0xffffc00000a00000
	)
	var s etwsynth.Recs
	s.ReadWrite(2000, 67, tid, pid, 0xa2, fo, fo, 0, 4096)
	for i := 0; i < 40; i++ { // on processors 1 to 3
		s.CPU = uint16(1 + i%3)
		s.ReadWrite(2001+int64(i), 68, 1000+uint32(i), 1000, 0xb000+uint64(i), fo+0x1000, fo+0x1000, 0, 512)
		s.OpEnd(2100+int64(i), 1000+uint32(i), 1000, 0xb000+uint64(i), 512, 0)
	}
	s.CPU = 0
	s.Stack(2050, 2000, pid, tid, k1, u1)
	s.OpEnd(2600, tid, pid, 0xa2, 4096, 0)
	f := newFakeAPI()
	f.mainEvents = s.Recs
	sink := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{Stacks: backend.StacksBoth}, sink, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	facts := map[uint64]event.Fact{}
	for _, x := range sink.facts {
		if x.Kind == event.FactStack {
			facts[x.Handle] = x
		}
	}
	found := false
	for _, e := range sink.events {
		if e.Pid == pid && e.Native == "FileIo/Read" {
			found = true
			x, ok := facts[e.Stack]
			if !ok || !slices.Equal(x.Kernel, []uint64{k1}) || !slices.Equal(x.User, []uint64{u1}) {
				t.Errorf("read stack %d %+v", e.Stack, x)
			}
		}
	}
	st := sink.trailer.Stats
	if !found || st.Get(event.CountInfo, etw.StatStacksNoRecent) != 0 || st.Get(event.CountInfo, etw.StatStackRecords) != 1 {
		t.Errorf("read found %v; stats %v", found, st.Sorted())
	}
}
