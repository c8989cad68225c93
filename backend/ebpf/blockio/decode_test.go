package blockio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

func comm(s string) (c [16]byte) {
	copy(c[:], s)
	return c
}

// testRecord is an O_DIRECT 4 KiB read of bio 0xffff8880 on 254:1,
// queued by thread 42/43 on CPU 0, completed on CPU 1's idle thread.
func testRecord() Record {
	l := DefaultOpfLayout()
	return Record{
		Bio: 0xffff888012345600, Rq: 0xffff888000abc000,
		QueueTS: 1_000_000, IssueTS: 1_002_000, DoneTS: 1_050_000,
		Cause: 77, Sector: 2048, Bytes: 4096,
		Opf: l.Read | l.Sync, Dev: 254<<20 | 1,
		Pid: 42, Tid: 43, CPU: 0,
		DoneCPU: 1, DoneTid: 0,
		Flags: RecPinned,
		Comm:  comm("dd"),
	}
}

func TestCompletionOnIdleThreadKeepsSubmitter(t *testing.T) {
	d := NewDecoder(DefaultOpfLayout(), 400_000)
	r := testRecord()
	var e event.Event
	d.Event(&r, &e)
	if e.Pid != 42 || e.Tid != 43 || e.CPU != 0 || e.Comm != "dd" {
		t.Fatalf("submitter %d/%d cpu %d %q, want 42/43 cpu 0 dd", e.Pid, e.Tid, e.CPU, e.Comm)
	}
	if e.Thread() != event.MakeThreadKey(42, 43, 5) || e.Thread().IsIdle() {
		t.Errorf("thread key %v: the completing idle thread leaked in", e.Thread())
	}
	if e.Time != 600_000 || e.Wait != 2_000 || e.Duration != 50_000 {
		t.Errorf("time %d wait %d duration %d, want 600000 2000 50000", e.Time, e.Wait, e.Duration)
	}
	if e.Layer != event.LayerBlock || e.Op != event.OpBlockRead || e.Native != "RS" {
		t.Errorf("%s %s %q", e.Layer, e.Op, e.Native)
	}
	if e.Dev != (event.Device{Major: 254, Minor: 1}) || e.Sector != 2048 || e.Offset != 2048*512 || e.Size != 4096 || e.Bytes != 4096 {
		t.Errorf("dev %s sector %d offset %d size %d bytes %d", e.Dev, e.Sector, e.Offset, e.Size, e.Bytes)
	}
	if e.Request != r.Bio || e.Cause != SyscallID(77) || IDKind(e.ID) != KindBlock || e.Status != event.StatusOK || e.Code != 0 {
		t.Errorf("request %#x cause %d id %#x status %s code %d", e.Request, e.Cause, e.ID, e.Status, e.Code)
	}
	if e.Flags != event.FlagDirect|event.FlagSync {
		t.Errorf("flags %s", e.Flags)
	}
	// IDs are unique.
	id := e.ID
	d.Event(&r, &e)
	if e.ID == id {
		t.Error("two events with one ID")
	}
}

func TestCompletionWithoutQueue(t *testing.T) {
	d := NewDecoder(DefaultOpfLayout(), 0)
	r := testRecord()
	r.Flags = RecNoStart
	r.QueueTS, r.Pid, r.Tid, r.Comm = 0, 0, 0, [16]byte{}
	var e event.Event
	d.Event(&r, &e)
	if e.Flags&event.FlagNoStart == 0 || e.Pid != 0 || e.Tid != 0 || e.CPU != event.NoCPU {
		t.Fatalf("flags %s pid %d tid %d cpu %d", e.Flags, e.Pid, e.Tid, e.CPU)
	}
	for cpu := uint32(0); cpu < 4; cpu++ {
		if e.Thread() == event.MakeThreadKey(0, 0, cpu) {
			t.Errorf("unknown submitter grouped with the idle thread of cpu %d", cpu)
		}
	}
	if e.Time != 1_002_000 || e.Duration != 48_000 || e.Wait != 0 {
		t.Errorf("time %d duration %d wait %d: want from issue", e.Time, e.Duration, e.Wait)
	}
}

