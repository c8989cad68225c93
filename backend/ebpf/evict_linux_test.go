package ebpf

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend/ebpf/ftrace"
	"github.com/iotrace/iotrace/internal/testenv"
)

// evictRange is one folio leaving the page cache: the file and its bytes.
type evictRange struct {
	dev      uint32
	ino, off uint64
	bytes    uint64
}

// TestEvictRecordsMatchTracepoint: files in the page cache leave it: a
// one-page and a 64 KiB file on the test directory's file system (ext4
// here: single pages), evicted with POSIX_FADV_DONTNEED, and a 4 MiB file
// on a tmpfs mounted huge=always (large folios), truncated. The pc_evict
// program's PC_EVICT records are exactly the kernel's own
// filemap:mm_filemap_delete_from_page_cache events (read from a tracefs
// instance: i_ino, s_dev, index, order) for the same folios; their inode
// and device are stat's, and their ranges tile each file's pages with no
// gap and no overlap; the tmpfs file's are larger than a page.
func TestEvictRecordsMatchTracepoint(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs, mounts a tmpfs and creates a tracefs instance")
	page := uint64(os.Getpagesize())
	dir := t.TempDir()
	huge := t.TempDir()
	if err := unix.Mount("tmpfs", huge, "tmpfs", 0, "huge=always,size=16m"); err != nil {
		t.Fatalf("mount a tmpfs with huge=always: %v", err)
	}
	defer unix.Unmount(huge, unix.MNT_DETACH)
	type fileID struct {
		dev uint32
		ino uint64
	}
	type evictCase struct {
		path      string
		size      uint64
		truncate  bool // else POSIX_FADV_DONTNEED
		wantLarge bool
	}
	cases := map[fileID]evictCase{}
	for _, c := range []evictCase{
		{path: filepath.Join(dir, "page"), size: page},
		{path: filepath.Join(dir, "pages"), size: 64 << 10},
		{path: filepath.Join(huge, "folios"), size: 4 << 20, truncate: true, wantLarge: true},
	} {
		data := make([]byte, c.size)
		rand.Read(data)
		if err := os.WriteFile(c.path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		// Written back and dropped, then read: the cache holds the
		// folios a read brings in (tmpfs keeps the written ones).
		fh.Sync()
		unix.Fadvise(int(fh.Fd()), 0, 0, unix.FADV_DONTNEED)
		if _, err := fh.Read(make([]byte, c.size)); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(fh.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		cases[fileID{kernelDevOf(st.Dev), st.Ino}] = c
	}

	ac := attachConfig{iowait: true}
	pr, err := loadProbes(loadConfig{selfTgid: uint32(os.Getpid()), ringSize: 1 << 20, wakeupBytes: 1, attach: ac})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.close()
	if !pr.tp.evict {
		t.Fatal("this kernel's mm_filemap_delete_from_page_cache has no layout the program reads")
	}
	for id := range cases {
		if err := pr.objs.InodeIo.Put(iotraceInodeIoKey{Ino: id.ino, Dev: id.dev}, iotraceInodeIo{}); err != nil {
			t.Fatal(err)
		}
	}
	in, err := ftrace.Open(ftrace.Options{Name: "iotrace-" + strconv.Itoa(os.Getpid()) + "-evict", Events: []string{"filemap/mm_filemap_delete_from_page_cache"}, Clock: "boot", BufferKB: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := pr.attach(ac); err != nil {
		t.Fatal(err)
	}
	defer pr.detach()

	for _, c := range cases {
		if c.truncate {
			if err := os.Truncate(c.path, 0); err != nil {
				t.Fatal(err)
			}
			continue
		}
		fh, err := os.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Fadvise(int(fh.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}

	var got []evictRange
	pr.rd.SetDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		rec, err := pr.rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.RawSample) < 2 || rec.RawSample[0] != recPageCache || rec.RawSample[1] != pcEvict {
			continue
		}
		var r pcRec
		if err := r.decode(rec.RawSample); err != nil {
			t.Fatal(err)
		}
		got = append(got, evictRange{dev: r.Dev, ino: r.Ino, off: r.Off, bytes: uint64(r.Bytes)})
	}
	var want []evictRange
	var fmtEvict *ftrace.Format
	for _, f := range in.Formats() {
		fmtEvict = f
	}
	fields := map[string]ftrace.Field{}
	for _, name := range []string{"common_type", "i_ino", "s_dev", "index", "order"} {
		fl, ok := fmtEvict.Field(name)
		if !ok {
			t.Skipf("this kernel's %s has no %s field to compare with", fmtEvict.Name, name)
		}
		fields[name] = fl
	}
	if _, err := in.Read(func(cpu int, ts uint64, rec []byte) {
		v := map[string]uint64{}
		for name, fl := range fields {
			v[name], _ = fl.Uint(rec)
		}
		if uint16(v["common_type"]) != fmtEvict.ID {
			return
		}
		if _, ok := cases[fileID{uint32(v["s_dev"]), v["i_ino"]}]; !ok {
			return
		}
		want = append(want, evictRange{dev: uint32(v["s_dev"]), ino: v["i_ino"], off: v["index"] * page, bytes: page << v["order"]})
	}); err != nil {
		t.Fatal(err)
	}
	if d := in.Dropped(); d != 0 {
		t.Fatalf("the tracefs instance dropped %d events", d)
	}
	less := func(s []evictRange) func(i, j int) bool {
		return func(i, j int) bool {
			if s[i].ino != s[j].ino {
				return s[i].ino < s[j].ino
			}
			return s[i].off < s[j].off
		}
	}
	sort.Slice(got, less(got))
	sort.Slice(want, less(want))
	if len(got) != len(want) {
		t.Errorf("%d eviction records, the tracepoint saw %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("eviction %d: record %+v, tracepoint %+v", i, got[i], want[i])
		}
	}

	// Against stat: each file's records tile its pages.
	for id, c := range cases {
		name := filepath.Base(c.path)
		var next uint64
		sizes := map[uint64]int{}
		for _, r := range got {
			if r.ino != id.ino || r.dev != id.dev {
				continue
			}
			if r.off != next {
				t.Errorf("%s: eviction at offset %d, want %d (gap or overlap)", name, r.off, next)
			}
			next = r.off + r.bytes
			sizes[r.bytes]++
		}
		if next != (c.size+page-1)/page*page {
			t.Errorf("%s: evictions end at %d, want %d", name, next, c.size)
		}
		large := false
		for b := range sizes {
			large = large || b > page
		}
		if large != c.wantLarge {
			t.Errorf("%s: folios evicted by size %v, want larger than a page: %v", name, sizes, c.wantLarge)
		}
		t.Logf("%s: folios evicted by size: %v", name, sizes)
	}
}
