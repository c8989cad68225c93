package ebpf

import (
	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// Record builders, following bpf/records.h.

func hdr(b []byte, typ uint8, kind systable.Call, cpu uint32, t uint64) {
	b[0] = typ
	le.PutUint16(b[2:], uint16(kind))
	le.PutUint32(b[4:], cpu)
	le.PutUint64(b[8:], t)
}

func sysRecord(kind systable.Call, id, t, dur uint64, pid, tid uint32, ret int64, args [6]uint64, comm string) []byte {
	b := make([]byte, syscallSize)
	hdr(b, recSyscall, kind, 1, t)
	le.PutUint64(b[16:], id)
	le.PutUint64(b[24:], dur)
	le.PutUint32(b[32:], pid)
	le.PutUint32(b[36:], tid)
	le.PutUint64(b[40:], uint64(ret))
	for i, a := range args {
		le.PutUint64(b[48+8*i:], a)
	}
	le.PutUint64(b[104:], ^uint64(0)) // pos -1
	copy(b[144:], comm)
	return b
}

func pathRecord(kind systable.Call, id uint64, tid uint32, index uint8, p string) []byte {
	b := make([]byte, pathHdrSize+len(p)+1)
	hdr(b, recPath, kind, 1, 0)
	le.PutUint64(b[16:], id)
	le.PutUint32(b[24:], tid)
	le.PutUint16(b[28:], uint16(len(p)+1))
	b[30] = index
	copy(b[32:], p)
	return b
}

func forkRecord(t uint64, ppid, pid uint32, start uint64, cflags uint32, comm string) []byte {
	b := make([]byte, forkSize)
	hdr(b, recFork, 0, 0, t)
	le.PutUint32(b[16:], ppid)
	le.PutUint32(b[20:], ppid)
	le.PutUint32(b[24:], pid)
	le.PutUint32(b[28:], pid)
	le.PutUint64(b[32:], start)
	le.PutUint32(b[40:], cflags)
	copy(b[48:], comm)
	return b
}

func execRecord(t uint64, pid uint32, name string, args string, comm string) []byte {
	b := make([]byte, execHdrSize+len(name)+1+len(args))
	hdr(b, recExec, 0, 0, t)
	le.PutUint32(b[16:], pid)
	le.PutUint32(b[20:], pid)
	le.PutUint16(b[32:], uint16(len(name)+1))
	le.PutUint16(b[34:], uint16(len(args)))
	copy(b[40:], comm)
	copy(b[execHdrSize:], name)
	copy(b[execHdrSize+len(name)+1:], args)
	return b
}

func newTestTracker(s event.Sink) *tracker { return newTracker(s, 1000, nil) }

func TestTrackerPairsPathsAndResolves(t *testing.T) {
	s := &memSink{}
	tr := newTestTracker(s)
	const pid = 42
	feed := func(b []byte) {
		t.Helper()
		if err := tr.handle(b); err != nil {
			t.Fatal(err)
		}
	}
	feed(forkRecord(1500, 1, pid, 1400, 0, "sh"))
	feed(execRecord(1600, pid, "/bin/app", "app\x00-v\x00", "app"))
	// chdir("/data") then openat(AT_FDCWD, "x/../f", O_CREAT|O_CLOEXEC) = 3
	feed(pathRecord(sc("chdir"), 7, pid, 0, "/data"))
	feed(sysRecord(sc("chdir"), 7, 2000, 10, pid, pid, 0, [6]uint64{0xdead}, "app"))
	feed(pathRecord(sc("openat"), 8, pid, 0, "x/../f"))
	feed(sysRecord(sc("openat"), 8, 3000, 50, pid, pid, 3, [6]uint64{uint64(0xffffff9c), 0xbeef, oCreat | oCloexec, 0o644}, "app"))
	feed(sysRecord(sc("pread64"), 9, 4000, 70, pid, pid, 100, [6]uint64{3, 0, 4096, 8192}, "app"))
	feed(sysRecord(sc("read"), 10, 5000, 70, pid, pid, -9, [6]uint64{77, 0, 10}, "app"))
	feed(execRecord(6000, pid, "/bin/other", "other\x00", "other"))
	feed(sysRecord(sc("write"), 11, 7000, 70, pid, pid, -9, [6]uint64{3, 0, 1}, "other"))

	if len(s.events) != 5 {
		t.Fatalf("%d events, want 5", len(s.events))
	}
	open, pread, bad, after := s.events[1], s.events[2], s.events[3], s.events[4]
	if open.Path != "/data/f" || open.FD != 3 || open.Op != event.OpOpen || open.Time != 2000 || open.Duration != 50 {
		t.Errorf("open: %+v", open)
	}
	if pread.Path != "/data/f" || pread.Offset != 8192 || pread.Size != 4096 || pread.Bytes != 100 || pread.Comm != "app" {
		t.Errorf("pread: %+v", pread)
	}
	if pread.ProcStart != 400 {
		t.Errorf("ProcStart %d, want 400 (fork start 1400 - origin 1000)", pread.ProcStart)
	}
	if bad.Status != event.StatusInvalid || bad.Code != 9 || bad.Path != "" || bad.Bytes != -1 {
		t.Errorf("read on a bad fd: %+v", bad)
	}
	if after.Path != "" {
		t.Errorf("write after exec to an O_CLOEXEC fd resolved to %q", after.Path)
	}
	var execFact bool
	for _, f := range s.facts {
		if f.Kind == event.FactProcess && f.Image == "/bin/app" && f.Detail == "app -v" && f.Name == "app" {
			execFact = true
		}
	}
	if !execFact {
		t.Errorf("no exec process fact in %+v", s.facts)
	}
}

func TestTrackerCountsMalformed(t *testing.T) {
	s := &memSink{}
	tr := newTestTracker(s)
	for _, b := range [][]byte{
		nil, {1}, make([]byte, 15),
		func() []byte { b := make([]byte, 20); b[0] = recSyscall; return b }(),
		func() []byte { b := make([]byte, 40); b[0] = 99; return b }(),
		func() []byte { b := pathRecord(sc("open"), 1, 1, 0, "abc"); le.PutUint16(b[28:], 999); return b }(),
		func() []byte { b := execRecord(1, 1, "x", "y", "c"); le.PutUint16(b[34:], 5000); return b }(),
		sysRecord(systable.Call(999), 1, 1, 1, 1, 1, 0, [6]uint64{}, ""),
	} {
		if err := tr.handle(b); err != nil {
			t.Fatal(err)
		}
	}
	var st event.Stats
	tr.stats(&st)
	if tr.decodeErrors != 7 || tr.unknownKinds != 1 || len(s.events) != 0 {
		t.Errorf("decode errors %d unknown kinds %d events %d", tr.decodeErrors, tr.unknownKinds, len(s.events))
	}
	if st.Total(event.CountLost) != 8 {
		t.Errorf("malformed records not reported as lost: %+v", st.Problems())
	}
}

// sc is the call named name, which must be traced.
func sc(name string) systable.Call {
	c := systable.ByName(name)
	if c == 0 {
		panic("not a traced system call: " + name)
	}
	return c
}

// TestCookie checks the BPF programs' descriptor of a call: its layout,
// and that every row asking the kernel side to read an argument has it
// where bpf/iotrace.bpf.c reads it.
func TestCookie(t *testing.T) {
	c := cookie(sc("renameat"))
	if systable.Call(c&0xffff) != sc("renameat") || (c>>16)&0xf != 1 || (c>>20)&0xf != 3 {
		t.Errorf("renameat cookie %#x", c)
	}
	c = cookie(sc("read"))
	if (c>>16)&0xf != noArg || (c>>20)&0xf != noArg || c&ckFPos == 0 || c&ckRead == 0 {
		t.Errorf("read cookie %#x", c)
	}
	if c := cookie(sc("socketpair")); c&ckPair == 0 || (c>>24)&0xf != 3 {
		t.Errorf("socketpair cookie %#x", c)
	}
	fixed := map[systable.Arg]int{systable.IOV: 1, systable.PosOffset: 3, systable.OpenHow: 2}
	for i := range systable.Table {
		row := &systable.Table[i]
		for role, at := range fixed {
			if i := row.Arg(role); i >= 0 && i != at {
				t.Errorf("%s: argument %d is role %d; the BPF side reads it at argument %d", row.Name, i, role, at)
			}
		}
		if row.Has(systable.IOV) && (len(row.Args) < 3 || row.Args[2] != systable.Other) {
			t.Errorf("%s: an iovec's count must follow it (argument 2)", row.Name)
		}
	}
}

// FuzzTrackerHandle feeds arbitrary records to the decoder: it must count
// what it cannot decode and never panic.
func FuzzTrackerHandle(f *testing.F) {
	f.Add(sysRecord(sc("pread64"), 1, 2000, 5, 1, 1, 10, [6]uint64{3, 0, 10, 0}, "a"))
	f.Add(pathRecord(sc("openat"), 2, 1, 0, "/etc/passwd"))
	f.Add(forkRecord(10, 1, 2, 5, cfFilesShared, "x"))
	f.Add(execRecord(10, 2, "/bin/sh", "sh\x00-c\x00", "sh"))
	stack := make([]byte, stackHdrSize+16)
	stack[0] = recStack
	le.PutUint32(stack[24:], 2)
	f.Add(stack)
	aio := make([]byte, aioSize)
	aio[0] = recAIO
	f.Add(aio)
	pcq := make([]byte, pcRecSize)
	pcq[0], pcq[1] = recPageCache, pcQueue
	le.PutUint32(pcq[48:], 4096)
	f.Add(pcq)
	cp := make([]byte, uStackCopyHdrSize+8)
	cp[0] = recUStackCopy
	le.PutUint32(cp[60:], 8)
	f.Add(cp)
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := newTestTracker(&memSink{})
		// With --stacks: stack IDs are looked up (and not found).
		tr.stacks = newStackTable(func(id int32) ([]uint64, error) { return []uint64{uint64(id)}, nil }, nil, tr.fact, nil)
		tr.copies.walk = func(pid uint32, c *uStackCopyRec) userPart { return userPart{ips: []uint64{c.PC}} }
		_ = tr.handle(b)
		// The same bytes as a record of every type.
		if len(b) >= hdrSize {
			c := append([]byte(nil), b...)
			for _, typ := range []uint8{recSyscall, recPath, recFork, recExec, recExit, recURing, recAIO, recExecMaps, recStack, recPageCache, recUStackCopy} {
				c[0] = typ
				_ = tr.handle(c)
			}
		}
	})
}

