package fdtable

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// factLog records facts as short strings.
type factLog []string

func (l *factLog) emit(f *event.Fact) {
	s := fmt.Sprintf("%v %d %v/%d %q", f.Kind, f.Time, f.Space, f.Pid, f.Name)
	if f.Kind == event.FactName {
		s = fmt.Sprintf("name %d %v/%d/%d %q", f.Time, f.Space, f.Pid, f.Handle, f.Name)
	}
	if f.End {
		s += " end"
	}
	if f.Rundown {
		s += " rundown"
	}
	*l = append(*l, s)
}

func (l factLog) has(t *testing.T, want string) {
	t.Helper()
	for _, s := range l {
		if s == want {
			return
		}
	}
	t.Errorf("no fact %s in\n\t%s", want, strings.Join(l, "\n\t"))
}

type fakeProbe struct {
	fds map[[2]int32]FD
	cwd map[uint32]string
}

func (p *fakeProbe) FD(pid uint32, fd int32) (FD, bool) {
	d, ok := p.fds[[2]int32{int32(pid), fd}]
	return d, ok
}
func (p *fakeProbe) Cwd(pid uint32) (string, bool)       { c, ok := p.cwd[pid]; return c, ok }
func (p *fakeProbe) Process(pid uint32) (ProcInfo, bool) { return ProcInfo{}, false }

func pathOf(t *testing.T, tb *Table, pid uint32, fd int32) string {
	t.Helper()
	d, _ := tb.FD(pid, fd, 0)
	return d.Path
}

func TestOpenDupClose(t *testing.T) {
	tb := New()
	var log factLog
	tb.Emit = log.emit
	tb.Rundown(ProcInfo{Pid: 10, Comm: "sh"}, "/home", map[int32]FD{0: {Path: "/dev/pts/0"}}, 0, false)
	tb.Open(10, 3, FD{Path: "/a"}, 5)
	tb.Dup(10, 3, 7, false, 6)
	if got := pathOf(t, tb, 10, 7); got != "/a" {
		t.Errorf("dup: %q", got)
	}
	tb.Dup(10, 0, 3, false, 7) // dup2 over an open fd replaces it
	if got := pathOf(t, tb, 10, 3); got != "/dev/pts/0" {
		t.Errorf("dup2 over fd 3: %q", got)
	}
	if d, ok := tb.Close(10, 7, 8); !ok || d.Path != "/a" {
		t.Errorf("close returned %+v %v", d, ok)
	}
	if _, ok := tb.FD(10, 7, 9); ok {
		t.Error("fd 7 still named after close")
	}
	log.has(t, `name 0 fd/10/0 "/dev/pts/0" rundown`)
	log.has(t, `name 0 cwd/10/0 "/home" rundown`)
	log.has(t, `name 6 fd/10/7 "/a"`)
	log.has(t, `name 8 fd/10/7 "" end`)
}

func TestAbs(t *testing.T) {
	tb := New()
	tb.Rundown(ProcInfo{Pid: 1}, "/w", map[int32]FD{5: {Path: "/etc"}, 6: {Path: "pipe:[3]"}}, 0, true)
	cases := []struct {
		dirfd int32
		name  string
		want  string
		ok    bool
	}{
		{AtFDCWD, "x/../y.c", "/w/y.c", true},
		{AtFDCWD, "/abs//p/", "/abs/p", true},
		{5, "passwd", "/etc/passwd", true},
		{5, "", "/etc", true},
		{6, "x", "x", false}, // not a directory path
		{9, "x", "x", false}, // unknown dirfd
		{AtFDCWD, "", "/w", true},
	}
	for _, c := range cases {
		got, ok := tb.Abs(1, c.dirfd, c.name, 0)
		if got != c.want || ok != c.ok {
			t.Errorf("Abs(%d, %q) = %q, %v; want %q, %v", c.dirfd, c.name, got, ok, c.want, c.ok)
		}
	}
	tb.Chdir(1, "/tmp", 1)
	if got, _ := tb.Abs(1, AtFDCWD, "f", 2); got != "/tmp/f" {
		t.Errorf("after chdir: %q", got)
	}
}

