package ebpf

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// runTrace runs the backend into a memSink until stop is closed. ready is
// closed once the rundown named pid (or at once when pid is 0).
func runTrace(t *testing.T, opts backend.Options, pid uint32) (sink *memSink, ready <-chan struct{}, stop func() error) {
	t.Helper()
	sink = &memSink{}
	rd := make(chan struct{})
	var once bool
	sink.onFact = func(f *event.Fact) {
		if !once && (pid == 0 || (f.Rundown && f.Pid == pid)) {
			once = true
			close(rd)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if opts.Warn == nil {
		opts.Warn = func(m string) { t.Logf("warn: %s", m) }
	}
	go func() { done <- New(Config{MarkerDir: "-"}).Run(ctx, opts, sink) }()
	stop = func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("backend did not stop within 30 s")
			return nil
		}
	}
	t.Cleanup(func() { cancel() })
	go func() {
		// Fail fast when Run returns before the rundown.
		select {
		case <-rd:
		case err := <-done:
			done <- err
			if !once {
				once = true
				close(rd)
			}
		}
	}()
	return sink, rd, stop
}

type evFilter func(e *event.Event) bool

func find(evs []event.Event, fs ...evFilter) []event.Event {
	var out []event.Event
next:
	for _, e := range evs {
		for _, f := range fs {
			if !f(&e) {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

func byPid(pid uint32) evFilter  { return func(e *event.Event) bool { return e.Pid == pid } }
func byNative(n string) evFilter { return func(e *event.Event) bool { return e.Native == n } }
func byNatives(ns ...string) evFilter {
	return func(e *event.Event) bool {
		for _, n := range ns {
			if e.Native == n {
				return true
			}
		}
		return false
	}
}
func byFD(fd int32) evFilter   { return func(e *event.Event) bool { return e.FD == fd } }
func byPath(p string) evFilter { return func(e *event.Event) bool { return e.Path == p } }

// one returns the single event matching fs, failing the test otherwise.
func one(t *testing.T, what string, evs []event.Event, fs ...evFilter) event.Event {
	t.Helper()
	got := find(evs, fs...)
	if len(got) != 1 {
		for _, e := range got {
			t.Logf("  %s fd=%d path=%q size=%d off=%d bytes=%d", e.Native, e.FD, e.Path, e.Size, e.Offset, e.Bytes)
		}
		t.Fatalf("%s: %d events, want 1", what, len(got))
	}
	e := got[0]
	if e.Duration <= 0 {
		t.Errorf("%s: duration %d, want > 0", what, e.Duration)
	}
	if e.Time <= 0 {
		t.Errorf("%s: time %d, want > 0 (after the trace start)", what, e.Time)
	}
	return e
}

func check(t *testing.T, what string, e event.Event, path string, fd int32, size uint64, off, bytes int64, st event.Status) {
	t.Helper()
	if e.Path != path || e.FD != fd || e.Size != size || e.Offset != off || e.Bytes != bytes || e.Status != st {
		t.Errorf("%s: path=%q fd=%d size=%d offset=%d bytes=%d status=%v\n\twant path=%q fd=%d size=%d offset=%d bytes=%d status=%v",
			what, e.Path, e.FD, e.Size, e.Offset, e.Bytes, e.Status, path, fd, size, off, bytes, st)
	}
}

func TestFileSyscalls(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, in, out := startWorkload(t, "files", "WL_DIR="+dir)
	wpid := uint32(cmd.Process.Pid)
	sink, ready, stop := runTrace(t, backend.Options{Pids: []uint32{wpid}, FollowChildren: true,
		Layers: []event.Layer{event.LayerFile}}, wpid)
	line := goWorkload(t, ready, in, out)
	if !strings.HasPrefix(line, "done ") {
		t.Fatalf("workload: %q", line)
	}
	childPid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "done ")))
	time.Sleep(50 * time.Millisecond) // let the last records reach the ring
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	evs := sink.events
	w := byPid(wpid)
	p := func(n string) string { return filepath.Join(dir, n) }

	// Every event of the workload has its pid, a tid and its comm.
	for _, e := range find(evs, w) {
		if e.Tid == 0 || e.Source != event.SourceEBPF || e.Layer != event.LayerFile || e.ID == 0 || e.ID>>63 != 0 {
			t.Errorf("event %+v: bad identity", e)
			break
		}
	}

	e := one(t, "write via rundown fd", evs, w, byNative("write"), byFD(50))
	check(t, "write via rundown fd", e, p("pre.txt"), 50, 5, 0, 5, event.StatusOK)

	e = one(t, "chdir", evs, w, byNative("chdir"), byPath(p("sub")))
	if e.Path != p("sub") {
		t.Errorf("chdir path %q", e.Path)
	}
	e = one(t, "relative open", evs, w, byNative("openat"), byPath(p("sub/rel.txt")))
	if e.FD < 0 || e.Status != event.StatusOK || e.OpenFlags&0o100 == 0 {
		t.Errorf("relative open: %+v", e)
	}
	e = one(t, "openat dirfd", evs, w, byNative("openat"), byPath(p("at.txt")))
	if e.FD < 0 || e.Inode == 0 {
		t.Errorf("openat with dirfd: fd %d inode %d", e.FD, e.Inode)
	}
	// unix.Dup2 is dup3(old, new, 0) on some architectures.
	e = one(t, "dup2", evs, w, byNatives("dup2", "dup3"), byFD(53))
	if e.Path != p("at.txt") {
		t.Errorf("dup2 path %q", e.Path)
	}
	e = one(t, "write via dup2'd fd", evs, w, byNative("write"), byFD(100))
	check(t, "write via dup2'd fd", e, p("at.txt"), 100, 10, 0, 10, event.StatusOK)
	e = one(t, "pwrite", evs, w, byNative("pwrite64"), byFD(53))
	check(t, "pwrite", e, p("at.txt"), 53, 4096, 8192, 4096, event.StatusOK)
	e = one(t, "pread", evs, w, byNative("pread64"), byFD(53))
	check(t, "pread", e, p("at.txt"), 53, 100, 8200, 100, event.StatusOK)
	// The file's identity as sys_enter read it through the fd table (fd
	// 53): the inode and device its open gave (another descriptor, read
	// at exit; the workload removes the file before the test could stat
	// it).
	opened := find(evs, w, func(e *event.Event) bool { return e.Op == event.OpOpen }, byPath(p("at.txt")))
	if len(opened) == 0 || opened[0].Inode == 0 {
		t.Errorf("no open of at.txt with an inode: %+v", opened)
	} else if e.Inode != opened[0].Inode || e.Dev != opened[0].Dev {
		t.Errorf("pread: inode %d dev %v, want its open's %d %v", e.Inode, e.Dev, opened[0].Inode, opened[0].Dev)
	}
	e = one(t, "writev", evs, w, byNative("writev"), byFD(53))
	check(t, "writev", e, p("at.txt"), 53, 6, 10, 6, event.StatusOK)
	e = one(t, "readv", evs, w, byNative("readv"), byFD(53))
	check(t, "readv", e, p("at.txt"), 53, 16, 0, 16, event.StatusOK)
	e = one(t, "lseek", evs, w, byNative("lseek"), byFD(53))
	if e.Offset != 0 || e.Path != p("at.txt") {
		t.Errorf("lseek: %+v", e)
	}

	e = one(t, "failing open", evs, w, byNative("openat"), byPath(p("missing")))
	if e.Status != event.StatusNotFound || e.Code != 2 || e.FD != -1 {
		t.Errorf("failing open: status %v code %d fd %d", e.Status, e.Code, e.FD)
	}
	e = one(t, "rename", evs, w, byNatives("rename", "renameat", "renameat2"))
	if e.Path != p("at.txt") || e.Path2 != p("at2.txt") || e.Status != event.StatusOK {
		t.Errorf("rename: %q -> %q %v", e.Path, e.Path2, e.Status)
	}
	e = one(t, "write after rename", evs, w, byNative("write"), byFD(53))
	if e.Path != p("at2.txt") {
		t.Errorf("write after rename: path %q, want the new name", e.Path)
	}
	e = one(t, "unlink", evs, w, byNatives("unlink", "unlinkat"))
	if e.Path != p("at2.txt") || e.Status != event.StatusOK {
		t.Errorf("unlink: %q %v", e.Path, e.Status)
	}

	// The child: fork inherited fd 60 across exec, fd 61 was O_CLOEXEC.
	c := byPid(uint32(childPid))
	e = one(t, "child exec", evs, c, byNative("execve"))
	if self, _ := os.Executable(); e.Path != self || e.Status != event.StatusOK {
		t.Errorf("child execve: %q %v", e.Path, e.Status)
	}
	e = one(t, "child write to inherited fd", evs, c, byNative("write"), byFD(60))
	check(t, "child write to inherited fd", e, p("keep.txt"), 60, 5, 0, 5, event.StatusOK)
	e = one(t, "child write to cloexec fd", evs, c, byNative("write"), byFD(61))
	if e.Status != event.StatusInvalid || e.Code != 9 || e.Path != "" {
		t.Errorf("child write to closed O_CLOEXEC fd: path %q status %v code %d; want no path, EBADF", e.Path, e.Status, e.Code)
	}
	if e.ProcStart <= 0 {
		t.Errorf("child ProcStart %d, want > 0 (started during the trace)", e.ProcStart)
	}
	var forked, execd bool
	for _, f := range sink.facts {
		if f.Kind == event.FactProcess && f.Pid == uint32(childPid) && !f.End {
			if f.PPid == wpid {
				forked = true
			}
			if f.Image != "" && strings.HasSuffix(f.Image, filepath.Base(os.Args[0])) {
				execd = true
			}
		}
	}
	if !forked || !execd {
		t.Errorf("child process facts: forked %v, exec'd %v", forked, execd)
	}

	// Four threads, ten pwrites each.
	mt := find(evs, w, byNative("pwrite64"), byFD(70))
	perTid := map[uint32]int{}
	for _, e := range mt {
		if e.Path != p("mt.txt") || e.Bytes != 100 {
			t.Errorf("multithreaded pwrite: %+v", e)
		}
		perTid[e.Tid]++
	}
	if len(mt) != 40 || len(perTid) != 4 {
		t.Errorf("multithreaded writer: %d pwrites on %d threads, want 40 on 4 (%v)", len(mt), len(perTid), perTid)
	}
	for tid, n := range perTid {
		if n != 10 {
			t.Errorf("thread %d: %d pwrites, want 10", tid, n)
		}
	}

	// Rundown facts named the pre-opened descriptor.
	var rundown bool
	for _, f := range sink.facts {
		if f.Kind == event.FactName && f.Rundown && f.Pid == wpid && f.Handle == 50 && f.Name == p("pre.txt") {
			rundown = true
		}
	}
	if !rundown {
		t.Error("no rundown fact for fd 50")
	}
	if sink.trailer == nil {
		t.Fatal("no trailer")
	}
	if lost := sink.trailer.Stats.Total(event.CountLost); lost != 0 {
		t.Errorf("lost %d: %+v", lost, sink.trailer.Stats.Problems())
	}
}

// TestInFlightAtStop: a system call still blocked when tracing stops is
// reported (from the threads' states, through the task iterator) as an event without a result, flagged FlagNoCompletion.
func TestInFlightAtStop(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	cmd := exec.Command("sh", "-c", "echo ready; read line")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	sink, ready, stop := runTrace(t, backend.Options{Pids: []uint32{pid}, Layers: []event.Layer{event.LayerFile}}, pid)
	<-ready
	// The shell is (or soon will be) blocked in read(0): the enter was
	// before tracing, so poke it with a line it reads and a second read
	// that blocks while traced.
	if _, err := stdin.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	evs := find(sink.events, byPid(pid), byNative("read"), func(e *event.Event) bool { return e.Flags&event.FlagNoCompletion != 0 })
	if len(evs) == 0 {
		t.Fatalf("no read in flight at stop reported for pid %d; events: %d", pid, len(find(sink.events, byPid(pid))))
	}
	if n := sink.trailer.Stats.Get(event.CountUnpaired, statCallsInFlight); n < uint64(len(evs)) {
		t.Errorf("%d reads reported in flight at stop, counted %d", len(evs), n)
	}
	e := evs[len(evs)-1]
	if e.Status != event.StatusUnknown || e.FD != 0 || e.Tid != pid {
		t.Errorf("in-flight read: status %v fd %d tid %d, want unknown, 0, %d", e.Status, e.FD, e.Tid, pid)
	}
}
