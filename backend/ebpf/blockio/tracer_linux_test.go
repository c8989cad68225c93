package blockio

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
	"github.com/iotrace/iotrace/event"
)

// TestDirectIO: O_DIRECT reads and writes of known sizes at known offsets
// give one block event per bio on the right device, at the file's
// physical offset, with latency, submitted by this thread and linked to
// the "syscall" the thread was in.
func TestDirectIO(t *testing.T) {
	loop := newLoop(t, 64<<20, true)
	path := filepath.Join(loop.mount, "data")
	// 1 MiB of data, on disk before tracing starts.
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		t.Fatal(err)
	}

	r := startTracer(t, Options{})
	cm := causeMap{r.t}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := uint32(unix.Gettid())
	pid := uint32(os.Getpid())

	type op struct {
		write     bool
		off, size int64
		id        uint64
		caused    blockioSyscallCause
	}
	ops := []op{
		{false, 0, 4096, 101, blockioSyscallCause{}},
		{false, 64 << 10, 16 << 10, 102, blockioSyscallCause{}},
		{true, 128 << 10, 8 << 10, 103, blockioSyscallCause{}},
		{false, 512 << 10, 256 << 10, 104, blockioSyscallCause{}},
		{true, 900 << 10, 4096, 105, blockioSyscallCause{}},
	}
	for i := range ops {
		o := &ops[i]
		buf := alignedBuf(int(o.size))
		cm.enter(t, tid, o.id)
		var n int
		if o.write {
			n, err = unix.Pwrite(fd, buf, o.off)
		} else {
			n, err = unix.Pread(fd, buf, o.off)
		}
		o.caused = cm.exit(t, tid)
		if err != nil || int64(n) != o.size {
			t.Fatalf("op %d: %d, %v", i, n, err)
		}
	}
	evs := onDev(r.stop(t), loop.dev)

	for _, o := range ops {
		phys, contig := physical(t, fd, o.off, o.size)
		if contig < o.size {
			t.Fatalf("file not contiguous at %d: phys %d, %d bytes follow", o.off, phys, contig)
		}
		var bytes uint64
		var n uint32
		for i := range evs {
			e := &evs[i]
			if e.Cause != SyscallID(o.id) {
				continue
			}
			n++
			bytes += e.Size
			t.Logf("op %d: %s", o.id, describe(e))
			wantOp := event.OpBlockRead
			if o.write {
				wantOp = event.OpBlockWrite
			}
			if e.Op != wantOp || e.Layer != event.LayerBlock {
				t.Errorf("op %d: %s %s, want %s", o.id, e.Layer, e.Op, wantOp)
			}
			if e.Pid != pid || e.Tid != tid {
				t.Errorf("op %d: submitter %d/%d, want %d/%d", o.id, e.Pid, e.Tid, pid, tid)
			}
			if e.Offset < phys || e.Offset+int64(e.Size) > phys+o.size {
				t.Errorf("op %d: bytes [%d,%d) outside the file's [%d,%d)", o.id, e.Offset, e.Offset+int64(e.Size), phys, phys+o.size)
			}
			if e.Offset != int64(e.Sector)*512 {
				t.Errorf("op %d: offset %d, sector %d", o.id, e.Offset, e.Sector)
			}
			if e.Duration <= 0 || e.Wait < 0 || e.Wait > e.Duration {
				t.Errorf("op %d: duration %d, wait %d", o.id, e.Duration, e.Wait)
			}
			if e.Flags&event.FlagDirect == 0 {
				t.Errorf("op %d: no FlagDirect: %s", o.id, e.Flags)
			}
			if e.Status != event.StatusOK || e.Bytes != int64(e.Size) {
				t.Errorf("op %d: status %s, bytes %d", o.id, e.Status, e.Bytes)
			}
			if IDKind(e.ID) != KindBlock || e.Request == 0 {
				t.Errorf("op %d: ID %#x, request %#x", o.id, e.ID, e.Request)
			}
			if e.Comm == "" {
				t.Errorf("op %d: no comm", o.id)
			}
		}
		if bytes != uint64(o.size) {
			t.Errorf("op %d: block events carry %d bytes, the syscall moved %d; stats %+v", o.id, bytes, o.size, r.t.Stats())
		}
		if n == 0 || n != o.caused.NrBios || o.caused.BioBytes != uint64(o.size) {
			t.Errorf("op %d: %d block events; cur_syscall counted %d bios, %d bytes", o.id, n, o.caused.NrBios, o.caused.BioBytes)
		}
	}
	// Every bio of the ops completes under the tracer. The file system's
	// own I/O queued before the tracer started (a journal checkpoint:
	// metadata writes and a flush, seen under load) legitimately shows as
	// "no-start"; it is not the ops'.
	for i := range evs {
		e := &evs[i]
		if e.Flags&event.FlagNoCompletion != 0 {
			t.Errorf("unpaired: %s", describe(e))
			continue
		}
		if e.Flags&event.FlagNoStart == 0 {
			continue
		}
		for _, o := range ops {
			phys, _ := physical(t, fd, o.off, o.size)
			if e.Offset < phys+o.size && e.Offset+int64(e.Size) > phys {
				t.Errorf("op %d: a bio without its queue: %s", o.id, describe(e))
			}
		}
		if e.Cause != 0 {
			t.Errorf("a bio without its queue has a cause: %s", describe(e))
		}
	}
	found := false
	for _, f := range r.t.Facts() {
		if f.Kind == event.FactDevice && f.Dev == loop.dev {
			found = f.Name == loop.name && f.Detail == loop.name
		}
	}
	if !found {
		t.Errorf("no device fact %s=%s in %+v", loop.dev, loop.name, r.t.Facts())
	}
}