func TestForkCopiesOrShares(t *testing.T) {
	tb := New()
	var log factLog
	tb.Emit = log.emit
	tb.Rundown(ProcInfo{Pid: 1}, "/", map[int32]FD{3: {Path: "/f"}}, 0, true)
	tb.Fork(1, 2, 100, "copy", false, false, 100)
	tb.Fork(1, 3, 101, "shared", true, true, 101)
	tb.Open(1, 4, FD{Path: "/g"}, 102)
	if _, ok := tb.FD(2, 4, 103); ok {
		t.Error("a copied table saw the parent's later open")
	}
	if got := pathOf(t, tb, 3, 4); got != "/g" {
		t.Errorf("a CLONE_FILES child does not share the open: %q", got)
	}
	log.has(t, `name 102 fd/3/4 "/g"`) // facts for every sharer
	tb.Close(2, 3, 104)
	if got := pathOf(t, tb, 1, 3); got != "/f" {
		t.Errorf("closing in a copy closed the parent's: %q", got)
	}
	tb.Chdir(3, "/shared", 105)
	if cwd, _ := tb.Cwd(1, 106); cwd != "/shared" {
		t.Errorf("CLONE_FS: parent cwd %q", cwd)
	}
	if cwd, _ := tb.Cwd(2, 106); cwd != "/" {
		t.Errorf("copied fs: child cwd %q", cwd)
	}
	log.has(t, `process 100 none/2 "copy"`)
}

func TestExecClosesCloexec(t *testing.T) {
	tb := New()
	var log factLog
	tb.Emit = log.emit
	tb.Rundown(ProcInfo{Pid: 1}, "/", nil, 0, true)
	tb.Open(1, 3, FD{Path: "/keep"}, 1)
	tb.Open(1, 4, FD{Path: "/cx", Cloexec: true}, 2)
	tb.Dup(1, 4, 5, false, 3) // dup clears close-on-exec
	tb.Open(1, 6, FD{Path: "/setfd"}, 4)
	tb.SetCloexec(1, 6, true)
	tb.Fork(1, 2, 5, "sh", true, false, 5) // shares the table until exec
	tb.Exec(2, 5, "ls", "/bin/ls", "ls -l", 6)
	for fd, want := range map[int32]string{3: "/keep", 4: "", 5: "/cx", 6: ""} {
		if got := pathOf(t, tb, 2, fd); got != want {
			t.Errorf("after exec fd %d: %q, want %q", fd, got, want)
		}
	}
	if got := pathOf(t, tb, 1, 4); got != "/cx" {
		t.Errorf("exec in a CLONE_FILES child closed the parent's fd 4: %q", got)
	}
	log.has(t, `name 6 fd/2/4 "" end`)
	tb.CloseRange(1, 4, ^uint32(0), CloseRangeCloexec, 7)
	if got := pathOf(t, tb, 1, 5); got != "/cx" {
		t.Errorf("close_range CLOEXEC closed fd 5")
	}
	tb.CloseRange(1, 4, 5, 0, 8)
	if got := pathOf(t, tb, 1, 5); got != "" {
		t.Errorf("close_range left fd 5: %q", got)
	}
	if got := pathOf(t, tb, 1, 3); got != "/keep" {
		t.Errorf("close_range closed fd 3")
	}
}

