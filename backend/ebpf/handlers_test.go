package ebpf

import "testing"

// feeder returns a function handing records to tr, failing t on an error.
func feeder(t *testing.T, tr *tracker) func(b []byte) {
	return func(b []byte) {
		t.Helper()
		if err := tr.handle(b); err != nil {
			t.Fatal(err)
		}
	}
}

// pathTracker is a tracker whose process 42 works in /data and has fd 5
// open on the directory /data/dir.
func pathTracker(t *testing.T) (*tracker, *memSink, func(b []byte)) {
	t.Helper()
	s := &memSink{}
	tr := newTestTracker(s)
	feed := feeder(t, tr)
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

// TestDescriptorsWithoutAPath: the calls that make a descriptor with no
// path name it as /proc/PID/fd does, with its close-on-exec flag from
// the row (pidfd_open: always); signalfd on an existing descriptor
// changes it and makes none: its name and flag stay.
func TestDescriptorsWithoutAPath(t *testing.T) {
	s := &memSink{}
	feed := feeder(t, newTestTracker(s))
	const pid, sfdCloexec = 44, 0o2000000
	feed(forkRecord(1500, 1, pid, 1400, 0, "sh"))
	feed(sysRecord(sc("pidfd_open"), 1, 2000, 10, pid, pid, 5, [6]uint64{1, 0}, "app"))
	feed(sysRecord(sc("signalfd4"), 2, 2100, 10, pid, pid, 6, [6]uint64{^uint64(0), 0xbeef, 8, 0}, "app"))
	feed(sysRecord(sc("signalfd4"), 3, 2200, 10, pid, pid, 6, [6]uint64{6, 0xbeef, 8, sfdCloexec}, "app"))
	feed(sysRecord(sc("timerfd_create"), 4, 2300, 10, pid, pid, 7, [6]uint64{1, sfdCloexec}, "app"))
	feed(sysRecord(sc("epoll_create1"), 5, 2400, 10, pid, pid, 8, [6]uint64{0}, "app"))
	feed(sysRecord(sc("inotify_init1"), 6, 2500, 10, pid, pid, 9, [6]uint64{0}, "app"))
	feed(sysRecord(sc("perf_event_open"), 7, 2600, 10, pid, pid, 10, [6]uint64{0xcafe, 0, ^uint64(0), ^uint64(0), 0}, "app"))
	feed(sysRecord(sc("read"), 8, 2700, 10, pid, pid, 8, [6]uint64{7, 0, 8}, "app"))
	// The kernel's flags of the new file, when the tracer read it.
	rec := sysRecord(sc("userfaultfd"), 9, 2800, 10, pid, pid, 11, [6]uint64{sfdCloexec | 1}, "app")
	le.PutUint32(rec[124:], 0o4000) // f_flags: O_RDONLY|O_NONBLOCK
	le.PutUint32(rec[132:], sfHaveFile)
	feed(rec)
	want := []struct {
		fd   int32
		path string
	}{{5, "anon_inode:[pidfd]"}, {6, "anon_inode:[signalfd]"}, {6, "anon_inode:[signalfd]"}, {7, "anon_inode:[timerfd]"},
		{8, "anon_inode:[eventpoll]"}, {9, "anon_inode:inotify"}, {10, "anon_inode:[perf_event]"}, {7, "anon_inode:[timerfd]"},
		{11, "anon_inode:[userfaultfd]"}}
	if len(s.events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(s.events), len(want), s.events)
	}
	for i, w := range want {
		if e := s.events[i]; e.FD != w.fd || e.Path != w.path {
			t.Errorf("event %d (%s): fd %d %q, want %d %q", i, e.Native, e.FD, e.Path, w.fd, w.path)
		}
	}
	if f := s.events[8].OpenFlags; f != 0o4000|sfdCloexec {
		t.Errorf("userfaultfd: open flags %#o, want the file's O_NONBLOCK and O_CLOEXEC (%#o)", f, 0o4000|sfdCloexec)
	}
	if f := s.events[3].OpenFlags; f != 0 {
		t.Errorf("timerfd_create, its file not read: open flags %#o, want 0", f)
	}
	// After an exec, the close-on-exec descriptors are gone: pidfd_open's
	// (always) and timerfd_create's (TFD_CLOEXEC); the signalfd keeps its
	// flag from signalfd4(-1, …, 0), not the ignored flags of the change.
	feed(execRecord(3000, pid, "/bin/other", "other\x00", "other"))
	n := len(s.events)
	for i, fd := range []uint64{5, 6, 7, 8} {
		feed(sysRecord(sc("read"), uint64(10+i), 3100+uint64(i), 10, pid, pid, -11, [6]uint64{fd, 0, 8}, "other"))
	}
	got := s.events[n:]
	want2 := []string{"", "anon_inode:[signalfd]", "", "anon_inode:[eventpoll]"}
	if len(got) != len(want2) {
		t.Fatalf("%d events after exec, want %d: %+v", len(got), len(want2), got)
	}
	for i, w := range want2 {
		if got[i].Path != w {
			t.Errorf("read of fd %d after exec: %+v, want path %q", 5+i, got[i], w)
		}
	}
}
