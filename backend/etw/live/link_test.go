package live

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Kernel records as a real-time session delivers them on 64-bit Windows
// 8 and later: classic events under their group's class GUID, FileIo v3
// requests and OpEnd with a SYSTEM header (the issuing context), DiskIo v3
// Inits in the issuer's context and completions with a PERFINFO header
// (no context), FileIo names with a PERFINFO header. Payloads are written
// field by field from the layouts in backend/etw/kernel (diskio.go,
// fileio_request.go) and docs/etw.md.

type payload []byte

func (b payload) u32(v uint32) payload { return binary.LittleEndian.AppendUint32(b, v) }
func (b payload) u64(v uint64) payload { return binary.LittleEndian.AppendUint64(b, v) }
func (b payload) wstr(s string) payload {
	for _, c := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return binary.LittleEndian.AppendUint16(b, 0)
}

// kstream builds live kernel records; times are in ms from base.
type kstream struct {
	base int64 // QPC ticks at time 0 (10 MHz)
	recs []record.Record
}

func (s *kstream) add(guid record.GUID, opcode uint8, ms float64, cpu uint16, tid, pid uint32, data payload) {
	s.recs = append(s.recs, record.Record{Kind: record.KindClassic, Provider: guid, Opcode: opcode, Version: 3,
		PointerSize: 8, Flags: eventHeaderFlagClassicHeader | eventHeaderFlag64BitHeader,
		ThreadID: tid, ProcessID: pid, Timestamp: s.base + int64(ms*10_000), CPU: cpu, UserData: data,
		FileOffset: -1, Buffer: -1})
}

// fileName adds FileIo FileRundown (36): FileObject (the key), FileName.
func (s *kstream) fileName(ms float64, fileKey uint64, nt string) {
	s.add(kernel.GUIDFileIo, 36, ms, 0, record.NoID, record.NoID, payload{}.u64(fileKey).wstr(nt))
}

// rw adds FileIo Read (67) / Write (68) v3: Offset, IrpPtr, FileObject,
// FileKey, IssuingThreadId, IoSize, IoFlags.
func (s *kstream) rw(ms float64, cpu uint16, opcode uint8, tid, pid uint32, irp, fo, fk, off uint64, size uint32) {
	s.add(kernel.GUIDFileIo, opcode, ms, cpu, tid, pid, payload{}.u64(off).u64(irp).u64(fo).u64(fk).u32(tid).u32(size).u32(0))
}

// opEnd adds FileIo OpEnd (76) v3: IrpPtr, ExtraInfo, NtStatus.
func (s *kstream) opEnd(ms float64, cpu uint16, irp, extra uint64) {
	s.add(kernel.GUIDFileIo, 76, ms, cpu, 0, 0, payload{}.u64(irp).u64(extra).u32(0))
}

// diskInit adds DiskIo ReadInit (12) / WriteInit (13) v3: Irp,
// IssuingThreadId.
func (s *kstream) diskInit(ms float64, cpu uint16, opcode uint8, tid, pid uint32, irp uint64) {
	s.add(kernel.GUIDDiskIo, opcode, ms, cpu, tid, pid, payload{}.u64(irp).u32(tid))
}

// diskDone adds DiskIo Read (10) / Write (11) v3: DiskNumber, IrpFlags,
// TransferSize, Reserved, ByteOffset, FileObject (the FileKey), Irp,
// HighResResponseTime, IssuingThreadId.
func (s *kstream) diskDone(ms float64, cpu uint16, opcode uint8, irp, fileKey, off uint64, size uint32, issuer uint32) {
	s.add(kernel.GUIDDiskIo, opcode, ms, cpu, record.NoID, record.NoID,
		payload{}.u32(0).u32(0x43).u32(size).u32(0).u64(off).u64(fileKey).u64(irp).u64(20_000).u32(issuer))
}

const (
	lPid, lTid = 900, 901
	lFO, lFK   = 0xffffc00000001000, 0xffffc00000002000
	lIrpR      = 0xffffc00000010000
	lIrpW      = 0xffffc00000020000
	lDisk1     = 0xffffc00000d10000
	lDisk2     = 0xffffc00000d20000
	lDisk3     = 0xffffc00000d30000
)