func TestRenameAndExit(t *testing.T) {
	tb := New()
	var log factLog
	tb.Emit = log.emit
	tb.Rundown(ProcInfo{Pid: 1}, "/d/sub", map[int32]FD{3: {Path: "/d/a"}, 4: {Path: "/d/sub/b"}, 5: {Path: "/dx"}}, 0, true)
	tb.Rename("/d", "/e", 10)
	for fd, want := range map[int32]string{3: "/e/a", 4: "/e/sub/b", 5: "/dx"} {
		if got := pathOf(t, tb, 1, fd); got != want {
			t.Errorf("after rename fd %d: %q, want %q", fd, got, want)
		}
	}
	if cwd, _ := tb.Cwd(1, 11); cwd != "/e/sub" {
		t.Errorf("cwd after rename: %q", cwd)
	}
	tb.Exit(1, 12)
	if tb.Lookup(1) != nil {
		t.Error("process still there after exit")
	}
	log.has(t, `name 12 fd/1/3 "" end`)
	log.has(t, `process 12 none/1 "" end`)
}

func TestProbeFallback(t *testing.T) {
	tb := New()
	tb.Probe = &fakeProbe{fds: map[[2]int32]FD{{7, 9}: {Path: "socket:[1]"}}, cwd: map[uint32]string{7: "/srv"}}
	var log factLog
	tb.Emit = log.emit
	d, ok := tb.FD(7, 9, 50)
	if !ok || d.Path != "socket:[1]" || !d.Late {
		t.Errorf("probe: %+v %v", d, ok)
	}
	if _, ok := tb.FD(7, 10, 51); ok {
		t.Error("unknown fd named")
	}
	if _, ok := tb.FD(7, 10, 52); ok || tb.Unnamed != 1 {
		t.Errorf("the negative answer was not remembered: unnamed %d", tb.Unnamed)
	}
	if got, _ := tb.Abs(7, AtFDCWD, "x", 53); got != "/srv/x" {
		t.Errorf("probed cwd: %q", got)
	}
	log.has(t, `name 50 fd/7/9 "socket:[1]" rundown`)
}

// TestLateNameOfReusedDescriptor: a pipe's descriptor was closed and its
// number reused by a regular file before /proc was asked; the pipe's
// write (the kernel saw the pipe's inode) must not be named after the
// file, while the file's own calls are.
func TestLateNameOfReusedDescriptor(t *testing.T) {
	tb := New()
	file := event.Device{Major: 254, Minor: 1}
	pipefs := event.Device{Major: 0, Minor: 14}
	tb.Probe = &fakeProbe{fds: map[[2]int32]FD{{7, 4}: {Path: "/etc/passwd", Ino: 1001, Dev: file}}}
	if d, ok := tb.FDOf(7, 4, 50, 77, pipefs); ok || d.Path != "" {
		t.Errorf("pipe write named %q after the reused descriptor's file", d.Path)
	}
	if tb.Refused != 1 || tb.Probed != 1 {
		t.Errorf("refused %d, probed %d; want 1, 1", tb.Refused, tb.Probed)
	}
	if d, ok := tb.FDOf(7, 4, 51, 1001, file); !ok || d.Path != "/etc/passwd" {
		t.Errorf("the file's own call: %q %v", d.Path, ok)
	}
	// Same inode number on another device is another file.
	if _, ok := tb.FDOf(7, 4, 52, 1001, pipefs); ok || tb.Refused != 2 {
		t.Errorf("same inode, other device: named (refused %d)", tb.Refused)
	}
	// A late name whose file could not be identified is not trusted either.
	tb.Probe = &fakeProbe{fds: map[[2]int32]FD{{7, 5}: {Path: "/etc/shadow"}}}
	if _, ok := tb.FDOf(7, 5, 53, 1001, file); ok {
		t.Error("an unverifiable late name was given")
	}
	// A binding from a traced open is trusted.
	tb.Open(7, 6, FD{Path: "/tmp/x", Ino: 5, Dev: file}, 54)
	if d, ok := tb.FDOf(7, 6, 55, 5, file); !ok || d.Path != "/tmp/x" {
		t.Errorf("traced open: %q %v", d.Path, ok)
	}
}

