package ebpf

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

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

// resident returns how many bytes of file f are in the page cache
// (mincore over a mapping of it).
func resident(t *testing.T, f string) (res, size int) {
	t.Helper()
	fh, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	size = int(st.Size())
	m, err := unix.Mmap(int(fh.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (size+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore %s: %v", f, errno)
	}
	for i, v := range vec {
		if v&1 != 0 {
			res += min(page, size-i*page)
		}
	}
	return res, size
}

// pin keeps file f's pages in memory until the returned function is
// called (an mlock'ed mapping: this machine's DAMON pages out what sits
// idle for a minute, docs/linux.md).
func pin(t *testing.T, f string) func() {
	t.Helper()
	fh, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(fh.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mlock(m); err != nil {
		unix.Munmap(m)
		t.Fatalf("mlock %s: %v", f, err)
	}
	return func() { unix.Munmap(m) }
}

// provenance adds up the Read fields of reads: the bytes read and the
// four parts.
type provSums struct{ bytes, cached, ahead, disk, waited uint64 }

func sumProvenance(t *testing.T, reads []event.Event) provSums {
	t.Helper()
	var p provSums
	for _, r := range reads {
		if r.Bytes <= 0 {
			continue // end of file
		}
		if k := r.ReadKnown(); k != uint64(r.Bytes) {
			t.Errorf("read at offset %d of %d bytes: provenance adds up to %d (cached %d, read-ahead %d, disk %d, waited %d)",
				r.Offset, r.Bytes, k, r.ReadCached, r.ReadAhead, r.ReadDisk, r.ReadWaited)
		}
		if (r.ReadCached == uint64(r.Bytes)) != (r.Flags&event.FlagCacheHit != 0) || (r.ReadWaited != 0) != (r.Flags&event.FlagWaitedIO != 0) {
			t.Errorf("read at offset %d: flags %s disagree with its provenance %+v", r.Offset, r.Flags, r)
		}
		p.bytes += uint64(r.Bytes)
		p.cached += r.ReadCached
		p.ahead += r.ReadAhead
		p.disk += r.ReadDisk
		p.waited += r.ReadWaited
	}
	return p
}

// logOnFailure, if the test has failed, logs the trace's counters and,
// for the first read of file ino whose provenance does not add up, the
// file's block reads around it, so that a failure says which evidence
// was missing or late.
func logOnFailure(t *testing.T, s *memSink, reads []event.Event, ino uint64) {
	t.Helper()
	if !t.Failed() || s.trailer == nil {
		return
	}
	for _, c := range s.trailer.Stats.Sorted() {
		t.Logf("trace counter: %s: %s = %d", c.Kind, c.Name, c.Value)
	}
	for _, r := range reads {
		if r.Bytes <= 0 || r.ReadKnown() == uint64(r.Bytes) {
			continue
		}
		t.Logf("read at offset %d: %d-%d ns", r.Offset, r.Time, r.End())
		for _, b := range s.events {
			if b.Layer == event.LayerBlock && b.Inode == ino && b.End() > r.Time-50_000_000 && b.Time < r.End()+50_000_000 {
				t.Logf("  block %s of %d bytes, cause %#x: %d-%d ns", b.Op, b.Size, b.Cause, b.Time, b.End())
			}
		}
		return
	}
}

// TestProvenanceColdWarm: cat reads a cold 32 MiB file (none of it
// resident, checked with mincore), then again warm (all of it resident,
// pinned). Every read's four parts add up to its bytes; cold, at least
// 95 % come from disk (read-ahead, the read's own I/O, or waited for),
// the read-ahead bytes are linked to the read that started it (one of
// cat's, whose own bios they are), and the file is resident afterwards;
// warm, at least 99 % were served from memory already cached, and the
// report says so (#27).
func TestProvenanceColdWarm(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "cat")
	f, ino := coldFile(t, 32<<20)
	if res, _ := resident(t, f); res != 0 {
		t.Fatalf("%d bytes of the cold file resident before the cold read", res)
	}
	cmd := []string{"sh", "-c", "cat " + f + " > /dev/null"}

	cold := traceCmd(t, cmd, event.LayerFile, event.LayerBlock)
	cold.logUnseen(t)
	reads := find(cold.events, byNative("read"), byPath(f))
	p := sumProvenance(t, reads)
	defer logOnFailure(t, cold, reads, ino)
	fromDisk := p.ahead + p.disk + p.waited
	t.Logf("cold: %d reads, %d bytes: cached %d, read-ahead %d, disk %d, waited %d", len(reads), p.bytes, p.cached, p.ahead, p.disk, p.waited)
	if cold.trailer != nil {
		if n := cold.trailer.Stats.Get(event.CountInfo, StatWitnessedFills); n != 0 {
			t.Logf("%d fills no program saw complete, timed from the witness", n)
		}
	}
	if p.bytes != 32<<20 || fromDisk*100 < p.bytes*95 {
		t.Errorf("cold read: %d of %d bytes from disk, want at least 95 %%", fromDisk, p.bytes)
	}
	ids := map[uint64]bool{}
	var caused uint64
	for _, r := range reads {
		ids[r.ID] = true
		caused += r.CausedBytes
	}
	for _, r := range reads {
		if r.ReadAhead != 0 && !ids[r.ReadAheadFrom] {
			t.Errorf("read at offset %d: %d bytes of read-ahead from %d, not one of cat's reads", r.Offset, r.ReadAhead, r.ReadAheadFrom)
		}
	}
	var biosBytes uint64
	for _, e := range cold.events {
		if e.Layer == event.LayerBlock && e.Op == event.OpBlockRead && e.Inode == ino {
			biosBytes += e.Size
		}
	}
	if caused != biosBytes || biosBytes < fromDisk {
		t.Errorf("cat's reads caused %d bytes of block reads, the file's block reads carry %d, %d bytes came from disk", caused, biosBytes, fromDisk)
	}
	// Resident afterwards: the read brought it in (a few pages may have
	// been reclaimed since, by DAMON or another test's pressure).
	if res, size := resident(t, f); res*100 < size*99 {
		t.Fatalf("after the cold read %d of %d bytes resident, want at least 99 %%", res, size)
	}
	if rc := reportOf(t, cold).Cache; rc == nil || !rc.Provenance || rc.BytesReadahead+rc.BytesDisk+rc.BytesWaited < fromDisk {
		t.Errorf("cold report cache %+v, want provenance with %d bytes from disk", rc, fromDisk)
	}

	unpin := pin(t, f)
	defer unpin()
	warm := traceCmd(t, cmd, event.LayerFile, event.LayerBlock)
	w := sumProvenance(t, find(warm.events, byNative("read"), byPath(f)))
	t.Logf("warm: %d bytes: cached %d, read-ahead %d, disk %d, waited %d", w.bytes, w.cached, w.ahead, w.disk, w.waited)
	if w.bytes != 32<<20 || w.cached*100 < w.bytes*99 {
		t.Errorf("warm read: %d of %d bytes cached, want at least 99 %%", w.cached, w.bytes)
	}
	if wc := reportOf(t, warm).Cache; wc == nil || !wc.Provenance || wc.MemoryRatio < 0.99 {
		t.Errorf("warm report cache %+v, want at least 99 %% served from memory", wc)
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
	// The read-ahead usually is still in flight when the read comes, but on
	// a fast disk, with the reader preempted between the two calls, it can
	// be done first: the read's bytes are then read-ahead of the fadvise
	// call, not waited for. Such a run is checked as one and the case is
	// tried again.
	const attempts = 5
	for i := range attempts {
		if readWaitsForReadahead(t, bin) {
			return
		}
		t.Logf("attempt %d: the read-ahead was done before the read; again", i+1)
	}
	t.Fatalf("in %d attempts the read never came while the read-ahead was in flight", attempts)
}

// readWaitsForReadahead runs willneed once on a cold file and checks the
// read's provenance against the block I/O of the trace. It reports whether
// the read came while the read-ahead was in flight (the case under test).
func readWaitsForReadahead(t *testing.T, bin string) bool {
	t.Helper()
	f, ino := coldFile(t, 4<<20) // within what one WILLNEED reads ahead (8 MiB here)
	s := traceCmd(t, []string{bin, f}, event.LayerFile, event.LayerBlock)
	adv := find(s.events, byNative("fadvise64"), byPath(f))
	reads := find(s.events, byNative("pread64"), byPath(f))
	if len(adv) != 1 || len(reads) != 1 {
		t.Fatalf("%d fadvise64 and %d pread64 events on %s, want 1 each", len(adv), len(reads), f)
	}
	r := reads[0]
	if r.CausedIOs != 0 {
		t.Errorf("the read after WILLNEED caused %d I/Os; want none of its own", r.CausedIOs)
	}
	inFlight, lastDone := 0, int64(0)
	for _, b := range s.events {
		if b.Layer == event.LayerBlock && b.Inode == ino && b.Cause == adv[0].ID {
			lastDone = max(lastDone, b.End())
			if b.Time < r.End() && b.End() > r.Time {
				inFlight++
			}
		}
	}
	if lastDone == 0 {
		t.Fatal("no block read caused by the fadvise call")
	}
	if r.Flags&event.FlagWaitedIO == 0 && r.ReadAhead == 4096 {
		// The read-ahead was done first: the bytes are the fadvise call's
		// read-ahead, not a cache hit and not waited for.
		if r.Flags&event.FlagCacheHit != 0 || r.ReadAheadFrom != adv[0].ID || r.ReadWaited != 0 || r.ReadDisk != 0 {
			t.Errorf("the read after a finished WILLNEED: flags %s, ahead %d from %#x (want %#x), waited %d, disk %d; want its 4096 bytes read ahead by the fadvise call",
				r.Flags, r.ReadAhead, r.ReadAheadFrom, adv[0].ID, r.ReadWaited, r.ReadDisk)
		}
		if lastDone > r.Time {
			t.Logf("read served by finished read-ahead while other read-ahead ended %d ns after it began", lastDone-r.Time)
		}
		return false
	}
	if r.Flags&event.FlagWaitedIO == 0 {
		t.Errorf("the read after WILLNEED: flags %s, ahead %d, cached %d, waited %d; want waited-io, or its bytes read ahead by the fadvise call", r.Flags, r.ReadAhead, r.ReadCached, r.ReadWaited)
		return true
	}
	if inFlight == 0 {
		t.Error("read flagged waited-io, but no block read caused by the fadvise call was in flight during it")
	}
	if c := reportOf(t, s).Cache; c == nil || c.WaitedReads != 1 || c.BytesWaited != 4096 {
		t.Errorf("report cache %+v, want the one read counted as waited", c)
	}
	return true
}
