package ebpf

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// The workload is this test binary re-executed with IOTRACE_WORKLOAD set:
// every system call it makes between "go" and "done" is known, so the
// tests can assert the exact events.

func TestMain(m *testing.M) {
	switch os.Getenv("IOTRACE_WORKLOAD") {
	case "":
		os.Exit(m.Run())
	case "files":
		workloadFiles()
	case "child":
		workloadChild()
	case "preads":
		workloadPreads()
	case "reuse":
		workloadReuse()
	case "unlink":
		workloadUnlink()
	case "meta":
		workloadMeta()
	case "metapath":
		workloadMetaPath()
	case "newcalls":
		workloadNewCalls()
	case "anonfd":
		workloadAnonFDs()
	case "migrate":
		workloadMigrate()
	case "threads":
		workloadThreads()
	case "gowrite":
		must(stackOuter(os.Getenv("IOTRACE_WORKLOAD_FILE")))
	default:
		fmt.Fprintln(os.Stderr, "unknown workload", os.Getenv("IOTRACE_WORKLOAD"))
		os.Exit(2)
	}
	os.Exit(0)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(3)
	}
}

func mustFD(fd int, err error) int {
	must(err)
	return fd
}

// waitLine blocks on a raw read of stdin until a line arrives.
func waitLine() {
	var b [64]byte
	for {
		n, err := syscall.Read(0, b[:])
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil || b[n-1] == '\n' {
			return
		}
	}
}

func say(s string) { _, _ = syscall.Write(1, []byte(s+"\n")) }

// Workload "files": directory in $WL_DIR. Descriptor numbers and
// expectations are in TestFileSyscalls.
func workloadFiles() {
	dir := os.Getenv("WL_DIR")
	runtime.LockOSThread()
	// Before tracing: the rundown must name this one.
	pre := mustFD(unix.Open(filepath.Join(dir, "pre.txt"), unix.O_RDWR|unix.O_CREAT, 0o644))
	must(unix.Dup2(pre, 50))
	say("ready")
	waitLine()

	// 1. write through a descriptor opened before tracing.
	_, err := unix.Write(50, []byte("hello"))
	must(err)
	// 2. relative open after chdir.
	must(unix.Chdir(filepath.Join(dir, "sub")))
	rel := mustFD(unix.Open("rel.txt", unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, 0o600))
	must(unix.Dup2(rel, 51))
	must(unix.Close(rel))
	// 3. openat with a dirfd.
	dfd := mustFD(unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY, 0))
	must(unix.Dup2(dfd, 52))
	at := mustFD(unix.Openat(52, "at.txt", unix.O_CREAT|unix.O_RDWR|unix.O_TRUNC, 0o644))
	must(unix.Dup2(at, 53))
	// 4. dup2 then write through the new descriptor.
	must(unix.Dup2(53, 100))
	_, err = unix.Write(100, make([]byte, 10))
	must(err)
	// 5. pwrite / pread at offsets.
	_, err = unix.Pwrite(53, make([]byte, 4096), 8192)
	must(err)
	_, err = unix.Pread(53, make([]byte, 100), 8200)
	must(err)
	// 6. writev / readv.
	_, err = unix.Writev(53, [][]byte{make([]byte, 1), make([]byte, 2), make([]byte, 3)})
	must(err)
	_, err = unix.Seek(53, 0, 0)
	must(err)
	_, err = unix.Readv(53, [][]byte{make([]byte, 7), make([]byte, 9)})
	must(err)
	// 7. a failing open.
	if _, err := unix.Open(filepath.Join(dir, "missing"), unix.O_RDONLY, 0); err != unix.ENOENT {
		must(fmt.Errorf("open missing: %v, want ENOENT", err))
	}
	// 8. rename and unlink.
	must(unix.Rename(filepath.Join(dir, "at.txt"), filepath.Join(dir, "at2.txt")))
	_, err = unix.Write(53, []byte("renamed"))
	must(err)
	must(unix.Unlink(filepath.Join(dir, "at2.txt")))
	// 9. a child inheriting descriptors, and exec with an O_CLOEXEC one:
	// fd 60 stays open across exec, fd 61 (O_CLOEXEC) does not.
	keep := mustFD(unix.Open(filepath.Join(dir, "keep.txt"), unix.O_CREAT|unix.O_WRONLY, 0o644))
	must(unix.Dup2(keep, 60))
	cx := mustFD(unix.Open(filepath.Join(dir, "cloexec.txt"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644))
	must(unix.Dup3(cx, 61, unix.O_CLOEXEC))
	self, err := os.Executable()
	must(err)
	pid, err := syscall.ForkExec(self, []string{self}, &syscall.ProcAttr{
		Env:   []string{"IOTRACE_WORKLOAD=child"},
		Files: []uintptr{0, 1, 2},
	})
	must(err)
	var ws syscall.WaitStatus
	_, err = syscall.Wait4(pid, &ws, 0, nil)
	must(err)
	// 10. four threads writing.
	mt := mustFD(unix.Open(filepath.Join(dir, "mt.txt"), unix.O_CREAT|unix.O_WRONLY, 0o644))
	must(unix.Dup2(mt, 70))
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			for j := 0; j < 10; j++ {
				if _, err := unix.Pwrite(70, make([]byte, 100), int64(1000*i+100*j)); err != nil {
					must(err)
				}
			}
		}(i)
	}
	wg.Wait()
	say("done " + strconv.Itoa(pid))
	waitLine()
}