func TestBlockEventIdentity(t *testing.T) {
	s := &memSink{}
	tr := newTestTracker(s)
	tr.table.Fork(1, 200, 5000, "dd", false, false, 5000)
	tr.table.Fork(1, 300, 6000, "cp", false, false, 6000)

	send := func(pid uint32, ts int64, comm string) event.Event {
		e := event.Event{Layer: event.LayerBlock, Op: event.OpBlockRead, Pid: pid, Tid: pid, Time: ts, Comm: comm}
		tr.blockEvent(&e)
		return s.events[len(s.events)-1]
	}
	if e := send(200, 5100, ""); e.ProcStart != 5000 || e.Comm != "dd" {
		t.Fatalf("live process: start %d comm %q, want 5000 dd", e.ProcStart, e.Comm)
	}
	if e := send(200, 5100, "kcomm"); e.Comm != "kcomm" {
		t.Fatalf("the kernel's comm was replaced by %q", e.Comm)
	}
	// Queued before the exit, read after it; then the pid is reused.
	tr.remember(300, 7000)
	tr.table.Exit(300, 7000)
	if e := send(300, 6500, ""); e.ProcStart != 6000 || e.Comm != "cp" {
		t.Fatalf("exited process: start %d comm %q, want 6000 cp", e.ProcStart, e.Comm)
	}
	tr.table.Fork(1, 300, 9000, "ls", false, false, 9000)
	if e := send(300, 6600, ""); e.ProcStart != 6000 {
		t.Fatalf("late bio of the pid's previous process: start %d, want 6000", e.ProcStart)
	}
	if e := send(300, 9100, ""); e.ProcStart != 9000 || e.Comm != "ls" {
		t.Fatalf("pid reused: start %d comm %q, want 9000 ls", e.ProcStart, e.Comm)
	}
	// An unknown thread (completion never seen queued) stays unknown.
	e := event.Event{Layer: event.LayerBlock, Op: event.OpBlockRead, Flags: event.FlagNoStart}
	tr.blockEvent(&e)
	if got := s.events[len(s.events)-1]; got.ProcStart != 0 || got.Pid != 0 {
		t.Fatalf("unknown thread got an identity: %+v", got.Process())
	}
}