// linkSession is one application thread's I/O on C:\data.bin: a cold
// 64 KiB read that waits for two disk reads, the same read again from
// the cache, and a write that goes to disk; requests and Inits are logged
// on CPU 0, disk completions on CPU 2, OpEnds on CPU 1.
func linkSession(base int64) (rundown, main []record.Record) {
	rd := &kstream{base: base}
	rd.fileName(1, lFK, `\Device\HarddiskVolume3\data.bin`)
	s := &kstream{base: base}
	s.rw(10, 0, 67, lTid, lPid, lIrpR, lFO, lFK, 0, 65536)
	s.diskInit(10.1, 0, 12, lTid, lPid, lDisk1)
	s.diskInit(10.2, 0, 12, lTid, lPid, lDisk2)
	s.diskDone(12, 2, 10, lDisk1, lFK, 1<<20, 32768, lTid)
	s.diskDone(13, 2, 10, lDisk2, lFK, 1<<20+32768, 32768, lTid)
	s.opEnd(14, 1, lIrpR, 65536)
	s.rw(20, 0, 67, lTid, lPid, lIrpR, lFO, lFK, 0, 4096)
	s.opEnd(20.05, 1, lIrpR, 4096)
	s.rw(30, 0, 68, lTid, lPid, lIrpW, lFO, lFK, 8192, 4096)
	s.diskInit(30.1, 0, 13, lTid, lPid, lDisk3)
	s.diskDone(31, 2, 11, lDisk3, lFK, 1<<22, 4096, lTid)
	s.opEnd(32, 1, lIrpW, 4096)
	return rd.recs, s.recs
}

// perCPU returns recs in the order a real-time consumer receives them
// when each processor's buffer is delivered whole, highest CPU first: in
// time order per CPU, not across CPUs.
func perCPU(recs []record.Record) []record.Record {
	out := append([]record.Record(nil), recs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].CPU > out[j].CPU })
	return out
}

// link describes a disk I/O and the file request it was linked to.
type link struct {
	disk  event.Op
	irp   uint64
	cause string // op, offset and size of the request; "" when none
}

// links returns the links of a trace, and each file request's caused
// I/Os and cache-hit flag.
func links(t *testing.T, m *memSink) ([]link, []string) {
	t.Helper()
	byID := map[uint64]event.Event{}
	for _, e := range m.events {
		byID[e.ID] = e
	}
	var out []link
	var reqs []string
	for _, e := range m.events {
		switch e.Layer {
		case event.LayerBlock:
			l := link{disk: e.Op, irp: e.Request}
			if e.Cause != 0 {
				c, ok := byID[e.Cause]
				if !ok {
					t.Errorf("disk I/O %#x caused by #%d, which is not in the trace", e.Request, e.Cause)
				}
				l.cause = fmt.Sprintf("%v off %d size %d", c.Op, c.Offset, c.Size)
			}
			out = append(out, l)
		case event.LayerFile:
			if e.Op == event.OpRead || e.Op == event.OpWrite {
				reqs = append(reqs, fmt.Sprintf("%v off %d size %d %s: %d I/Os %d B cache-hit=%v", e.Op, e.Offset, e.Size,
					e.Path, e.CausedIOs, e.CausedBytes, e.Flags&event.FlagCacheHit != 0))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].irp < out[j].irp })
	sort.Strings(reqs)
	return out, reqs
}