func TestInFlight(t *testing.T) {
	d := NewDecoder(DefaultOpfLayout(), 0)
	r := testRecord()
	r.IssueTS, r.DoneTS = 0, 0
	var e event.Event
	d.InFlight(&r, &e)
	if e.Flags&event.FlagNoCompletion == 0 || e.Duration != 0 || e.Time != 1_000_000 || e.Pid != 42 || e.Bytes != -1 {
		t.Errorf("%s", describeUnit(&e))
	}
}

func describeUnit(e *event.Event) string {
	return e.Op.String() + " " + e.Native + " flags=" + e.Flags.String()
}

func TestOpfDecoding(t *testing.T) {
	l := DefaultOpfLayout()
	cases := []struct {
		opf   uint32
		bytes uint32
		op    event.Op
		rwbs  string
		flags event.Flags
	}{
		{l.Read, 4096, event.OpBlockRead, "R", 0},
		{l.Read | l.Readahead, 4096, event.OpBlockRead, "RA", event.FlagReadahead},
		{l.Write | l.Sync, 4096, event.OpBlockWrite, "WS", event.FlagSync},
		{l.Write | l.Sync | l.Meta, 4096, event.OpBlockWrite, "WSM", event.FlagSync | event.FlagMeta},
		{l.Write | l.Preflush | l.Sync, 0, event.OpBlockFlush, "FWS", event.FlagPreflush | event.FlagSync},
		{l.Write | l.Preflush | l.FUA | l.Sync, 4096, event.OpBlockWrite, "FWFS", event.FlagPreflush | event.FlagFUA | event.FlagSync},
		{l.Flush, 0, event.OpBlockFlush, "F", 0},
		{l.Discard, 1 << 20, event.OpBlockDiscard, "D", event.FlagDiscard},
		{l.SecureErase, 1 << 20, event.OpBlockDiscard, "DE", event.FlagDiscard},
		{l.WriteZeroes, 1 << 20, event.OpBlockDiscard, "N", event.FlagDiscard},
		{34, 0, event.OpUnknown, "N", 0}, // REQ_OP_DRV_IN
	}
	for _, c := range cases {
		if op := l.Op(c.opf, c.bytes); op != c.op {
			t.Errorf("opf %#x: op %s, want %s", c.opf, op, c.op)
		}
		if s := string(l.RWBS(nil, c.opf)); s != c.rwbs {
			t.Errorf("opf %#x: rwbs %q, want %q", c.opf, s, c.rwbs)
		}
		if f := l.Flags(c.opf); f != c.flags {
			t.Errorf("opf %#x: flags %s, want %s", c.opf, f, c.flags)
		}
	}
}

func TestWritebackAndFiles(t *testing.T) {
	l := DefaultOpfLayout()
	d := NewDecoder(l, 0)
	r := testRecord()
	r.Flags = RecKthread
	r.Opf = l.Write
	r.Cause = 0
	r.Inode, r.InoDev = 12, r.Dev
	var e event.Event
	d.Event(&r, &e)
	if e.Flags&event.FlagWriteback == 0 || e.Inode != 12 || e.Note != "" {
		t.Errorf("kthread write: flags %s inode %d note %q", e.Flags, e.Inode, e.Note)
	}
	r.Opf = l.Read
	r.InoDev = 0<<20 | 45 // btrfs-style anonymous dev
	d.Event(&r, &e)
	if e.Flags&event.FlagWriteback != 0 || e.Note != "inode-dev 0:45" {
		t.Errorf("kthread read: flags %s note %q", e.Flags, e.Note)
	}
}

func TestStatus(t *testing.T) {
	d := NewDecoder(DefaultOpfLayout(), 0)
	r := testRecord()
	r.Status = 10 // BLK_STS_IOERR
	var e event.Event
	d.Event(&r, &e)
	if e.Code != 5 || e.Status != event.FromErrno(5) || !e.Failed() || e.Info != 10 || e.Bytes != -1 {
		t.Errorf("IOERR: code %d status %s info %d bytes %d", e.Code, e.Status, e.Info, e.Bytes)
	}
	if StatusErrno(2) != 110 || StatusErrno(200) != 5 {
		t.Error("StatusErrno")
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := testRecord()
	b := make([]byte, RecordSize)
	r.Encode(b)
	var got Record
	if err := got.Decode(b); err != nil || got != r {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, r)
	}
	if err := got.Decode(b[:RecordSize-1]); err == nil {
		t.Error("short record accepted")
	}
	if err := got.Decode(append(b, 0)); err == nil {
		t.Error("long record accepted")
	}
}

