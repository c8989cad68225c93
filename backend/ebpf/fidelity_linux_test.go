package ebpf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// Workload "reuse": after "go", a pipe and an inotify descriptor (neither
// necessarily traced at creation) get a write each, are closed, and their
// numbers are reused by regular files in $WL_DIR, which stay open so that
// /proc names the files when asked later. It prints "fds PIPE_W INOTIFY".
func workloadReuse() {
	dir := os.Getenv("WL_DIR")
	say("ready")
	waitLine()
	var p [2]int
	must(unix.Pipe(p[:]))
	_, err := unix.Write(p[1], []byte("hi"))
	must(err)
	must(unix.Close(p[0]))
	must(unix.Close(p[1]))
	for _, n := range []string{"a", "b"} {
		mustFD(unix.Open(filepath.Join(dir, n), unix.O_RDWR|unix.O_CREAT, 0o644))
	}
	in := mustFD(unix.InotifyInit1(0))
	_, _ = unix.Write(in, []byte("hi")) // EINVAL: still a write on in
	must(unix.Close(in))
	mustFD(unix.Open(filepath.Join(dir, "c"), unix.O_RDWR|unix.O_CREAT, 0o644))
	say(fmt.Sprintf("fds %d %d", p[1], in))
	waitLine()
}

// TestLateNameNotFromReusedDescriptor: a write on a pipe or an inotify
// descriptor whose creation the trace may not have seen, processed after
// the descriptor's number went to a regular file, is never named after
// that file (#19). The process is attached to by pid, so its other
// descriptors predate tracing.
func TestLateNameNotFromReusedDescriptor(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	cmd, in, out := startWorkload(t, "reuse", "WL_DIR="+dir)
	pid := uint32(cmd.Process.Pid)
	sink, ready, stop := runTrace(t, backend.Options{Pids: []uint32{pid}, Layers: []event.Layer{event.LayerFile}}, pid)
	line := goWorkload(t, ready, in, out)
	var pw, ifd int32
	if _, err := fmt.Sscanf(line, "fds %d %d", &pw, &ifd); err != nil {
		t.Fatalf("workload said %q: %v", line, err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, fd := range []int32{pw, ifd} {
		w := find(sink.events, byPid(pid), byNative("write"), byFD(fd))
		if len(w) != 1 {
			t.Fatalf("fd %d: %d writes traced, want 1", fd, len(w))
		}
		t.Logf("write on fd %d: path %q flags %s", fd, w[0].Path, w[0].Flags)
		if strings.HasPrefix(w[0].Path, dir) {
			t.Errorf("write on fd %d (pipe or inotify) named after the regular file %q that reused its number", fd, w[0].Path)
		}
	}
}

// TestStopWhileCommandRuns: stopping while the traced command still makes
// calls must not count the calls it begins while the trace stops as
// "exits without their enter (started before tracing)" (#17).
func TestStopWhileCommandRuns(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	f, stopFile := filepath.Join(dir, "f"), filepath.Join(dir, "stop")
	// Stopping the trace does not stop the command: the test does.
	t.Cleanup(func() {
		_ = os.WriteFile(stopFile, nil, 0o600)
		time.Sleep(100 * time.Millisecond)
	})
	sink := &memSink{}
	opts := backend.Options{
		Command: []string{"sh", "-c", "while [ ! -e " + stopFile + " ]; do : > " + f + "; done"},
		Warn:    func(m string) { t.Logf("warn: %s", m) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if err := New(Config{MarkerDir: "-"}).Run(ctx, opts, sink); err != nil {
		t.Fatal(err)
	}
	if sink.trailer == nil {
		t.Fatal("no trailer")
	}
	if n := len(find(sink.events, byPath(f))); n < 10 {
		t.Fatalf("%d events on %s: the command did not run while traced", n, f)
	}
	st := sink.trailer.Stats
	if n := st.Get(event.CountUnpaired, "syscall exits without their enter (started before tracing)"); n != 0 {
		t.Errorf("%d exits without their enter counted as started before tracing; the command was traced from its start", n)
	}
	t.Logf("begun while stopping: %d", st.Get(event.CountInfo, "syscalls begun while stopping (exit seen, enter no longer traced)"))
}

// Workload "unlink": writes $WL_FILE, removes it while open, writes again.
func workloadUnlink() {
	f := os.Getenv("WL_FILE")
	fd := mustFD(unix.Open(f, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC, 0o600))
	_, err := unix.Write(fd, []byte("a"))
	must(err)
	must(unix.Unlink(f))
	_, err = unix.Write(fd, []byte("b"))
	must(err)
}

// TestUnlinkedDuringTraceIsDeleted: a file removed while open has its later
// events named "PATH (deleted)", as files removed before the trace are
// (#19).
func TestUnlinkedDuringTraceIsDeleted(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "gone")
	t.Setenv("IOTRACE_WORKLOAD", "unlink")
	t.Setenv("WL_FILE", f)
	sink := &memSink{}
	opts := backend.Options{Command: []string{self}, Layers: []event.Layer{event.LayerFile}, Warn: func(m string) { t.Logf("warn: %s", m) }}
	if err := New(Config{MarkerDir: "-"}).Run(context.Background(), opts, sink); err != nil {
		t.Fatal(err)
	}
	// The header says block I/O was not traced (report shows it so).
	if l := event.TracedLayers(&sink.header, sink.trailer); l != event.LayersOf(event.LayerFile) {
		t.Errorf("layers traced %q, want file", l)
	}
	var got []string
	for _, e := range find(sink.events, byNative("write")) {
		if strings.HasPrefix(e.Path, f) {
			got = append(got, e.Path)
		}
	}
	if want := []string{f, f + " (deleted)"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("writes named %q, want %q", got, want)
	}
}

// TestWritebackNamed: writeback bios that kernel workers queue for a file
// the trace saw opened carry its path (#19).
func TestWritebackNamed(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir, err := os.MkdirTemp("/var/tmp", "iotrace-wb-") // a disk file system, not tmpfs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := filepath.Join(dir, "dirty")
	sink := &memSink{}
	opts := backend.Options{
		Command: []string{"sh", "-c", "dd if=/dev/urandom of=" + f + " bs=64k count=16 status=none; sync"},
		Warn:    func(m string) { t.Logf("warn: %s", m) },
	}
	if err := New(Config{MarkerDir: "-"}).Run(context.Background(), opts, sink); err != nil {
		t.Fatal(err)
	}
	if l := event.TracedLayers(&sink.header, sink.trailer); l != event.LayersOf(event.LayerFile, event.LayerBlock) {
		t.Errorf("layers traced %q, want file,block", l)
	}
	var st unix.Stat_t
	if err := unix.Stat(f, &st); err != nil {
		t.Fatal(err)
	}
	var wb, named int
	for _, e := range sink.events {
		if e.Layer != event.LayerBlock || e.Inode != st.Ino || e.Flags&event.FlagWriteback == 0 {
			continue
		}
		wb++
		if e.Path == f {
			named++
		} else {
			t.Errorf("writeback of %s named %q: %s %s", f, e.Path, e.Native, e.Comm)
		}
	}
	if wb == 0 {
		t.Fatalf("no writeback bio of %s (inode %d) traced", f, st.Ino)
	}
	t.Logf("%d writeback bios, %d named", wb, named)
}