// Workload "child": exec'd by "files" with fds 60 (kept) and 61 (closed
// at exec) inherited from its parent.
func workloadChild() {
	_, err := unix.Write(60, []byte("child"))
	must(err)
	if _, err := unix.Write(61, []byte("x")); err != unix.EBADF {
		must(fmt.Errorf("write to an O_CLOEXEC fd after exec: %v, want EBADF", err))
	}
}

// Workload "preads": N preads of 4 KiB from $WL_FILE after "go", then one
// write of "done".
func workloadPreads() {
	n, _ := strconv.Atoi(os.Getenv("WL_N"))
	fd := mustFD(unix.Open(os.Getenv("WL_FILE"), unix.O_RDONLY, 0))
	buf := make([]byte, 4096)
	say("ready")
	waitLine()
	for i := 0; i < n; i++ {
		if _, err := unix.Pread(fd, buf, int64(i%16)*4096); err != nil {
			must(err)
		}
	}
	say("done")
	waitLine()
}

// traceWorkload starts workload name in dir ($WL_DIR), traces its file
// layer, tells it to go and returns its pid, the trace's sink, the line it
// said when done and the function that stops the trace.
func traceWorkload(t *testing.T, name, dir string) (uint32, *memSink, string, func() error) {
	t.Helper()
	cmd, in, out := startWorkload(t, name, "WL_DIR="+dir)
	wpid := uint32(cmd.Process.Pid)
	sink, ready, stop := runTrace(t, backend.Options{Pids: []uint32{wpid},
		Layers: []event.Layer{event.LayerFile}}, wpid)
	return wpid, sink, goWorkload(t, ready, in, out), stop
}

// goWorkload waits until the trace is ready, tells the workload to go and
// returns the line it says when done.
func goWorkload(t *testing.T, ready <-chan struct{}, in io.Writer, out *bufio.Reader) string {
	t.Helper()
	<-ready
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("workload: %q, %v", line, err)
	}
	return line
}

// startWorkload starts the test binary as workload name with env and
// returns it with its stdin and stdout after it said "ready".
func startWorkload(t *testing.T, name string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append([]string{"IOTRACE_WORKLOAD=" + name}, env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	out := bufio.NewReader(outp)
	line, err := out.ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("workload %s: %q, %v; want ready", name, line, err)
	}
	return cmd, in, out
}