func TestDecodeDoesNotAllocate(t *testing.T) {
	d := NewDecoder(DefaultOpfLayout(), 0)
	r := testRecord()
	b := make([]byte, RecordSize)
	r.Encode(b)
	var e event.Event
	var rr Record
	rr.Decode(b)
	d.Event(&rr, &e) // warm the caches
	if n := testing.AllocsPerRun(1000, func() {
		rr.Decode(b)
		d.Event(&rr, &e)
	}); n != 0 {
		t.Errorf("%v allocations per event", n)
	}
}

func TestCounterStats(t *testing.T) {
	per := make([][numCounters]uint64, 2)
	per[1][cLost] = 3
	per[0][cNoStart] = 2
	per[1][cCompleted] = 10
	s := counterStats(per, false)
	if s.Get(event.CountLost, StatLost+" (cpu 1)") != 3 || s.Total(event.CountLost) != 3 {
		t.Errorf("lost: %+v", s)
	}
	if s.Get(event.CountUnpaired, StatNoStart) != 2 || s.Get(event.CountInfo, StatCompleted) != 10 {
		t.Errorf("unpaired: %+v", s)
	}
	// With a pid filter, unknown completions are the filter's doing.
	s = counterStats(per, true)
	if s.Total(event.CountUnpaired) != 0 || s.Get(event.CountInfo, StatNoStartFilt) != 2 {
		t.Errorf("filtered: %+v", s)
	}
}