// TestUnlinkMarksDeleted: a file removed while open keeps its descriptors,
// named "PATH (deleted)" from then on, as /proc names files removed
// before the trace; other files and a later file at the same path are
// left alone.
func TestUnlinkMarksDeleted(t *testing.T) {
	tb := New()
	var log factLog
	tb.Emit = log.emit
	tb.Open(7, 3, FD{Path: "/tmp/x"}, 10)
	tb.Open(7, 4, FD{Path: "/tmp/xy"}, 11)
	tb.Fork(7, 8, 12, "child", false, false, 12)
	tb.Unlink("/tmp/x", 20)
	for _, c := range []struct {
		pid  uint32
		fd   int32
		want string
	}{{7, 3, "/tmp/x (deleted)"}, {8, 3, "/tmp/x (deleted)"}, {7, 4, "/tmp/xy"}} {
		if got := pathOf(t, tb, c.pid, c.fd); got != c.want {
			t.Errorf("pid %d fd %d: %q, want %q", c.pid, c.fd, got, c.want)
		}
	}
	log.has(t, `name 20 fd/7/3 "/tmp/x (deleted)"`)
	tb.Open(7, 5, FD{Path: "/tmp/x"}, 30)
	if got := pathOf(t, tb, 7, 5); got != "/tmp/x" {
		t.Errorf("a new file at the removed path: %q", got)
	}
}

// TestInodePath: the table names a file by its inode for writeback, after
// its descriptor is closed too, and follows renames and unlinks of open
// files.
func TestInodePath(t *testing.T) {
	tb := New()
	dev := event.Device{Major: 254, Minor: 1}
	tb.Open(7, 3, FD{Path: "/d/a", Ino: 11, Dev: dev}, 10)
	tb.Close(7, 3, 11)
	if p, ok := tb.InodePath(11, dev); !ok || p != "/d/a" {
		t.Errorf("closed file: %q %v", p, ok)
	}
	if _, ok := tb.InodePath(11, event.Device{Major: 8}); ok {
		t.Error("same inode on another device named")
	}
	tb.Open(7, 4, FD{Path: "/d/b", Ino: 12, Dev: dev}, 12)
	tb.Rename("/d/b", "/d/c", 13)
	if p, _ := tb.InodePath(12, dev); p != "/d/c" {
		t.Errorf("renamed: %q", p)
	}
	tb.Unlink("/d/c", 14)
	if p, _ := tb.InodePath(12, dev); p != "/d/c (deleted)" {
		t.Errorf("unlinked: %q", p)
	}
	tb.Probe = &fakeProbe{fds: map[[2]int32]FD{{7, 9}: {Path: "/etc/passwd", Ino: 13, Dev: dev}}}
	tb.FD(7, 9, 15)
	if _, ok := tb.InodePath(13, dev); ok {
		t.Error("a late name was bound to its inode")
	}
}

// TestInodeNamesBounded: the names kept by inode for writeback are
// bounded by their bytes, not only by their count: 20,000 files of long
// paths opened and closed (a build in a deep tree) held 20,000 names of
// 2 KiB, 39 MiB, before.
func TestInodeNamesBounded(t *testing.T) {
	tb := New()
	dev := event.Device{Major: 254, Minor: 1}
	pad := strings.Repeat("d/", 1000)
	var held int
	for i := range 20000 {
		p := fmt.Sprintf("/build/%s%d.o", pad, i)
		tb.Open(7, 3, FD{Path: p, Ino: uint64(100 + i), Dev: dev}, int64(i))
		tb.Close(7, 3, int64(i))
	}
	for _, p := range tb.inodes {
		held += len(p)
	}
	if held > 4<<20 {
		t.Errorf("%d names of %d MiB kept by inode (want at most %d MiB)", len(tb.inodes), held>>20, 4)
	}
	last := fmt.Sprintf("/build/%s%d.o", pad, 19999)
	if p, ok := tb.InodePath(100+19999, dev); !ok || p != last {
		t.Errorf("the last file closed is not named by its inode: %q %v", p, ok)
	}
}
