package ebpf

import "testing"

// pathTracker is a tracker whose process 42 works in /data and has fd 5
// open on the directory /data/dir.
func pathTracker(t *testing.T) (*tracker, *memSink, func(b []byte)) {
	t.Helper()
	s := &memSink{}
	tr := newTestTracker(s)
	feed := func(b []byte) {
		t.Helper()
		if err := tr.handle(b); err != nil {
			t.Fatal(err)
		}
	}
	const pid = 42
	feed(forkRecord(1500, 1, pid, 1400, 0, "sh"))
	feed(pathRecord(sc("chdir"), 1, pid, 0, "/data"))
	feed(sysRecord(sc("chdir"), 1, 2000, 10, pid, pid, 0, [6]uint64{0xdead}, "app"))
	feed(pathRecord(sc("openat"), 2, pid, 0, "dir"))
	feed(sysRecord(sc("openat"), 2, 2100, 10, pid, pid, 5, [6]uint64{uint64(0xffffff9c), 0xbeef, 0, 0}, "app"))
	return tr, s, feed
}

// TestEmptyPathAtCwd: AT_EMPTY_PATH with an empty path and AT_FDCWD acts
// on the working directory (the kernel's reading); the event once showed
// fd -100 and no path.
func TestEmptyPathAtCwd(t *testing.T) {
	_, s, feed := pathTracker(t)
	const pid = 42
	feed(pathRecord(sc("statx"), 3, pid, 0, ""))
	feed(sysRecord(sc("statx"), 3, 3000, 10, pid, pid, 0, [6]uint64{uint64(0xffffff9c), 0xbeef, atEmptyPath, 0x7ff, 0xcafe}, "app"))
	feed(pathRecord(sc("statx"), 4, pid, 0, ""))
	feed(sysRecord(sc("statx"), 4, 3100, 10, pid, pid, 0, [6]uint64{5, 0xbeef, atEmptyPath, 0x7ff, 0xcafe}, "app"))
	cwd, dir := s.events[len(s.events)-2], s.events[len(s.events)-1]
	if cwd.Path != "/data" || cwd.FD != -1 || cwd.Info != atEmptyPath {
		t.Errorf("statx(AT_FDCWD, \"\", AT_EMPTY_PATH): path %q fd %d info %#x, want the cwd /data", cwd.Path, cwd.FD, cwd.Info)
	}
	if dir.Path != "/data/dir" || dir.FD != 5 {
		t.Errorf("statx(5, \"\", AT_EMPTY_PATH): path %q fd %d, want fd 5's /data/dir", dir.Path, dir.FD)
	}
}

// TestNullPath: a NULL path acts on the directory descriptor only where
// the kernel says so (utimensat); faccessat(fd, NULL) fails with EFAULT
// and names no file (it once named the directory).
func TestNullPath(t *testing.T) {
	_, s, feed := pathTracker(t)
	const pid = 42
	feed(sysRecord(sc("utimensat"), 3, 3000, 10, pid, pid, 0, [6]uint64{5, 0, 0, 0}, "app"))
	feed(sysRecord(sc("faccessat"), 4, 3100, 10, pid, pid, -14, [6]uint64{5, 0, 0}, "app"))
	ut, fa := s.events[len(s.events)-2], s.events[len(s.events)-1]
	if ut.Path != "/data/dir" || ut.FD != 5 {
		t.Errorf("utimensat(5, NULL): path %q fd %d, want fd 5's /data/dir", ut.Path, ut.FD)
	}
	if fa.Path != "" || fa.FD != -1 || fa.Code != 14 {
		t.Errorf("faccessat(5, NULL) = -EFAULT: path %q fd %d %v, want no file", fa.Path, fa.FD, fa.Status)
	}
}

// TestMemfdNameIsNoPath: memfd_create's name is not a path: it is not
// resolved against the working directory (which counted a relative path
// with an unknown base directory when the cwd was not known).
func TestMemfdNameIsNoPath(t *testing.T) {
	s := &memSink{}
	tr := newTestTracker(s)
	const pid = 43
	if err := tr.handle(pathRecord(sc("memfd_create"), 1, pid, 0, "buf")); err != nil {
		t.Fatal(err)
	}
	if err := tr.handle(sysRecord(sc("memfd_create"), 1, 2000, 10, pid, pid, 4, [6]uint64{0xbeef, 0}, "app")); err != nil {
		t.Fatal(err)
	}
	if len(s.events) != 1 || s.events[0].Path != "memfd:buf" || s.events[0].FD != 4 {
		t.Fatalf("memfd_create: %+v", s.events)
	}
	if tr.cwdUnknown != 0 {
		t.Errorf("memfd_create's name counted as %d relative paths with an unknown base directory", tr.cwdUnknown)
	}
}