func TestDevicesFromSysfs(t *testing.T) {
	testenv.SkipUnderWine(t, "the fake sysfs is made of symbolic links, which wine does not make as Windows does")
	root := testenv.TempDir(t)
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("dev/block")
	mk("devices/pci0/virtio1/block/vda/vda1")
	mk("devices/virtual/block/loop0")
	if err := os.WriteFile(filepath.Join(root, "devices/pci0/virtio1/block/vda/vda1/partition"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"254:0": "../../devices/pci0/virtio1/block/vda",
		"254:1": "../../devices/pci0/virtio1/block/vda/vda1",
		"7:0":   "../../devices/virtual/block/loop0",
		"junk":  "../../devices/virtual/block/loop0",
	} {
		if err := os.Symlink(target, filepath.Join(root, "dev/block", link)); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDevices(root)
	if n, err := d.Scan(5); err != nil || n != 3 {
		t.Fatalf("Scan: %d, %v", n, err)
	}
	want := map[event.Device][2]string{
		{Major: 254, Minor: 0}: {"vda", "vda"},
		{Major: 254, Minor: 1}: {"vda1", "vda"},
		{Major: 7, Minor: 0}:   {"loop0", "loop0"},
	}
	for _, f := range d.Facts() {
		w, ok := want[f.Dev]
		if !ok || f.Kind != event.FactDevice || f.Name != w[0] || f.Detail != w[1] || !f.Rundown {
			t.Errorf("fact %+v", f)
		}
		delete(want, f.Dev)
	}
	if len(want) != 0 {
		t.Errorf("missing %v", want)
	}
	if _, ok := d.Add(event.Device{Major: 8, Minor: 0}, 9, false); ok || !d.Known(event.Device{Major: 8, Minor: 0}) {
		t.Error("an unknown device was named, or asked twice")
	}
}

func BenchmarkDecodeEvent(b *testing.B) {
	d := NewDecoder(DefaultOpfLayout(), 0)
	r := testRecord()
	buf := make([]byte, RecordSize)
	r.Encode(buf)
	var e event.Event
	var rr Record
	b.ReportAllocs()
	for b.Loop() {
		if err := rr.Decode(buf); err != nil {
			b.Fatal(err)
		}
		d.Event(&rr, &e)
	}
}

func FuzzDecode(f *testing.F) {
	r := testRecord()
	b := make([]byte, RecordSize)
	r.Encode(b)
	f.Add(b)
	f.Add(b[:10])
	r.Flags = RecNoStart | RecKthread
	r.Status = 0xffff
	r.Opf = 0xffffffff
	r.Inode, r.InoDev = 5, 7
	b2 := make([]byte, RecordSize)
	r.Encode(b2)
	f.Add(b2)
	d := NewDecoder(DefaultOpfLayout(), 12345)
	f.Fuzz(func(t *testing.T, data []byte) {
		var rec Record
		if err := rec.Decode(data); err != nil {
			if len(data) == RecordSize {
				t.Fatalf("rejected a full-size record: %v", err)
			}
			return
		}
		out := make([]byte, RecordSize)
		rec.Encode(out)
		if !bytes.Equal(out, data) {
			t.Fatalf("decode/encode changed the record")
		}
		var e event.Event
		d.Event(&rec, &e)
		if e.Duration < 0 || e.Wait < 0 || e.Wait > e.Duration || e.Layer != event.LayerBlock || IDKind(e.ID) != KindBlock {
			t.Fatalf("event: time %d duration %d wait %d layer %s id %#x", e.Time, e.Duration, e.Wait, e.Layer, e.ID)
		}
		d.InFlight(&rec, &e)
	})
}

// TestIDsFitDoubles: event IDs stay below 2^53 (exact in jq, JavaScript
// and Perfetto), the kinds never collide, and a block I/O's cause is the
// ID its system call got.
func TestIDsFitDoubles(t *testing.T) {
	seen := map[uint64]bool{}
	for _, raw := range []uint64{1, 2, 1<<48 | 1, 5<<48 | 7, 0xfff<<48 | 1<<38} {
		id := SyscallID(raw)
		if id >= 1<<53 || IDKind(id) != KindSyscall || seen[id] {
			t.Errorf("SyscallID(%#x) = %d", raw, id)
		}
		seen[id] = true
	}
	d := NewDecoder(DefaultOpfLayout(), 0)
	var e event.Event
	for i := 0; i < 3; i++ {
		d.Event(&Record{Cause: 1<<48 | 1}, &e)
		if IDKind(e.ID) != KindBlock || seen[e.ID] || e.ID >= 1<<53 || e.Cause != SyscallID(1<<48|1) {
			t.Errorf("block id %d, cause %d", e.ID, e.Cause)
		}
		seen[e.ID] = true
	}
}

// TestRawStack: the stack IDs round-trip through Event.Stack, errors
// included, and a trace's own stack ID is never taken for them.
func TestRawStack(t *testing.T) {
	for _, c := range [][2]int32{{0, 0}, {5, -1}, {-1, 7}, {-14, -17}, {16383, 1<<30 - 1}, {-1 << 20, -1 << 20}} {
		u, k, ok := SplitRawStack(RawStack(c[0], c[1]))
		if !ok || u != c[0] || k != c[1] {
			t.Errorf("RawStack(%d, %d) splits into %d, %d, %v", c[0], c[1], u, k, ok)
		}
	}
	if _, _, ok := SplitRawStack(42); ok {
		t.Error("a trace stack ID taken for raw IDs")
	}
}

// TestMergesFromRecords: bios sharing a request's address and issue time
// joined one request (a merge each after the first); the same address
// issued again is another request; bio-based completions (no request) and
// bios never issued are no merges; records of two requests interleaved
// (two CPUs completing) are told apart.
func TestMergesFromRecords(t *testing.T) {
	d := NewDecoder(DefaultOpfLayout(), 0)
	var e event.Event
	see := func(rq, issue uint64, flags uint16) {
		d.Event(&Record{Bio: 1, Rq: rq, IssueTS: issue, QueueTS: 1, DoneTS: 9, Flags: flags}, &e)
	}
	see(0xa000, 100, 0)
	see(0xa000, 100, 0) // merged
	see(0xa000, 100, 0) // merged
	see(0xa000, 200, 0) // the request struct reused: a new request
	see(0xb000, 150, 0)
	see(0xa000, 200, 0) // merged, after a record of another request
	see(0xb000, 150, 0) // merged
	see(0, 0, RecBioDone)
	see(0, 0, RecBioDone)
	see(0xc000, 0, RecNoIssue)
	see(0xc000, 0, RecNoIssue)
	if got := d.Merges(); got != 4 {
		t.Fatalf("Merges = %d, want 4", got)
	}
}
