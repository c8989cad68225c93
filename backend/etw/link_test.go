package etw

import (
	"context"
	"fmt"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// diskInitV adds a DiskIo Init in the DiskIo version that goes with the
// FileIo version of s: v2 (Irp only, the issuer is the header's thread)
// or v3 (Irp, IssuingThreadId).
func (s *synth) diskInitV(ts int64, opcode uint8, tid, pid uint32, irp uint64) {
	if s.version == 2 {
		s.add(record.KindSystem, record.GroupDiskIo, opcode, 2, ts, tid, pid, 3, buf{}.ptr(s.ptr, irp))
		return
	}
	s.diskInit(ts, opcode, tid, pid, irp)
}

// diskDoneV adds a DiskIo Read (10) / Write (11) completion in the
// version that goes with s, in the idle context of another CPU.
func (s *synth) diskDoneV(ts int64, opcode uint8, irp, fileKey, offset uint64, size uint32, issuer uint32) {
	if s.version == 2 {
		b := buf{}.u32(0).u32(0x43).u32(size).u32(0).u64(offset).ptr(s.ptr, fileKey).ptr(s.ptr, irp).u64(1000)
		s.add(record.KindSystem, record.GroupDiskIo, opcode, 2, ts, 0, 0, 7, b)
		return
	}
	s.diskDone(ts, opcode, 0, irp, fileKey, offset, size, 1000, issuer)
}

// flushDone adds a DiskIo FlushBuffers (14) completion: DiskNumber,
// IrpFlags, HighResResponseTime, Irp (v3: IssuingThreadId).
func (s *synth) flushDone(ts int64, irp uint64, issuer uint32) {
	b := buf{}.u32(0).u32(0x60000).u64(500).ptr(s.ptr, irp)
	if s.version == 3 {
		b = b.u32(issuer)
	}
	s.add(record.KindPerfInfo, record.GroupDiskIo, 14, s.version, ts, record.NoID, record.NoID, 0, b)
}

// rwFlags adds a FileIo Read/Write with explicit IoFlags.
func (s *synth) rwFlags(ts int64, opcode uint8, tid, pid uint32, irp, fo, fk, offset uint64, size, flags uint32) {
	s.rw(ts, opcode, tid, pid, irp, fo, fk, offset, size)
	d := s.recs[len(s.recs)-1].UserData
	copy(d[len(d)-4:], buf{}.u32(flags))
}

const (
	tidApp   = 4242
	pidApp   = 900
	tidAhead = 88 // a System worker thread (cache manager read-ahead)
	fo1      = 0xffffc00000001000
	fk1      = 0xffffc00000002000
	fk2      = 0xffffc00000003000
	fk3      = 0xffffc00000004000
	irpR1    = 0xffffc00000010000
	irpR3    = 0xffffc00000030000
	irpR4    = 0xffffc00000040000
	irpR5    = 0xffffc00000050000
	irpF1    = 0xffffc00000060000
	irpR6    = 0xffffc00000070000
	irpR7    = 0xffffc00000080000
	dIrp1    = 0xffffc00000d10000
	dIrp2    = 0xffffc00000d20000
	dIrp3    = 0xffffc00000d30000
	dIrp4    = 0xffffc00000d40000
	dIrp5    = 0xffffc00000d50000
	dIrp6    = 0xffffc00000d60000
	dIrp7    = 0xffffc00000d70000
	dIrp8    = 0xffffc00000d80000
	dIrp9    = 0xffffc00000d90000
)

// linkScenario exercises the links between disk I/O and file requests.
func linkScenario(ptr int, version uint16) *synth {
	s := &synth{ptr: ptr, version: version}
	s.header(1000)
	s.process(1000, 3, pidApp, 4, "app.exe", "app")
	s.thread(1000, 3, pidApp, tidApp)
	s.thread(1000, 3, 4, tidAhead)
	s.name(1000, 36, fk1, `\Device\HarddiskVolume2\data.bin`)
	at := func(msec float64) int64 { return 1000 + int64(msec*ms) }
	const cached = 0 // IoFlags of a cached read
	// R1: a cold 64 KiB read that waits for two disk reads of its file.
	s.rwFlags(at(10), 67, tidApp, pidApp, irpR1, fo1, fk1, 0, 65536, cached)
	s.diskInitV(at(10.1), 12, tidApp, pidApp, dIrp1)
	s.diskInitV(at(10.2), 12, tidApp, pidApp, dIrp2)
	s.diskDoneV(at(12), 10, dIrp1, fk1, 1<<20, 32768, tidApp)
	s.diskDoneV(at(13), 10, dIrp2, fk1, 1<<20+32768, 32768, tidApp)
	s.opEnd(at(14), irpR1, 65536, 0)
	// R2: the same read again, served from the cache (IRP reused).
	s.rwFlags(at(20), 67, tidApp, pidApp, irpR1, fo1, fk1, 0, 4096, cached)
	s.opEnd(at(20.05), irpR1, 4096, 0)
	// R3: its OpEnd comes before the completion of its disk read: the
	// request waits for it.
	s.rwFlags(at(30), 67, tidApp, pidApp, irpR3, fo1, fk1, 8192, 4096, cached)
	s.diskInitV(at(30.1), 12, tidApp, pidApp, dIrp3)
	s.opEnd(at(31), irpR3, 4096, 0)
	s.diskDoneV(at(32), 10, dIrp3, fk1, 1<<21, 4096, tidApp)
	// R4 in flight on the app thread while a System worker reads ahead on
	// the same file: not R4's disk I/O (another thread). R4 was a hit.
	s.rwFlags(at(39.9), 67, tidApp, pidApp, irpR4, fo1, fk1, 16384, 4096, cached)
	s.diskInitV(at(40), 12, tidAhead, 4, dIrp4)
	s.diskDoneV(at(41), 10, dIrp4, fk1, 1<<22, 65536, tidAhead)
	s.opEnd(at(42), irpR4, 4096, 0)
	// R5 on file 2 while the app thread's disk I/O is for file 3 (a
	// metadata or page-file read): not linked.
	s.rwFlags(at(45), 67, tidApp, pidApp, irpR5, fo1, fk2, 0, 4096, cached)
	s.diskInitV(at(45.1), 12, tidApp, pidApp, dIrp8)
	s.diskDoneV(at(45.5), 10, dIrp8, fk3, 1<<23, 4096, tidApp)
	s.opEnd(at(46), irpR5, 4096, 0)
	// F1: a Flush that writes dirty pages back and flushes the disk.
	s.simple(at(50), 73, tidApp, pidApp, irpF1, fo1, fk1)
	s.diskInitV(at(50.1), 13, tidApp, pidApp, dIrp5)
	s.diskDoneV(at(51), 11, dIrp5, fk1, 1<<24, 8192, tidApp)
	s.diskInitV(at(51.1), 15, tidApp, pidApp, dIrp6)
	s.flushDone(at(52), dIrp6, tidApp)
	s.opEnd(at(53), irpF1, 0, 0)
	// R6: ended, its disk read still in flight 2 s later: the request
	// goes out without it; the completion is counted as linked late.
	s.rwFlags(at(60), 67, tidApp, pidApp, irpR6, fo1, fk1, 0, 4096, cached)
	s.diskInitV(at(60.1), 12, tidApp, pidApp, dIrp7)
	s.opEnd(at(61), irpR6, 4096, 0)
	s.thread(at(2200), 1, pidApp, tidApp+4) // anything, 2.1 s later
	s.diskDoneV(at(2500), 10, dIrp7, fk1, 1<<25, 4096, tidApp)
	// R7: its disk read never completes before the trace ends: whether
	// it was served from the cache is unknown.
	s.rwFlags(at(2600), 67, tidApp, pidApp, irpR7, fo1, fk1, 0, 4096, cached)
	s.diskInitV(at(2600.1), 12, tidApp, pidApp, dIrp9)
	s.opEnd(at(2601), irpR7, 4096, 0)
	return s
}

func TestDiskLinks(t *testing.T) {
	for _, c := range []struct {
		ptr     int
		version uint16
	}{{8, 3}, {4, 3}, {8, 2}, {4, 2}} {
		t.Run(fmt.Sprintf("v%d-ptr%d", c.version, c.ptr), func(t *testing.T) {
			s := linkScenario(c.ptr, c.version)
			var out sink
			if err := Run(context.Background(), &SliceRecords{Recs: s.recs}, Options{}, &out); err != nil {
				t.Fatal(err)
			}
			checkLinks(t, &out)
		})
	}
	t.Run("live", func(t *testing.T) {
		s := linkScenario(8, 3)
		var out sink
		p := NewPipeline(&out, Options{ExpectOpEnd: true, DiskIOInit: true})
		for i := range s.recs {
			if err := p.Push(&s.recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(nil); err != nil {
			t.Fatal(err)
		}
		checkLinks(t, &out)
	})
	t.Run("no-init-option", func(t *testing.T) {
		// A live session without DISK_IO_INIT cannot link: nothing is
		// flagged a cache hit.
		s := linkScenario(8, 3)
		var out sink
		p := NewPipeline(&out, Options{ExpectOpEnd: true})
		for i := range s.recs {
			if err := p.Push(&s.recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(nil); err != nil {
			t.Fatal(err)
		}
		for _, e := range out.events {
			if e.Cause != 0 || e.CausedIOs != 0 || e.Flags&event.FlagCacheHit != 0 {
				t.Errorf("linked without Init events: %+v", e)
			}
		}
		if n := out.trailer.Stats.Get(event.CountInfo, StatNoLinks); n != 7 {
			t.Errorf("%s = %d, want 7 (the disk reads and writes)", StatNoLinks, n)
		}
	})
}

func checkLinks(t *testing.T, out *sink) {
	t.Helper()
	reqs := map[uint64]event.Event{} // by start time in µs
	ids := map[uint64]uint64{}       // event ID → start time in µs
	for _, e := range out.events {
		if e.Layer == event.LayerFile {
			us := uint64(e.Time / 1000)
			reqs[us] = e
			ids[e.ID] = us
		}
	}
	disks := map[uint64]event.Event{} // by Request (disk IRP)
	for _, e := range out.events {
		if e.Layer == event.LayerBlock {
			disks[e.Request&0xffffffff] = e
		}
	}
	cause := func(irp uint64) uint64 { // start time (µs) of the request that caused disk IRP irp
		d, ok := disks[irp&0xffffffff]
		if !ok {
			t.Fatalf("no disk event for IRP %#x", irp)
		}
		if d.Cause == 0 {
			return 0
		}
		us, ok := ids[d.Cause]
		if !ok {
			t.Errorf("disk IRP %#x: Cause %d names no file request", irp, d.Cause)
		}
		return us
	}
	for _, c := range []struct {
		irp  uint64
		want uint64 // µs
	}{
		{dIrp1, 10_000}, {dIrp2, 10_000}, {dIrp3, 30_000}, {dIrp4, 0}, {dIrp8, 0},
		{dIrp5, 50_000}, {dIrp6, 50_000}, {dIrp7, 60_000},
	} {
		if got := cause(c.irp); got != c.want {
			t.Errorf("disk IRP %#x: caused by the request at %d µs, want %d µs", c.irp, got, c.want)
		}
	}
	for _, c := range []struct {
		us       uint64
		ios      uint32
		bytes    uint64
		cacheHit bool
	}{
		{10_000, 2, 65536, false}, // R1
		{20_000, 0, 0, true},      // R2
		{30_000, 1, 4096, false},  // R3: waited for its disk read
		{39_900, 0, 0, true},      // R4: the read-ahead is not its own
		{45_000, 0, 0, true},      // R5: another file's disk I/O
		{50_000, 2, 8192, false},  // F1: a write and a disk flush
		{60_000, 0, 0, false},     // R6: went out before its disk read completed
		{2_600_000, 0, 0, false},  // R7: its disk read never completed
	} {
		e, ok := reqs[c.us]
		if !ok {
			t.Errorf("no request at %d µs", c.us)
			continue
		}
		if e.CausedIOs != c.ios || e.CausedBytes != c.bytes || (e.Flags&event.FlagCacheHit != 0) != c.cacheHit {
			t.Errorf("request at %d µs (%s): caused %d I/Os, %d bytes, flags %v; want %d, %d, cache hit %v",
				c.us, e.Native, e.CausedIOs, e.CausedBytes, e.Flags, c.ios, c.bytes, c.cacheHit)
		}
		if e.Flags&event.FlagNoCompletion != 0 || e.Duration == 0 {
			t.Errorf("request at %d µs not paired with its OpEnd: %+v", c.us, e)
		}
	}
	// R3 went out once its disk read completed, after the block event.
	var r3, d3 int
	for i, e := range out.events {
		if e.Layer == event.LayerFile && e.Time/1000 == 30_000 {
			r3 = i
		}
		if e.Layer == event.LayerBlock && e.Request&0xffffffff == dIrp3&0xffffffff {
			d3 = i
		}
	}
	if r3 < d3 {
		t.Errorf("R3 emitted (#%d) before the disk read it waited for (#%d)", r3, d3)
	}
	st := &out.trailer.Stats
	for name, want := range map[string]uint64{
		StatDiskInitPending: 1,
		StatLinked:          6,
		StatLinkLate:        1,
		StatCacheHits:       3,
	} {
		if got := st.Get(kindOf(st, name), name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if kindOf(st, StatLinkLate) != event.CountUnpaired {
		t.Errorf("%s is not shown as a problem", StatLinkLate)
	}
	if st.Get(event.CountInfo, StatNoLinks) != 0 {
		t.Errorf("%s counted in a trace that links", StatNoLinks)
	}
}

// TestWaitedForPagingRead: a cached read that overlaps, in time and file
// range, a paging read of its file (the cache manager's read-ahead on a
// System thread) waited for it: flagged waited-io, not a cache hit. A read
// of another range at the same time, and a read of the same range after
// the paging read ended, are hits (#19).
func TestWaitedForPagingRead(t *testing.T) {
	for _, v := range []uint16{2, 3} {
		s := &synth{ptr: 8, version: v}
		s.header(1000)
		s.process(1000, 3, pidApp, 4, "app.exe", "app")
		s.thread(1000, 3, pidApp, tidApp)
		s.thread(1000, 3, 4, tidAhead)
		s.name(1000, 36, fk1, `\Device\HarddiskVolume2\data.bin`)
		at := func(msec float64) int64 { return 1000 + int64(msec*ms) }
		const paging, cached = irpPagingIO | irpNocache, 0
		// Read-ahead of the first 64 KiB, with its disk read.
		s.rwFlags(at(10), 67, tidAhead, 4, irpR1, fo1, fk1, 0, 65536, paging)
		s.diskInitV(at(10.1), 12, tidAhead, 4, dIrp1)
		s.diskDoneV(at(12.9), 10, dIrp1, fk1, 1<<20, 65536, tidAhead)
		s.opEnd(at(13), irpR1, 65536, 0)
		// Waits: 4 KiB at 8 KiB, from 11 ms to just after the read-ahead.
		s.rwFlags(at(11), 67, tidApp, pidApp, irpR3, fo1, fk1, 8192, 4096, cached)
		s.opEnd(at(13.1), irpR3, 4096, 0)
		// Another range at the same time: a hit.
		s.rwFlags(at(11.5), 67, tidApp+1, pidApp, irpR4, fo1, fk1, 1<<20, 4096, cached)
		s.opEnd(at(11.6), irpR4, 4096, 0)
		// The same range later: a hit.
		s.rwFlags(at(20), 67, tidApp, pidApp, irpR5, fo1, fk1, 8192, 4096, cached)
		s.opEnd(at(20.1), irpR5, 4096, 0)
		var out sink
		if err := Run(context.Background(), &SliceRecords{Recs: s.recs}, Options{}, &out); err != nil {
			t.Fatal(err)
		}
		want := map[int64]event.Flags{11_000: event.FlagWaitedIO, 11_500: event.FlagCacheHit, 20_000: event.FlagCacheHit}
		seen := 0
		for _, e := range out.events {
			w, ok := want[e.Time/1000]
			if !ok || e.Layer != event.LayerFile {
				continue
			}
			seen++
			if got := e.Flags & (event.FlagWaitedIO | event.FlagCacheHit); got != w {
				t.Errorf("v%d: read at %d µs: flags %s, want %s", v, e.Time/1000, e.Flags, w)
			}
		}
		if seen != len(want) {
			t.Errorf("v%d: %d of the %d cached reads seen", v, seen, len(want))
		}
		if got := out.trailer.Stats.Get(event.CountInfo, StatWaitedIO); got != 1 {
			t.Errorf("v%d: %s = %d, want 1", v, StatWaitedIO, got)
		}
	}
}
