//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// counter returns the value of the trailer counter whose name contains
// part.
func counter(s *memSink, part string) uint64 {
	for _, c := range s.trailer.Stats.Counters {
		if strings.Contains(c.Name, part) {
			return c.Value
		}
	}
	return 0
}

// TestTraceeKilledInCall: a process killed while in a traced call (cat
// blocked opening a FIFO nobody writes) leaves an event flagged
// no-completion, counted as unpaired, and the trace goes on.
func TestTraceeKilledInCall(t *testing.T) {
	dir := t.TempDir()
	s, status := trace(t, context.Background(), backend.Options{}, "sh", "-c",
		`mkfifo "$0/f" && { cat "$0/f" & } && sleep 0.3 && kill -9 $! && cat "$0/../nosuch" 2>/dev/null; true`, dir)
	if status != 0 {
		t.Errorf("status %d", status)
	}
	var open *event.Event
	for i := range s.events {
		if e := &s.events[i]; e.Op == event.OpOpen && e.Path == filepath.Join(dir, "f") {
			open = e
		}
	}
	if open == nil || open.Flags&event.FlagNoCompletion == 0 || open.Status != event.StatusUnknown {
		t.Fatalf("the open of the FIFO: %+v", open)
	}
	if n := counter(s, "calls without their exit"); n != 1 {
		t.Errorf("calls without their exit: %d, want 1", n)
	}
}

// TestSetuidProgram: a set-user-ID program runs (without its privileges,
// as under any tracer) and is counted.
func TestSetuidProgram(t *testing.T) {
	mount, err := exec.LookPath("mount")
	if err != nil {
		t.Skip("no mount")
	}
	if st, err := os.Stat(mount); err != nil || st.Mode()&os.ModeSetuid == 0 {
		t.Skipf("%s is not set-user-ID here", mount)
	}
	s, status := trace(t, context.Background(), backend.Options{}, mount, "--version")
	if status != 0 {
		t.Errorf("status %d", status)
	}
	if n := counter(s, "set-user-ID"); n != 1 {
		t.Errorf("set-user-ID programs counted: %d, want 1", n)
	}
}

// TestCommandTracesItself: a command that runs a tracer itself (strace)
// cannot attach (its processes are traced already); the trace ends, no
// process is left stopped.
func TestCommandTracesItself(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("no strace")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, status := trace(t, ctx, backend.Options{}, "strace", "-o", "/dev/null", "true")
	if ctx.Err() != nil {
		t.Fatal("the trace did not end")
	}
	if status == 0 {
		t.Errorf("strace under the tracer exited 0")
	}
	if len(s.events) == 0 {
		t.Error("no events")
	}
}

// TestTracerKilled: when the tracer is killed (SIGKILL), PTRACE_O_EXITKILL
// kills the command: no traced process is left stopped or running.
func TestTracerKilled(t *testing.T) {
	if os.Getenv("IOTRACE_PTRACE_TRACER") != "" {
		// The tracer: prints the command's pid, then traces until killed.
		b := New(Config{})
		_ = b.Run(context.Background(), backend.Options{
			Command:        []string{"sh", "-c", "sh -c 'while :; do cat /dev/null; done' & while :; do cat /dev/null; done"},
			CommandStarted: func(pid int) { os.Stdout.WriteString("pid " + strconv.Itoa(pid) + "\n") },
			CommandStdout:  os.Stderr,
		}, &memSink{})
		os.Exit(0)
	}
	if err := New(Config{}).Available(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTracerKilled$")
	cmd.Env = append(os.Environ(), "IOTRACE_PTRACE_TRACER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil || perr != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("tracer said %q: %v", line, err)
	}
	time.Sleep(300 * time.Millisecond) // the command and its child run
	kids := children(pid)
	if len(kids) == 0 {
		t.Fatal("the command has no child")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range append(kids, pid) {
		for alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still alive after the tracer was killed", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// children returns the pids whose parent is pid.
func children(pid int) []int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
