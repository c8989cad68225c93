package ebpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// Workload "meta": the metadata, link, xattr, lock, advice, ioctl and
// descriptor-creating calls, in $WL_DIR. Expectations in TestMetaSyscalls.
func workloadMeta() {
	dir := os.Getenv("WL_DIR")
	runtime.LockOSThread()
	dfd := mustFD(unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY, 0))
	must(unix.Dup2(dfd, 70))
	f := mustFD(unix.Open(filepath.Join(dir, "f.txt"), unix.O_CREAT|unix.O_RDWR, 0o644))
	must(unix.Dup2(f, 71))
	say("ready")
	waitLine()

	must(unix.Symlinkat("f.txt", 70, "lnk"))
	_, err := unix.Readlinkat(70, "lnk", make([]byte, 64))
	must(err)
	must(unix.Faccessat(70, "f.txt", unix.R_OK, 0))
	if err := unix.Faccessat(70, "missing", unix.F_OK, 0); err != unix.ENOENT {
		must(fmt.Errorf("faccessat missing: %v, want ENOENT", err))
	}
	must(unix.Fchmodat(70, "f.txt", 0o600, 0))
	must(unix.Fchmod(71, 0o640))
	must(unix.Fchownat(70, "f.txt", os.Getuid(), os.Getgid(), 0))
	must(unix.UtimesNanoAt(70, "f.txt", []unix.Timespec{{Sec: 1}, {Sec: 2}}, 0))
	must(unix.Linkat(70, "f.txt", 70, "hard", 0))
	must(unix.Mknodat(70, "fifo", unix.S_IFIFO|0o600, 0))
	must(unix.Fadvise(71, 0, 4096, unix.FADV_DONTNEED))
	_ = unix.Fsetxattr(71, "user.k", []byte("v"), 0) // tmpfs may refuse: the result is checked against errno
	_, _ = unix.Lgetxattr(filepath.Join(dir, "f.txt"), "user.k", make([]byte, 16))
	must(unix.Flock(71, unix.LOCK_EX))
	unix.Sync()
	_, err = unix.IoctlGetInt(71, 0x541b) // FIONREAD
	must(err)
	efd := mustFD(unix.Eventfd(0, unix.EFD_CLOEXEC))
	_, err = unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	must(err)
	mfd := mustFD(unix.MemfdCreate("iot", 0))
	_, err = unix.Write(mfd, []byte("abc"))
	must(err)
	sfd := mustFD(unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0))
	var st unix.Stat_t
	must(unix.Fstat(sfd, &st))
	sino := st.Ino
	var pfd [2]int
	must(unix.Pipe2(pfd[:], unix.O_CLOEXEC))
	_, err = unix.Write(pfd[1], []byte("hi"))
	must(err)
	must(unix.Fstat(pfd[0], &st))
	pino := st.Ino
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	must(err)
	_, err = unix.Write(sp[1], []byte("x"))
	must(err)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 100, Len: 50}
	must(unix.FcntlFlock(71, unix.F_OFD_SETLK, &lk))
	say(fmt.Sprintf("done %d %d %d %d %d %d %d %d", efd, mfd, sfd, sino, pfd[0], pfd[1], pino, sp[1]))
	waitLine()
}

