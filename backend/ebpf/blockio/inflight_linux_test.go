package blockio

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestInFlightAtStop: a bio that cannot complete before the tracer stops
// is emitted flagged FlagNoCompletion, with its submitter, and counted
// under StatInFlight. The bio is an O_DIRECT write to a loop device whose
// backing file sits on a frozen file system (fsfreeze): the loop worker
// blocks on the freeze, so the bio outlives the trace deterministically.
// Its device and direction come from the queue side, so it shows on the
// loop device as a write linked to the call that queued it.
func TestInFlightAtStop(t *testing.T) {
	testenv.RequirePrivileged(t, "creates loop devices and freezes a file system")
	outer := newLoop(t, 64<<20, true)
	backing := filepath.Join(outer.mount, "inner.img")
	if err := os.WriteFile(backing, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	inner := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", inner).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", inner, err, out)
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(inner, &st); err != nil {
		t.Fatal(err)
	}
	dev := event.Device{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}
	fd, err := unix.Open(inner, unix.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	if out, err := exec.Command("fsfreeze", "--freeze", outer.mount).CombinedOutput(); err != nil {
		t.Fatalf("fsfreeze (util-linux): %v: %s", err, out)
	}
	thawed := false
	thaw := func() {
		if thawed {
			return
		}
		thawed = true
		if out, err := exec.Command("fsfreeze", "--unfreeze", outer.mount).CombinedOutput(); err != nil {
			t.Errorf("fsfreeze --unfreeze: %v: %s", err, out)
		}
	}
	t.Cleanup(thaw)

	r := startTracer(t, Options{})
	tids := make(chan uint32, 1)
	start := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- uint32(unix.Gettid())
		<-start
		_, err := unix.Pwrite(fd, alignedBuf(4096), 0)
		done <- err
	}()
	tid := <-tids
	// The thread is "inside syscall 201" (as the syscall side marks it),
	// so the bio carries that call as its cause.
	causeMap{r.t}.enter(t, tid, 201)
	close(start)
	// The write is queued within microseconds; it cannot complete while
	// the outer file system is frozen.
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the write completed on a frozen backing file system: %v", err)
	default:
	}
	evs := onDev(r.stop(t), dev)
	thaw()
	if err := <-done; err != nil {
		t.Fatalf("write after thaw: %v", err)
	}

	var n int
	for i := range evs {
		e := &evs[i]
		t.Logf("%s", describe(e))
		if e.Op != event.OpBlockWrite || e.Tid != tid {
			continue
		}
		n++
		if e.Flags&event.FlagNoCompletion == 0 || e.Duration != 0 || e.Status != event.StatusUnknown {
			t.Errorf("bio in flight at stop: flags %s, duration %d, status %s", e.Flags, e.Duration, e.Status)
		}
		if e.Cause != SyscallID(201) {
			t.Errorf("bio in flight at stop: cause %#x, want the write call %#x", e.Cause, SyscallID(201))
		}
		if e.Size != 4096 || e.Offset != 0 {
			t.Errorf("bio in flight at stop: %d bytes at %d, want 4096 at 0", e.Size, e.Offset)
		}
	}
	if n != 1 {
		t.Errorf("%d write events of thread %d on %s, want 1 (in flight at stop)", n, tid, dev)
	}
	var counted uint64
	for _, c := range r.t.Stats().Counters {
		if c.Name == StatInFlight {
			counted = c.Value
		}
	}
	if counted < 1 {
		t.Errorf("%q = %d, want >= 1; stats %+v", StatInFlight, counted, r.t.Stats())
	}
}

// TestRecursionMissesReadable: the runs the kernel skips (a program
// nested on one CPU, e.g. a completion interrupting a completion) are
// read for every attached program, so such a loss reaches the stats
// instead of leaving bios silently "in flight".
func TestRecursionMissesReadable(t *testing.T) {
	r := startTracer(t, Options{})
	if len(r.t.attached) == 0 {
		t.Fatal("no attached programs listed")
	}
	for _, a := range r.t.attached {
		if _, err := a.prog.Stats(); err != nil {
			t.Errorf("%s: program stats unreadable: %v", a.name, err)
		}
	}
	r.stop(t)
}