// TestURingRecordMore: the multishot flag sits right after the opcode.
func TestURingRecordMore(t *testing.T) {
	b := make([]byte, uringSize)
	b[0] = recURing
	b[76], b[77] = 100, 1
	var r uringRec
	if err := r.decode(b); err != nil {
		t.Fatal(err)
	}
	if r.Opcode != 100 || !r.More {
		t.Errorf("opcode %d more %v, want 100 true", r.Opcode, r.More)
	}
	b[77] = 0
	if err := r.decode(b); err != nil || r.More {
		t.Errorf("more %v (%v), want false", r.More, err)
	}
}

// TestTrackerLeavesOutLaunchSetup: with a command started by iotrace, its
// child's events before the exec (the dup3 of the command's standard
// output) are iotrace's set-up: left out and counted; from the exec on
// they are the command's. Another process's are untouched.
func TestTrackerLeavesOutLaunchSetup(t *testing.T) {
	s := &memSink{}
	tr := newTestTracker(s)
	const self, child, other = 10, 42, 43
	tr.launches(self)
	feed := func(b []byte) {
		t.Helper()
		if err := tr.handle(b); err != nil {
			t.Fatal(err)
		}
	}
	feed(forkRecord(1500, self, child, 1400, 0, "iotrace"))
	feed(forkRecord(1510, 1, other, 1400, 0, "sh"))
	feed(sysRecord(sc("dup3"), 1, 1600, 10, child, child, 1, [6]uint64{5, 1}, "iotrace"))
	feed(sysRecord(sc("close"), 2, 1610, 10, other, other, 0, [6]uint64{7}, "sh"))
	feed(execRecord(1700, child, "/bin/app", "app\x00", "app"))
	feed(sysRecord(sc("close"), 3, 1800, 10, child, child, 0, [6]uint64{3}, "app"))
	var got []string
	for _, e := range s.events {
		got = append(got, e.Comm+" "+e.Op.String())
	}
	if len(got) != 2 || got[0] != "sh close" || got[1] != "app close" {
		t.Errorf("events %v, want [sh close, app close]", got)
	}
	var st event.Stats
	tr.stats(&st)
	if n := st.Get(event.CountInfo, "events of iotrace starting the command, before its exec (left out)"); n != 1 {
		t.Errorf("set-up events counted %d, want 1", n)
	}
}