// TestPageCache: bios caused by fsync carry the file's data; after the
// file leaves the page cache, one pass of reads goes to disk (the misses
// are attributed to the read calls that caused them), a second pass is
// served from the cache (no bio at all).
func TestPageCache(t *testing.T) {
	loop := newLoop(t, 64<<20, true)
	path := filepath.Join(loop.mount, "data")
	const size = 4 << 20
	const chunk = 64 << 10
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	ino := st.Ino

	r := startTracer(t, Options{})
	cm := causeMap{r.t}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := uint32(unix.Gettid())

	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i)
	}
	for off := 0; off < size; off += chunk {
		if _, err := unix.Pwrite(fd, buf, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	const fsyncID = 201
	cm.enter(t, tid, fsyncID)
	if err := unix.Fsync(fd); err != nil {
		t.Fatal(err)
	}
	fsyncCaused := cm.exit(t, tid)

	// Evict the file's pages (not the whole machine's cache) and check.
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if n := resident(t, fd, size); n != 0 {
		t.Fatalf("%d pages still resident after FADV_DONTNEED", n)
	}

	type read struct {
		id     uint64
		caused blockioSyscallCause
	}
	pass := func(base uint64) []read {
		var rs []read
		for i, off := 0, 0; off < size; i, off = i+1, off+chunk {
			id := base + uint64(i)
			cm.enter(t, tid, id)
			n, err := unix.Pread(fd, buf, int64(off))
			c := cm.exit(t, tid)
			if err != nil || n != chunk {
				t.Fatalf("pread at %d: %d, %v", off, n, err)
			}
			rs = append(rs, read{id, c})
		}
		return rs
	}
	cold := pass(1000)
	warm := pass(2000)
	evs := onDev(r.stop(t), loop.dev)

	byCause := map[uint64][]*event.Event{}
	for i := range evs {
		byCause[evs[i].Cause] = append(byCause[evs[i].Cause], &evs[i])
	}

	// fsync wrote the file's data, queued by this thread.
	var fsyncData uint64
	for _, e := range byCause[SyscallID(fsyncID)] {
		if e.Tid != tid {
			t.Errorf("fsync bio submitted by %d, want %d: %s", e.Tid, tid, describe(e))
		}
		if e.Inode == ino && e.Op == event.OpBlockWrite {
			fsyncData += e.Size
		}
	}
	if fsyncData != size {
		t.Errorf("fsync caused %d bytes of writes to inode %d, want %d", fsyncData, ino, size)
	}
	if fsyncCaused.NrBios != uint32(len(byCause[SyscallID(fsyncID)])) {
		t.Errorf("fsync: cur_syscall counted %d bios, %d block events carry its ID", fsyncCaused.NrBios, len(byCause[SyscallID(fsyncID)]))
	}

	// Cold pass: the whole file came from disk, once, through the reads.
	var diskBytes, misses, causedBytes uint64
	for _, rd := range cold {
		var b uint64
		for _, e := range byCause[SyscallID(rd.id)] {
			if e.Op != event.OpBlockRead || e.Tid != tid || e.Inode != ino {
				t.Errorf("read %d caused %s", rd.id, describe(e))
			}
			b += e.Size
		}
		if uint32(len(byCause[SyscallID(rd.id)])) != rd.caused.NrBios || b != rd.caused.BioBytes {
			t.Errorf("read %d: %d events, %d bytes; cur_syscall counted %d bios, %d bytes", rd.id, len(byCause[SyscallID(rd.id)]), b, rd.caused.NrBios, rd.caused.BioBytes)
		}
		if rd.caused.NrBios > 0 {
			misses++
		}
		diskBytes += b
		causedBytes += rd.caused.BioBytes
	}
	if diskBytes != size {
		t.Errorf("cold pass: %d bytes read from disk, want the file's %d", diskBytes, size)
	}
	if misses == 0 || cold[0].caused.NrBios == 0 {
		t.Errorf("cold pass: %d reads went to disk (first: %d bios)", misses, cold[0].caused.NrBios)
	}
	t.Logf("cold pass: %d of %d reads went to disk (readahead served the rest), %d bytes from disk", misses, len(cold), diskBytes)

	// Warm pass: every read a cache hit.
	for _, rd := range warm {
		if rd.caused.NrBios != 0 || len(byCause[SyscallID(rd.id)]) != 0 {
			t.Errorf("warm read %d: %d bios, %d block events", rd.id, rd.caused.NrBios, len(byCause[SyscallID(rd.id)]))
		}
	}
}

// resident counts the pages of fd's first size bytes in the page cache.
func resident(t *testing.T, fd int, size int) int {
	t.Helper()
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (size+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestSplitsAndMerges: large reads the kernel splits (a small
// max_sectors_kb) and buffered reads it merges (readahead) are accounted
// byte for byte: the block events add up to what the device's own
// statistics say it transferred, and no bio is left unpaired.
func TestSplitsAndMerges(t *testing.T) {
	loop := newLoop(t, 64<<20, false)
	loop.setQueue(t, "max_sectors_kb", "64")

	r := startTracer(t, Options{})
	rd0, wr0 := loop.sysfsStat(t)

	fd, err := unix.Open(loop.path, unix.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	big := alignedBuf(1 << 20)
	for off := int64(0); off < 8<<20; off += 1 << 20 {
		if _, err := unix.Pread(fd, big, off); err != nil {
			t.Fatal(err)
		}
	}
	for off := int64(16 << 20); off < 18<<20; off += 1 << 20 {
		if _, err := unix.Pwrite(fd, big, off); err != nil {
			t.Fatal(err)
		}
	}
	unix.Close(fd)

	// Buffered sequential reads: readahead builds requests of merged bios.
	bfd, err := unix.Open(loop.path, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Fadvise(bfd, 0, 0, unix.FADV_DONTNEED)
	small := make([]byte, 128<<10)
	for off := int64(32 << 20); off < 40<<20; off += int64(len(small)) {
		if _, err := unix.Pread(bfd, small, off); err != nil {
			t.Fatal(err)
		}
	}
	unix.Close(bfd)

	rd1, wr1 := loop.sysfsStat(t)
	evs := onDev(r.stop(t), loop.dev)
	stats := r.t.Stats()

	var rdBytes, wrBytes uint64
	var reads, writes int
	for i := range evs {
		e := &evs[i]
		if e.Flags&(event.FlagNoStart|event.FlagNoCompletion) != 0 {
			t.Errorf("unpaired: %s", describe(e))
		}
		switch e.Op {
		case event.OpBlockRead:
			rdBytes += e.Size
			reads++
		case event.OpBlockWrite:
			wrBytes += e.Size
			writes++
		}
		if e.Size > 64<<10 {
			t.Errorf("bio of %d bytes above max_sectors_kb=64: %s", e.Size, describe(e))
		}
	}
	if want := (rd1 - rd0) * 512; rdBytes != want {
		t.Errorf("block events read %d bytes, /sys/block/%s/stat says %d", rdBytes, loop.name, want)
	}
	if want := (wr1 - wr0) * 512; wrBytes != want {
		t.Errorf("block events wrote %d bytes, /sys/block/%s/stat says %d", wrBytes, loop.name, want)
	}
	if rdBytes < 16<<20 || wrBytes != 2<<20 {
		t.Errorf("read %d bytes, wrote %d; want at least 16 MiB and exactly 2 MiB", rdBytes, wrBytes)
	}
	if n := stats.Get(event.CountInfo, StatSplit); n < 8*15 {
		t.Errorf("%d splits, want at least %d (each 1 MiB direct read split into 64 KiB bios)", n, 8*15)
	}
	t.Logf("%d read bios (%d bytes), %d write bios (%d bytes); splits %d, merges %d",
		reads, rdBytes, writes, wrBytes, stats.Get(event.CountInfo, StatSplit), stats.Get(event.CountInfo, StatMerge))
	for _, c := range stats.Problems() {
		t.Logf("problem counter (whole system): %s = %d", c.Name, c.Value)
	}
}

// TestPidFilter: with the syscall side's pid filter, only bios of traced
// processes are kept, plus the writeback (by kernel threads) of files
// they dirtied.
func TestPidFilter(t *testing.T) {
	for _, traced := range []bool{true, false} {
		name := "traced"
		if !traced {
			name = "other"
		}
		t.Run(name, func(t *testing.T) {
			loop := newLoop(t, 64<<20, true)
			path := filepath.Join(loop.mount, "data")
			if err := os.WriteFile(path, make([]byte, 64<<10), 0o644); err != nil {
				t.Fatal(err)
			}
			filter, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer filter.Close()
			pid := uint32(os.Getpid())
			if !traced {
				pid = 1 // someone else
			}
			if err := filter.Put(pid, uint8(1)); err != nil {
				t.Fatal(err)
			}
			r := startTracer(t, Options{PidFilter: filter})

			// Direct read by this process; buffered write flushed by the
			// flusher threads (syncfs hands the work to a kworker).
			fd, err := unix.Open(path, unix.O_RDWR|unix.O_DIRECT, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := unix.Pread(fd, alignedBuf(4096), 0); err != nil {
				t.Fatal(err)
			}
			unix.Close(fd)
			if err := os.WriteFile(path+"2", make([]byte, 256<<10), 0o644); err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			if err := unix.Stat(path+"2", &st); err != nil {
				t.Fatal(err)
			}
			dfd, err := unix.Open(loop.mount, unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Syncfs(dfd); err != nil {
				t.Fatal(err)
			}
			unix.Close(dfd)
			evs := onDev(r.stop(t), loop.dev)
			stats := r.t.Stats()

			var direct, wbBytes uint64
			for i := range evs {
				e := &evs[i]
				t.Logf("%s", describe(e))
				switch {
				case e.Flags&event.FlagDirect != 0:
					direct += e.Size
				case e.Inode == st.Ino && e.Flags&event.FlagWriteback != 0:
					wbBytes += e.Size
				}
			}
			if traced {
				if direct != 4096 || wbBytes != 256<<10 {
					t.Errorf("traced: %d direct bytes (want 4096), %d writeback bytes of the file it dirtied (want %d)", direct, wbBytes, 256<<10)
				}
			} else {
				if len(evs) != 0 {
					t.Errorf("untraced process: %d block events kept", len(evs))
				}
				if stats.Get(event.CountInfo, StatFiltered) == 0 {
					t.Error("no bio counted as filtered")
				}
			}
			if n := stats.Total(event.CountUnpaired); n != 0 {
				t.Errorf("pid filter on, yet %d unpaired: %+v", n, stats.Problems())
			}
		})
	}
}

// TestKernelLayout: the opf encoding read from this kernel's BTF.
func TestKernelLayout(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	k, err := kernelFacts(nil, func() (*btf.Spec, error) { return spec, nil })
	if err != nil {
		t.Fatal(err)
	}
	if l := k.layout; l.Read != 0 || l.Write != 1 || l.OpMask != 0xff || l.Sync == 0 || l.Preflush == 0 || l.Sync == l.Preflush {
		t.Errorf("layout %+v", l)
	}
	if k.pinned >= 16 {
		t.Logf("kernel without BIO_PAGE_PINNED: direct I/O not flagged")
	}
}

// TestKernelLayoutScan: the raw scan of the kernel's BTF finds what
// decoding its types finds.
func TestKernelLayoutScan(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	raw, err := os.ReadFile(vmlinuxBTF)
	if err != nil {
		t.Fatal(err)
	}
	var l OpfLayout
	var pinned uint32
	want := map[string]bool{}
	for n := range layoutFields(&l, &pinned) {
		want[n] = true
	}
	start := time.Now()
	rs, err := rawbtf.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rs.EnumValues(want)
	scan := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	dec, err := decodedEnums(spec, want)
	t.Logf("raw scan %v, decoded %v", scan, time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(want)-2 || !reflect.DeepEqual(got, dec) {
		t.Errorf("scan %v, decoded %v", got, dec)
	}
}

// TestInFlightMapsPreallocated: the map of bios in flight and the
// requests' are plain hash maps, preallocated (preallocatePlain says
// why), or the object's LRU maps when asked (inFlightLRU).
func TestInFlightMapsPreallocated(t *testing.T) {
	for _, c := range []struct {
		lru  bool
		want ebpf.MapType
	}{{false, ebpf.Hash}, {true, ebpf.LRUHash}} {
		spec, err := loadBlockio()
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{MaxInFlight: DefaultMaxInFlight, BufferSize: DefaultBufferSize, inFlightLRU: c.lru}
		if err := configure(spec, &opts, kernelInfo{layout: DefaultOpfLayout()}); err != nil {
			t.Fatal(err)
		}
		for _, name := range inFlightMaps {
			m := spec.Maps[name]
			if m.Type != c.want || m.Flags&unix.BPF_F_NO_PREALLOC != 0 {
				t.Errorf("LRU asked %v: map %s is a %v with flags %#x, want a %v, preallocated", c.lru, name, m.Type, m.Flags, c.want)
			}
		}
		if n := spec.Maps["bios"].MaxEntries; n != DefaultMaxInFlight {
			t.Errorf("bios has %d entries, want %d", n, DefaultMaxInFlight)
		}
		if !slices.Contains(inFlightMaps, "rqs") || !slices.Contains(inFlightMaps, "bios") {
			t.Errorf("inFlightMaps = %v, want bios and rqs", inFlightMaps)
		}
	}
}

// TestDirtyInodesOnlyFiltered: the map of inodes traced processes dirtied,
// read only with the pid filter, has one entry without it.
func TestDirtyInodesOnlyFiltered(t *testing.T) {
	spec, err := loadBlockio()
	if err != nil {
		t.Fatal(err)
	}
	full := spec.Maps["dirty_inodes"].MaxEntries
	for _, filtered := range []bool{false, true} {
		spec, err := loadBlockio()
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{MaxInFlight: DefaultMaxInFlight, BufferSize: DefaultBufferSize}
		if filtered {
			opts.PidFilter = &ebpf.Map{}
		}
		if err := configure(spec, &opts, kernelInfo{layout: DefaultOpfLayout()}); err != nil {
			t.Fatal(err)
		}
		want := uint32(1)
		if filtered {
			want = full
		}
		if n := spec.Maps["dirty_inodes"].MaxEntries; n != want {
			t.Errorf("filtered %v: dirty_inodes has %d entries, want %d", filtered, n, want)
		}
	}
}

// TestInodeIOOnlyShared: the page-cache reads in flight per inode, read by
// the system-call programs only, take one entry when that side does not
// share its map (block I/O traced alone).
func TestInodeIOOnlyShared(t *testing.T) {
	spec, err := loadBlockio()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{MaxInFlight: DefaultMaxInFlight, BufferSize: DefaultBufferSize}
	if err := configure(spec, &opts, kernelInfo{layout: DefaultOpfLayout()}); err != nil {
		t.Fatal(err)
	}
	if n := spec.Maps["inode_io"].MaxEntries; n != 1 {
		t.Errorf("inode_io has %d entries without the system-call side's map, want 1", n)
	}
}