// TestLiveLinksLikeFile: a live session whose processors' buffers arrive
// one after the other (a disk completion before the Init and the request
// that caused it) links every disk I/O to its file request exactly as
// the offline reader does with the same records, and flags the cached
// read; nothing is left unpaired.
func TestLiveLinksLikeFile(t *testing.T) {
	f := newFakeAPI()
	f.qpc = 50_000_000
	rd, main := linkSession(f.qpc)
	f.rundownEvents, f.mainEvents = rd, perCPU(main)
	f.procs = append(f.procs, Process{Pid: lPid, PPid: 100, Name: "app.exe"})
	live := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{}, live, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := f.started[len(f.started)-1]; got.EnableFlags&FlagDiskIOInit == 0 || got.FlushTimer == 0 {
		t.Errorf("main session: flags %#x, flush timer %d: want DISK_IO_INIT and a flush timer", got.EnableFlags, got.FlushTimer)
	}

	// The offline reader, on the same records in time order, with the
	// volume mapping a file carries (SysConfig VolumeMapping).
	all := append(append([]record.Record(nil), rd...), main...)
	all = append(all, record.Record{Kind: record.KindClassic, Provider: kernel.GUIDSysConfig, Opcode: 35, PointerSize: 8,
		Timestamp: f.qpc, UserData: payload{}.wstr(`\Device\HarddiskVolume3`).wstr("C:")})
	sort.SliceStable(all, func(i, j int) bool { return all[i].Timestamp < all[j].Timestamp })
	file := &memSink{}
	if err := etw.Run(context.Background(), &etw.SliceRecords{Recs: all}, etw.Options{}, file); err != nil {
		t.Fatal(err)
	}
	gotL, gotR := links(t, live)
	wantL, wantR := links(t, file)
	if fmt.Sprint(gotL) != fmt.Sprint(wantL) || fmt.Sprint(gotR) != fmt.Sprint(wantR) {
		t.Errorf("live links:\n  %v\n  %q\noffline:\n  %v\n  %q", gotL, gotR, wantL, wantR)
	}
	if len(wantL) != 3 || wantL[0].cause == "" || wantL[1].cause == "" || wantL[2].cause == "" {
		t.Fatalf("offline links %v: the scenario should link all three disk I/Os", wantL)
	}
	want := []string{
		`read off 0 size 4096 C:\data.bin: 0 I/Os 0 B cache-hit=true`,
		`read off 0 size 65536 C:\data.bin: 2 I/Os 65536 B cache-hit=false`,
		`write off 8192 size 4096 C:\data.bin: 1 I/Os 4096 B cache-hit=false`,
	}
	if fmt.Sprint(gotR) != fmt.Sprint(want) {
		t.Errorf("live requests:\n  %q\nwant\n  %q", gotR, want)
	}
	st := live.trailer.Stats
	if n := st.Get(event.CountInfo, etw.StatLinked); n != 3 {
		t.Errorf("%s = %d, want 3", etw.StatLinked, n)
	}
	for _, p := range st.Problems() {
		t.Errorf("problem counted: %s = %d", p.Name, p.Value)
	}
	if n := st.Get(event.CountInfo, StatReorderLate); n != 0 {
		t.Errorf("%s = %d", StatReorderLate, n)
	}
	if n := st.Get(event.CountInfo, etw.StatNoLinks); n != 0 {
		t.Errorf("%s = %d", etw.StatNoLinks, n)
	}

	// The same delivery without reordering pairs and links (much) less:
	// the scenario does depend on it.
	f2 := newFakeAPI()
	f2.qpc = f.qpc
	f2.rundownEvents, f2.mainEvents = rd, perCPU(main)
	raw := &memSink{}
	if err := runFake(t, f2, Config{ReorderWindow: -1}, backend.Options{}, raw, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if rawL, _ := links(t, raw); fmt.Sprint(rawL) == fmt.Sprint(wantL) {
		t.Errorf("links without reordering are the same (%v): the delivery order does not test reordering", rawL)
	}
}

// TestReorderer: items come out in timestamp order (arrival order for
// equal times) once the window has passed; a late item is counted; past
// the limit the oldest go out early, counted.
func TestReorderer(t *testing.T) {
	r := newReorderer(100, 4)
	var out []int64
	fn := func(it *item) { out = append(out, it.rec.Timestamp) }
	push := func(ts ...int64) {
		for _, v := range ts {
			it := &item{}
			it.rec.Timestamp = v
			if back := r.swap(it); back == nil || back == it {
				t.Fatal("swap must hand back another item")
			}
		}
	}
	push(50, 10, 30)
	r.release(120, fn) // releases up to 20
	if fmt.Sprint(out) != "[10]" {
		t.Fatalf("released %v", out)
	}
	push(15) // later than 10: in order still
	r.release(200, fn)
	if fmt.Sprint(out) != "[10 15 30 50]" || r.late != 0 {
		t.Fatalf("released %v, late %d", out, r.late)
	}
	push(40) // after 50 went out: late, passed on at the next release
	if r.late != 1 {
		t.Errorf("late = %d", r.late)
	}
	r.release(200, fn)
	push(1000, 1001, 1002, 1003, 1004, 1005)
	r.release(200, fn) // 6 held, limit 4: the 2 oldest go early
	if fmt.Sprint(out) != "[10 15 30 50 40 1000 1001]" || r.forced != 2 {
		t.Fatalf("released %v, forced %d", out, r.forced)
	}
	r.releaseAll(fn)
	if len(out) != 11 || r.held() != 0 || len(r.spare) != 6 { // 5 spares went back to the queue
		t.Errorf("released %v, held %d, spare %d", out, r.held(), len(r.spare))
	}
}

// BenchmarkReorderer measures holding and releasing one event in a
// window of about 100,000 events from 8 processors whose buffers arrive
// one after the other (the steady state of a busy session).
func BenchmarkReorderer(b *testing.B) {
	const cpus, perBuf = 8, 1 << 10
	r := newReorderer(100_000, 0)
	var ts [cpus]int64
	fn := func(*item) {}
	back := &item{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		cpu := (i / perBuf) % cpus
		ts[cpu] += cpus
		back.rec.Timestamp = ts[cpu]
		back = r.swap(back)
		if i%perBuf == 0 {
			r.release(ts[cpu], fn)
		}
	}
}
