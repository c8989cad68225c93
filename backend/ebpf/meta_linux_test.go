package ebpf

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
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
	cmd, in, out := startWorkload(t, "meta", "WL_DIR="+dir)
	wpid := uint32(cmd.Process.Pid)
	sink, ready, stop := runTrace(t, backend.Options{Pids: []uint32{wpid},
		Layers: []event.Layer{event.LayerFile}}, wpid)
	<-ready
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	line, err := out.ReadString('\n')
	var efd, mfd, sfd int32
	var sino, pino uint64
	var p0, p1, s1 int32
	if err != nil {
		t.Fatalf("workload: %q, %v", line, err)
	}
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
