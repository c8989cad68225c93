package ebpf

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/report"
)

// coldFile writes size random bytes to a new file, flushes it and drops
// its pages from the page cache, and returns its path and inode.
func coldFile(t *testing.T, size int) (string, uint64) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "cold")
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(fh.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(fh.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return f, st.Ino
}

// reportOf runs the events through a report.
func reportOf(t *testing.T, s *memSink) *report.Result {
	t.Helper()
	r := report.New(report.Options{TopN: 5})
	if err := r.Begin(&s.header); err != nil {
		t.Fatal(err)
	}
	for i := range s.events {
		if err := r.Event(&s.events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.End(s.trailer); err != nil {
		t.Fatal(err)
	}
	return r.Result()
}

// TestCacheCategoriesColdWarm: dd reads a cold 16 MiB file in 4 KiB reads,
// then reads it again warm. Cold, every read is one of: caused disk I/O
// itself (its bios link to it), waited for disk I/O already in flight
// (a block read of the file in flight during it, caused by another
// read), or a cache hit; some caused disk I/O, and the file's block reads
// are all caused by its reads. Warm, every read is a cache hit and the
// report says 100 % (#19).
func TestCacheCategoriesColdWarm(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "dd")
	f, ino := coldFile(t, 16<<20)
	dd := []string{"dd", "if=" + f, "of=/dev/null", "bs=4k"}

	cold := traceCmd(t, dd, event.LayerFile, event.LayerBlock)
	cold.logUnseen(t)
	reads := find(cold.events, byNative("read"), byPath(f))
	if len(reads) < 4096 {
		t.Fatalf("%d reads of %s, want at least 4096", len(reads), f)
	}
	var bios []event.Event
	for _, e := range cold.events {
		if e.Layer == event.LayerBlock && e.Op == event.OpBlockRead && e.Inode == ino {
			bios = append(bios, e)
		}
	}
	if len(bios) == 0 {
		t.Fatal("no block reads of the cold file")
	}
	readIDs := map[uint64]bool{}
	for _, r := range reads {
		readIDs[r.ID] = true
	}
	var biosBytes uint64
	for _, b := range bios {
		biosBytes += b.Size
		if !readIDs[b.Cause] {
			t.Errorf("block read %d of the file (%d bytes at %d) not caused by one of dd's reads (cause %d)", b.ID, b.Size, b.Offset, b.Cause)
		}
	}
	var disk, waited, hits int
	var causedBytes uint64
	for _, r := range reads {
		if r.Bytes <= 0 {
			continue // end of file
		}
		causedBytes += r.CausedBytes
		n := 0
		if r.CausedIOs > 0 {
			disk++
			n++
		}
		if r.Flags&event.FlagWaitedIO != 0 {
			waited++
			n++
			inFlight := false
			for _, b := range bios {
				if b.Cause != r.ID && b.Time < r.End() && b.End() > r.Time {
					inFlight = true
					break
				}
			}
			if !inFlight {
				t.Errorf("read at offset %d flagged waited-io, but no block read of the file was in flight during it", r.Offset)
			}
		}
		if r.Flags&event.FlagCacheHit != 0 {
			hits++
			n++
		}
		if n != 1 {
			t.Errorf("read at offset %d (flags %s, caused %d I/Os) is in %d categories, want 1", r.Offset, r.Flags, r.CausedIOs, n)
		}
	}
	t.Logf("cold: %d reads: %d caused disk I/O, %d waited for I/O in flight, %d cache hits; %d bios", len(reads), disk, waited, hits, len(bios))
	if disk == 0 {
		t.Error("cold read: no read caused disk I/O")
	}
	if causedBytes != biosBytes {
		t.Errorf("reads caused %d bytes of block I/O, the file's block reads carry %d", causedBytes, biosBytes)
		for _, r := range reads {
			if r.CausedIOs > 0 {
				t.Logf("read %#x at %d: caused %d I/Os, %d bytes", r.ID, r.Offset, r.CausedIOs, r.CausedBytes)
			}
		}
		for _, e := range cold.events {
			if e.Layer == event.LayerBlock {
				t.Logf("block event %#x: %s pid %d inode %d cause %#x sector %d size %d flags %s", e.ID, e.Op, e.Pid, e.Inode, e.Cause, e.Sector, e.Size, e.Flags)
			}
		}
		if cold.trailer != nil {
			t.Logf("stats: %+v", cold.trailer.Stats.Sorted())
		}
	}
	rc := reportOf(t, cold).Cache
	if rc == nil || rc.WaitedReads < uint64(waited) || rc.DiskReads < uint64(disk) {
		t.Errorf("cold report cache %+v, want at least %d waited and %d disk reads", rc, waited, disk)
	}

	warm := traceCmd(t, dd, event.LayerFile, event.LayerBlock)
	for _, r := range find(warm.events, byNative("read"), byPath(f)) {
		if r.Bytes > 0 && (r.Flags&event.FlagCacheHit == 0 || r.Flags&event.FlagWaitedIO != 0 || r.CausedIOs != 0) {
			t.Errorf("warm read at offset %d: flags %s, caused %d I/Os; want a cache hit", r.Offset, r.Flags, r.CausedIOs)
		}
	}
	wc := reportOf(t, warm).Cache
	if wc == nil || wc.HitRatio != 1 || wc.WaitedReads != 0 || wc.DiskReads != 0 {
		t.Errorf("warm report cache %+v, want every classified read a hit", wc)
	}
}

// TestReadWaitsForReadahead: posix_fadvise(WILLNEED) queues read-ahead of
// a cold 4 MiB file and returns; a 4 KiB read of its end right after
// queues no I/O and waits for that read-ahead: it is flagged waited-io
// (not a cache hit), and the read-ahead's bios, caused by the fadvise
// call, were in flight during it (#19).
func TestReadWaitsForReadahead(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	bin := buildC(t, "testdata/cache/willneed.c")
	f, ino := coldFile(t, 4<<20) // within what one WILLNEED reads ahead (8 MiB here)
	s := traceCmd(t, []string{bin, f}, event.LayerFile, event.LayerBlock)
	adv := find(s.events, byNative("fadvise64"), byPath(f))
	reads := find(s.events, byNative("pread64"), byPath(f))
	if len(adv) != 1 || len(reads) != 1 {
		t.Fatalf("%d fadvise64 and %d pread64 events on %s, want 1 each", len(adv), len(reads), f)
	}
	r := reads[0]
	if r.Flags&event.FlagWaitedIO == 0 || r.Flags&event.FlagCacheHit != 0 || r.CausedIOs != 0 {
		t.Errorf("the read after WILLNEED: flags %s, caused %d I/Os; want waited-io, no I/O of its own", r.Flags, r.CausedIOs)
	}
	inFlight := 0
	for _, b := range s.events {
		if b.Layer == event.LayerBlock && b.Inode == ino && b.Cause == adv[0].ID && b.Time < r.End() && b.End() > r.Time {
			inFlight++
		}
	}
	if inFlight == 0 {
		t.Error("no block read caused by the fadvise call was in flight during the read")
	}
	if c := reportOf(t, s).Cache; c == nil || c.WaitedReads != 1 || c.BytesWaited != 4096 {
		t.Errorf("report cache %+v, want the one read counted as waited", c)
	}
}