func TestMetaSyscalls(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	wpid, sink, line, stop := traceWorkload(t, "meta", dir)
	var efd, mfd, sfd int32
	var sino, pino uint64
	var p0, p1, s1 int32
	if _, err := fmt.Sscanf(line, "done %d %d %d %d %d %d %d %d", &efd, &mfd, &sfd, &sino, &p0, &p1, &pino, &s1); err != nil {
		t.Fatalf("workload: %q: %v", line, err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	evs := sink.events
	w := byPid(wpid)
	p := func(n string) string { return filepath.Join(dir, n) }
	f := p("f.txt")
	byOp := func(o event.Op) evFilter { return func(e *event.Event) bool { return e.Op == o } }

	e := one(t, "symlinkat", evs, w, byNative("symlinkat"))
	if e.Op != event.OpLink || e.Path != p("lnk") || e.Path2 != "f.txt" || e.Status != event.StatusOK {
		t.Errorf("symlinkat: %v %q -> %q %v", e.Op, e.Path, e.Path2, e.Status)
	}
	e = one(t, "readlinkat", evs, w, byNative("readlinkat"))
	if e.Op != event.OpReadlink || e.Path != p("lnk") || e.Bytes != 5 || e.Size != 64 {
		t.Errorf("readlinkat: %v %q bytes %d size %d", e.Op, e.Path, e.Bytes, e.Size)
	}
	e = one(t, "faccessat", evs, w, byOp(event.OpAccess), byPath(f))
	if e.Info != unix.R_OK || e.Status != event.StatusOK {
		t.Errorf("faccessat: info %d status %v", e.Info, e.Status)
	}
	e = one(t, "faccessat missing", evs, w, byOp(event.OpAccess), byPath(p("missing")))
	if e.Status != event.StatusNotFound || e.Code != 2 {
		t.Errorf("faccessat missing: %v %d", e.Status, e.Code)
	}
	e = one(t, "fchmodat", evs, w, byNatives("fchmodat", "fchmodat2"))
	if e.Op != event.OpSetAttr || e.Path != f || e.Mode != 0o600 {
		t.Errorf("fchmodat: %v %q mode %o", e.Op, e.Path, e.Mode)
	}
	e = one(t, "fchmod", evs, w, byNative("fchmod"))
	if e.Op != event.OpSetAttr || e.Path != f || e.FD != 71 || e.Mode != 0o640 {
		t.Errorf("fchmod: %v %q fd %d mode %o", e.Op, e.Path, e.FD, e.Mode)
	}
	e = one(t, "fchownat", evs, w, byNative("fchownat"))
	if e.Op != event.OpSetAttr || e.Path != f || e.Status != event.StatusOK {
		t.Errorf("fchownat: %v %q %v", e.Op, e.Path, e.Status)
	}
	e = one(t, "utimensat", evs, w, byNative("utimensat"))
	if e.Op != event.OpSetAttr || e.Path != f {
		t.Errorf("utimensat: %v %q", e.Op, e.Path)
	}
	e = one(t, "linkat", evs, w, byNative("linkat"))
	if e.Op != event.OpLink || e.Path != p("hard") || e.Path2 != f {
		t.Errorf("linkat: %v %q -> %q", e.Op, e.Path, e.Path2)
	}
	e = one(t, "mknodat", evs, w, byNative("mknodat"))
	if e.Op != event.OpMknod || e.Path != p("fifo") || e.Mode != unix.S_IFIFO|0o600 {
		t.Errorf("mknodat: %v %q mode %o", e.Op, e.Path, e.Mode)
	}
	e = one(t, "fadvise64", evs, w, byOp(event.OpAdvise))
	if e.Path != f || e.FD != 71 || e.Offset != 0 || e.Size != 4096 || e.Info != unix.FADV_DONTNEED {
		t.Errorf("fadvise64: %+v", e)
	}
	e = one(t, "fsetxattr", evs, w, byNative("fsetxattr"))
	if e.Op != event.OpXattr || e.Path != f || e.FD != 71 || e.Note != "user.k" || e.Size != 1 {
		t.Errorf("fsetxattr: %v %q fd %d note %q size %d", e.Op, e.Path, e.FD, e.Note, e.Size)
	}
	e = one(t, "lgetxattr", evs, w, byNative("lgetxattr"))
	if e.Op != event.OpXattr || e.Path != f || e.Note != "user.k" || e.Size != 16 {
		t.Errorf("lgetxattr: %v %q note %q size %d", e.Op, e.Path, e.Note, e.Size)
	}
	e = one(t, "flock", evs, w, byNative("flock"))
	if e.Op != event.OpLock || e.Path != f || e.Info != unix.LOCK_EX || e.Status != event.StatusOK {
		t.Errorf("flock: %v %q info %d %v", e.Op, e.Path, e.Info, e.Status)
	}
	e = one(t, "sync", evs, w, byNative("sync"))
	if e.Op != event.OpFlush {
		t.Errorf("sync: op %v", e.Op)
	}
	e = one(t, "ioctl", evs, w, byNative("ioctl"), byFD(71))
	if e.Op != event.OpFSControl || e.Path != f || e.Info != 0x541b || e.Note != "FIONREAD" {
		t.Errorf("ioctl: %v %q info %#x note %q", e.Op, e.Path, e.Info, e.Note)
	}
	e = one(t, "eventfd2", evs, w, byNative("eventfd2"))
	if e.Op != event.OpOpen || e.FD != efd || e.Path != "anon_inode:[eventfd]" {
		t.Errorf("eventfd2: %v fd %d %q", e.Op, e.FD, e.Path)
	}
	e = one(t, "eventfd write", evs, w, byNative("write"), byFD(efd))
	if e.Path != "anon_inode:[eventfd]" {
		t.Errorf("eventfd write path %q", e.Path)
	}
	e = one(t, "memfd_create", evs, w, byNative("memfd_create"))
	if e.Op != event.OpOpen || e.FD != mfd || e.Path != "memfd:iot" {
		t.Errorf("memfd_create: %v fd %d %q", e.Op, e.FD, e.Path)
	}
	e = one(t, "memfd write", evs, w, byNative("write"), byFD(mfd))
	if e.Path != "memfd:iot" || e.Bytes != 3 {
		t.Errorf("memfd write: %q %d", e.Path, e.Bytes)
	}
	e = one(t, "socket", evs, w, byNative("socket"))
	if want := fmt.Sprintf("socket:[%d]", sino); e.Op != event.OpOpen || e.FD != sfd || e.Path != want || e.Inode != sino {
		t.Errorf("socket: %v fd %d %q inode %d, want %q", e.Op, e.FD, e.Path, e.Inode, want)
	}
	pipe := fmt.Sprintf("pipe:[%d]", pino)
	e = one(t, "pipe2", evs, w, byNative("pipe2"))
	if e.Op != event.OpOpen || e.FD != p0 || e.Info != uint32(p1) || e.Path != pipe || e.Path2 != pipe || e.Inode != pino {
		t.Errorf("pipe2: %v fd %d info %d %q %q inode %d, want %d %d %q", e.Op, e.FD, e.Info, e.Path, e.Path2, e.Inode, p0, p1, pipe)
	}
	e = one(t, "pipe write", evs, w, byNative("write"), byFD(p1))
	if e.Path != pipe || e.Bytes != 2 || e.Flags&event.FlagPathLate != 0 {
		t.Errorf("pipe write: %q %d %v", e.Path, e.Bytes, e.Flags)
	}
	e = one(t, "socketpair", evs, w, byNative("socketpair"))
	if e.Op != event.OpOpen || e.Info != uint32(s1) || !strings.HasPrefix(e.Path, "socket:[") || !strings.HasPrefix(e.Path2, "socket:[") || e.Path == e.Path2 {
		t.Errorf("socketpair: %v info %d %q %q", e.Op, e.Info, e.Path, e.Path2)
	}
	e = one(t, "socketpair write", evs, w, byNative("write"), byFD(s1))
	if !strings.HasPrefix(e.Path, "socket:[") || e.Flags&event.FlagPathLate != 0 {
		t.Errorf("socketpair write: %q %v", e.Path, e.Flags)
	}
	e = one(t, "fcntl lock", evs, w, byNative("fcntl"), byOp(event.OpLock))
	if e.FD != 71 || e.Path != f || e.Info != unix.F_OFD_SETLK || e.Offset != 100 || e.Size != 50 ||
		e.IOFlags != unix.F_WRLCK || e.Status != event.StatusOK {
		t.Errorf("fcntl lock: fd %d %q cmd %d offset %d size %d type %#x %v", e.FD, e.Path, e.Info, e.Offset, e.Size, e.IOFlags, e.Status)
	}
	for _, e := range find(evs, w) {
		if strings.HasPrefix(e.Native, "op(") || e.Op == event.OpUnknown {
			t.Errorf("event without op: %+v", e)
		}
	}
}

// metaPathCalls names, in order, the calls of workload "metapath" whose
// errno it reports (0 for success).
var metaPathCalls = []string{
	"truncate", "truncate missing", "statx", "statx missing", "statx empty path",
	"setxattr", "lsetxattr", "getxattr", "lgetxattr missing attr", "getxattr missing",
	"listxattr", "llistxattr missing", "removexattr", "lremovexattr missing attr",
	"fcntl F_DUPFD", "fcntl F_DUPFD_CLOEXEC", "dup3", "fcntl F_DUPFD bad", "dup3 bad",
}

// Workload "metapath": the path forms of truncate, statx and the xattr
// calls, and the dup forms fcntl(F_DUPFD*) and dup3 followed by a read on
// each new descriptor, in $WL_DIR. It reports each call's errno in the
// order of metaPathCalls, then the new descriptors and the bytes read
// through them. Expectations in TestMetaPathSyscalls.
func workloadMetaPath() {
	dir := os.Getenv("WL_DIR")
	runtime.LockOSThread()
	f := filepath.Join(dir, "f.txt")
	missing := filepath.Join(dir, "missing")
	must(os.WriteFile(f, []byte("0123456789abcdef"), 0o644))
	dfd := mustFD(unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY, 0))
	must(unix.Dup2(dfd, 70))
	fd := mustFD(unix.Open(f, unix.O_RDONLY, 0))
	must(unix.Dup2(fd, 71))
	say("ready")
	waitLine()

	var errs []string
	note := func(err error) {
		var n unix.Errno
		if err != nil && !errors.As(err, &n) {
			must(err)
		}
		errs = append(errs, fmt.Sprint(int(n)))
	}
	buf := make([]byte, 64)
	var stx unix.Statx_t
	note(unix.Truncate(f, 10))
	note(unix.Truncate(missing, 0))
	note(unix.Statx(unix.AT_FDCWD, f, 0, unix.STATX_BASIC_STATS, &stx))
	note(unix.Statx(70, "missing", 0, unix.STATX_BASIC_STATS, &stx))
	note(unix.Statx(71, "", unix.AT_EMPTY_PATH, unix.STATX_SIZE, &stx))
	note(unix.Setxattr(f, "user.a", []byte("vv"), 0))
	note(unix.Lsetxattr(f, "user.b", []byte("www"), unix.XATTR_CREATE))
	_, err := unix.Getxattr(f, "user.a", buf[:16])
	note(err)
	_, err = unix.Lgetxattr(f, "user.none", buf[:16])
	note(err)
	_, err = unix.Getxattr(missing, "user.a", buf[:16])
	note(err)
	_, err = unix.Listxattr(f, buf)
	note(err)
	_, err = unix.Llistxattr(missing, buf)
	note(err)
	note(unix.Removexattr(f, "user.a"))
	note(unix.Lremovexattr(f, "user.a"))
	d1, err := unix.FcntlInt(71, unix.F_DUPFD, 80)
	note(err)
	d2, err := unix.FcntlInt(71, unix.F_DUPFD_CLOEXEC, 90)
	note(err)
	note(unix.Dup3(71, 95, unix.O_CLOEXEC))
	_, err = unix.FcntlInt(200, unix.F_DUPFD, 80)
	note(err)
	note(unix.Dup3(200, 96, 0))
	n1, err := unix.Pread(d1, buf[:1], 0)
	must(err)
	n2, err := unix.Pread(d2, buf[:2], 0)
	must(err)
	n3, err := unix.Pread(95, buf[:3], 0)
	must(err)
	say(fmt.Sprintf("done %s %d %d %d %d %d", strings.Join(errs, " "), d1, d2, n1, n2, n3))
	waitLine()
}

// TestMetaPathSyscalls checks the op, path and result of the path forms of
// truncate, statx and the xattr calls, failed ones included, and that the
// descriptors made by fcntl(F_DUPFD, F_DUPFD_CLOEXEC) and dup3 carry the
// old descriptor's name.
func TestMetaPathSyscalls(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	wpid, sink, line, stop := traceWorkload(t, "metapath", dir)
	fields := strings.Fields(line)
	if len(fields) != 1+len(metaPathCalls)+5 || fields[0] != "done" {
		t.Fatalf("workload: %q", line)
	}
	errno := map[string]uint32{}
	for i, name := range metaPathCalls {
		n, err := strconv.Atoi(fields[1+i])
		if err != nil {
			t.Fatalf("workload: %q: %v", line, err)
		}
		errno[name] = uint32(n)
	}
	var nums [5]int32 // the two fcntl descriptors, the three reads' bytes
	for i := range nums {
		n, err := strconv.Atoi(fields[1+len(metaPathCalls)+i])
		if err != nil {
			t.Fatalf("workload: %q: %v", line, err)
		}
		nums[i] = int32(n)
	}
	time.Sleep(50 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, name := range []string{"truncate", "statx", "fcntl F_DUPFD", "fcntl F_DUPFD_CLOEXEC", "dup3"} {
		if errno[name] != 0 {
			t.Fatalf("%s failed in the workload: errno %d", name, errno[name])
		}
	}
	for _, name := range []string{"truncate missing", "statx missing", "getxattr missing", "llistxattr missing"} {
		if errno[name] != uint32(unix.ENOENT) {
			t.Fatalf("%s: errno %d in the workload, want ENOENT", name, errno[name])
		}
	}
	evs := find(sink.events, byPid(wpid))
	f := filepath.Join(dir, "f.txt")
	missing := filepath.Join(dir, "missing")
	// result checks the event's status and code against the errno the
	// workload got.
	result := func(what string, e event.Event) {
		t.Helper()
		if e.Code != errno[what] || e.Status != event.FromErrno(errno[what]) {
			t.Errorf("%s: status %v code %d, want errno %d", what, e.Status, e.Code, errno[what])
		}
	}
	calls := []struct {
		what, native string
		op           event.Op
		path, note   string
		fd           int32
	}{
		{"truncate", "truncate", event.OpSetInfo, f, "", -1},
		{"truncate missing", "truncate", event.OpSetInfo, missing, "", -1},
		{"statx", "statx", event.OpStat, f, "", -1},
		{"statx missing", "statx", event.OpStat, missing, "", -1},
		{"statx empty path", "statx", event.OpStat, f, "", 71},
		{"setxattr", "setxattr", event.OpXattr, f, "user.a", -1},
		{"lsetxattr", "lsetxattr", event.OpXattr, f, "user.b", -1},
		{"getxattr", "getxattr", event.OpXattr, f, "user.a", -1},
		{"lgetxattr missing attr", "lgetxattr", event.OpXattr, f, "user.none", -1},
		{"getxattr missing", "getxattr", event.OpXattr, missing, "user.a", -1},
		{"listxattr", "listxattr", event.OpXattr, f, "", -1},
		{"llistxattr missing", "llistxattr", event.OpXattr, missing, "", -1},
		{"removexattr", "removexattr", event.OpXattr, f, "user.a", -1},
		{"lremovexattr missing attr", "lremovexattr", event.OpXattr, f, "user.a", -1},
	}
	for _, c := range calls {
		ms := find(evs, byNative(c.native), byPath(c.path), func(e *event.Event) bool {
			return e.Note == c.note && e.FD == c.fd && e.Code == errno[c.what]
		})
		if len(ms) != 1 {
			t.Errorf("%s: %d events %s %q fd %d note %q errno %d, want 1", c.what, len(ms), c.native, c.path, c.fd, c.note, errno[c.what])
			continue
		}
		e := ms[0]
		if e.Op != c.op {
			t.Errorf("%s: op %v, want %v", c.what, e.Op, c.op)
		}
		result(c.what, e)
		switch c.what {
		case "truncate":
			if e.Size != 10 {
				t.Errorf("truncate: size %d, want 10", e.Size)
			}
		case "statx empty path":
			if e.Info != unix.AT_EMPTY_PATH {
				t.Errorf("statx empty path: info %#x", e.Info)
			}
		case "setxattr", "lsetxattr":
			if want := map[string]uint64{"setxattr": 2, "lsetxattr": 3}[c.what]; e.Size != want {
				t.Errorf("%s: size %d, want %d", c.what, e.Size, want)
			}
			if c.what == "lsetxattr" && e.Info != unix.XATTR_CREATE {
				t.Errorf("lsetxattr: info %d, want XATTR_CREATE", e.Info)
			}
		case "getxattr":
			if e.Size != 16 || (errno[c.what] == 0 && e.Bytes != 2) {
				t.Errorf("getxattr: size %d bytes %d, want 16 2", e.Size, e.Bytes)
			}
		case "listxattr":
			if e.Size != 64 || (errno[c.what] == 0 && e.Bytes <= 0) {
				t.Errorf("listxattr: size %d bytes %d", e.Size, e.Bytes)
			}
		}
	}

	// The dup forms: the old descriptor named, the new one in info, and a
	// read on the new one names the file.
	dups := []struct {
		what, native string
		newfd        int32
		cloexec      bool
	}{
		{"fcntl F_DUPFD", "fcntl", nums[0], false},
		{"fcntl F_DUPFD_CLOEXEC", "fcntl", nums[1], true},
		{"dup3", "dup3", 95, true},
	}
	for i, d := range dups {
		e := one(t, d.what, evs, byNative(d.native), byFD(71), func(e *event.Event) bool { return e.Status == event.StatusOK && int32(e.Info) == d.newfd })
		if e.Op != event.OpDup || e.Path != f {
			t.Errorf("%s: %v %q, want dup %q", d.what, e.Op, e.Path, f)
		}
		if got := e.OpenFlags&unix.O_CLOEXEC != 0; got != d.cloexec {
			t.Errorf("%s: open flags %#x, close-on-exec %v", d.what, e.OpenFlags, d.cloexec)
		}
		result(d.what, e)
		r := one(t, d.what+" read", evs, byNative("pread64"), byFD(d.newfd))
		if r.Path != f || r.Bytes != int64(nums[2+i]) || r.Bytes != int64(i+1) {
			t.Errorf("%s read: %q bytes %d, want %q %d", d.what, r.Path, r.Bytes, f, i+1)
		}
	}
	for _, d := range []struct{ what, native string }{{"fcntl F_DUPFD bad", "fcntl"}, {"dup3 bad", "dup3"}} {
		e := one(t, d.what, evs, byNative(d.native), byFD(200))
		if e.Op != event.OpDup || e.Path != "" || errno[d.what] != uint32(unix.EBADF) {
			t.Errorf("%s: %v %q, workload errno %d, want dup, no path, EBADF", d.what, e.Op, e.Path, errno[d.what])
		}
		result(d.what, e)
	}
	// A descriptor the kernel does not know (EBADF) has no name to find:
	// not counted as unresolved.
	if n := sink.trailer.Stats.Get(event.CountUnresolved, "file events whose descriptor has no name"); n != 0 {
		t.Errorf("descriptors without a name: %d, want 0", n)
	}
}
