package blockio

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
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
	dev, fd, thaw := frozenLoop(t)

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

// frozenMaxSeconds bounds how long frozenLoop's file system stays frozen
// if the test process dies without thawing it.
const frozenMaxSeconds = 120

// stopWatchdog kills a watchdog started in its own session, its sleep
// too (the session's process group).
func stopWatchdog(c *exec.Cmd) {
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	_ = c.Wait()
}

// frozenLoop returns a loop device whose backing file sits on a frozen
// file system (fsfreeze), opened O_DIRECT for writing: a write to it is
// queued but cannot complete until thaw (also called at cleanup).
func frozenLoop(t *testing.T) (dev event.Device, fd int, thaw func()) {
	t.Helper()
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
	dev = event.Device{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}
	fd, err = unix.Open(inner, unix.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })

	// A watchdog in its own session thaws the file system if this process
	// dies frozen (a SIGKILL, go test's -timeout): no cleanup runs then,
	// and the machine's writers to it would hang in D state.
	watchdog := exec.Command("sh", "-c", `sleep "$1"; fsfreeze --unfreeze "$2"`, "thaw", strconv.Itoa(frozenMaxSeconds), outer.mount)
	watchdog.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := watchdog.Start(); err != nil {
		t.Fatalf("the thaw watchdog: %v", err)
	}
	if out, err := exec.Command("fsfreeze", "--freeze", outer.mount).CombinedOutput(); err != nil {
		stopWatchdog(watchdog)
		t.Fatalf("fsfreeze (util-linux): %v: %s", err, out)
	}
	thawed := false
	thaw = func() {
		if thawed {
			return
		}
		thawed = true
		stopWatchdog(watchdog)
		if out, err := exec.Command("fsfreeze", "--unfreeze", outer.mount).CombinedOutput(); err != nil {
			t.Errorf("fsfreeze --unfreeze: %v: %s", err, out)
		}
	}
	// Cleanups run last first: thawed before the descriptor is closed
	// and the loop devices are detached.
	t.Cleanup(thaw)
	return dev, fd, thaw
}

// hangWrites makes n O_DIRECT writes of 4 KiB (8 KiB apart: no merges)
// hang on the frozen loop device dev (fd), stops the tracer r while they
// do, thaws, and returns the events on dev once every write is done.
func hangWrites(t *testing.T, r *run, dev event.Device, fd int, thaw func(), n int) []event.Event {
	t.Helper()
	done := make(chan error, n)
	for i := range n {
		go func() {
			_, err := unix.Pwrite(fd, alignedBuf(4096), int64(i)*8192)
			done <- err
		}()
	}
	time.Sleep(300 * time.Millisecond)
	evs := onDev(r.stop(t), dev)
	thaw()
	for range n {
		if err := <-done; err != nil {
			t.Fatalf("write after thaw: %v", err)
		}
	}
	return evs
}

// TestInFlightMapFull: bios queued while the in-flight map is full are
// counted (StatMapFull), and those tracked are still reported at stop.
// Eight O_DIRECT writes hang on a loop device over a frozen file system
// while the map holds four bios: at least four inserts fail. (An LRU map,
// as before issue 28, evicts instead: the count stays 0.)
func TestInFlightMapFull(t *testing.T) {
	dev, fd, thaw := frozenLoop(t)
	const maxInFlight, writes = 4, 8
	r := startTracer(t, Options{MaxInFlight: maxInFlight})
	evs := hangWrites(t, r, dev, fd, thaw, writes)
	st := r.t.Stats()
	full := st.Get(event.CountLost, StatMapFull)
	if full < writes-maxInFlight {
		t.Errorf("%q = %d, want >= %d (%d bios queued, room for %d)", StatMapFull, full, writes-maxInFlight, writes, maxInFlight)
	}
	var inFlight int
	for i := range evs {
		if e := &evs[i]; e.Op == event.OpBlockWrite && e.Flags&event.FlagNoCompletion != 0 {
			inFlight++
		}
	}
	if inFlight < 1 || inFlight > maxInFlight {
		t.Errorf("%d writes reported in flight at stop, want 1 to %d", inFlight, maxInFlight)
	}
}

// TestRequestMapFull: requests issued while the map of their issue
// times is full are counted (StatRqFull), as bios are by StatMapFull:
// eight O_DIRECT writes hang on a frozen loop device while the map
// holds four requests. (The LRU map before issue 28 evicted silently.)
func TestRequestMapFull(t *testing.T) {
	dev, fd, thaw := frozenLoop(t)
	const maxRequests, writes = 4, 8
	r := startTracer(t, Options{maxRequests: maxRequests})
	evs := hangWrites(t, r, dev, fd, thaw, writes)
	st := r.t.Stats()
	if full := st.Get(event.CountLost, StatRqFull); full < writes-maxRequests {
		t.Errorf("%q = %d, want >= %d (%d requests issued, room for %d)", StatRqFull, full, writes-maxRequests, writes, maxRequests)
	}
	if len(evs) == 0 {
		t.Error("no block events on the loop device")
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

// missingRuns sets up the tests of runs the kernel does not deliver: a
// loop device opened for direct reads, a tracer whose completion program
// is the first of doneSide and queue program the last of queueSide (so
// a test can detach them), and the calling goroutine locked to its
// thread (returned).
func missingRuns(t *testing.T, opts Options) (*loopDev, int, *run, uint32) {
	t.Helper()
	loop := newLoop(t, 8<<20, false)
	fd, err := unix.Open(loop.path, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	r := startTracer(t, opts)
	if !opts.NoWitness && r.t.witness == nil {
		t.Fatal("no completion witness (see the warnings)")
	}
	if r.t.attached[0].name != "block_rq_complete" || r.t.attached[len(r.t.attached)-1].name != "block_bio_queue" {
		t.Fatalf("attached %+v: want block_rq_complete first and block_bio_queue last", r.t.attached)
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	return loop, fd, r, uint32(unix.Gettid())
}

// TestUnseenCompletions: a tracked bio whose completion never reaches the
// programs (the kernel skips BPF dispatch in some softirqs: block_rq_complete
// fires, as ftrace shows, without any program running and without a
// recursion miss) stays in the in-flight map. Its memory is soon reused by
// the next bio; before, that bio's queue overwrote the entry (the first
// bio vanished) or, when the pid filter dropped the new bio, the stale
// entry later gave the new bio's completion the old one's submitter and
// cause. Here the completion program is detached mid-trace, standing in
// for the kernel skipping it: every read must still show exactly once.
// The completion witness (the kernel's own trace buffer) still has their
// completions: each read gets its latency from it, flagged
// ftrace-completion, and is counted under StatWitnessed, not lost.
func TestUnseenCompletions(t *testing.T) {
	evs, tid, r, elapsed, others := unseenReads(t, Options{})
	for i := range evs {
		e := &evs[i]
		if e.Tid != tid {
			continue
		}
		if e.Flags&event.FlagFtraceCompletion == 0 || e.Flags&event.FlagNoCompletion != 0 || e.Status != event.StatusOK ||
			e.Bytes != 4096 || e.Duration <= 0 || e.Duration > int64(elapsed) {
			t.Errorf("%s: want a 4096-byte read with its completion from the kernel's trace buffer, latency in (0, %v]", describe(e), elapsed)
		}
	}
	st := r.t.Stats()
	unseen, inFlight, found := st.Get(event.CountLost, StatUnseen), st.Get(event.CountUnpaired, StatInFlight), st.Get(event.CountInfo, StatWitnessed)
	// The counts are the tracer's, of every device: the machine's own I/O
	// beside the test's may end in flight at stop (or unseen), never the
	// test's reads (checked above); each such bio is an event of its own.
	if unseen+inFlight != uint64(others) || found < unseenN {
		t.Errorf("%q = %d, %q = %d, %q = %d: want %d in all (events without completion, none the test's), >= %d; stats %+v",
			StatUnseen, unseen, StatInFlight, inFlight, StatWitnessed, found, others, unseenN, st.Sorted())
	}
	if r.t.witness.in != nil {
		t.Error("the witness's instance is still open after Run")
	}
}

// TestUnseenCompletionsNoWitness: without the witness, those reads are
// events without completion (no latency), counted under StatUnseen or
// StatInFlight.
func TestUnseenCompletionsNoWitness(t *testing.T) {
	evs, tid, r, _, _ := unseenReads(t, Options{NoWitness: true})
	for i := range evs {
		e := &evs[i]
		if e.Tid == tid && (e.Flags&event.FlagNoCompletion == 0 || e.Status != event.StatusUnknown || e.Duration != 0) {
			t.Errorf("%s: want a 4096-byte read without completion", describe(e))
		}
	}
	st := r.t.Stats()
	unseen, inFlight := st.Get(event.CountLost, StatUnseen), st.Get(event.CountUnpaired, StatInFlight)
	if unseen+inFlight < unseenN {
		t.Errorf("%q = %d and %q = %d: want %d in all", StatUnseen, unseen, StatInFlight, inFlight, unseenN)
	}
	// Sequential reads on one thread reuse the bio's memory: the path
	// under test ran.
	if unseen == 0 {
		t.Errorf("%q = 0: no bio address was reused in %d sequential reads", StatUnseen, unseenN)
	}
}

const unseenN = 32

// unseenReads makes unseenN reads whose completions the programs do not
// see and checks that each shows once, a 4096-byte read; it returns the
// events of the loop device, the reading thread, how long the reads took
// and how many events without completion are not those reads (other
// devices' I/O, other threads').
func unseenReads(t *testing.T, opts Options) ([]event.Event, uint32, *run, time.Duration, int) {
	loop, fd, r, tid := missingRuns(t, opts)
	r.t.doneSide[0].Close() // completions no longer reach the tracer
	buf := alignedBuf(4096)
	start := time.Now()
	for i := range unseenN {
		if _, err := unix.Pread(fd, buf, int64(i)*8192); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	all := r.stop(t)
	others := 0
	for i := range all {
		if e := &all[i]; e.Flags&event.FlagNoCompletion != 0 && (e.Dev != loop.dev || e.Tid != tid) {
			others++
		}
	}
	evs := onDev(all, loop.dev)
	seen := map[uint64]int{}
	for i := range evs {
		e := &evs[i]
		if e.Tid != tid {
			continue
		}
		seen[e.Sector]++
		if e.Op != event.OpBlockRead || e.Size != 4096 {
			t.Errorf("%s: want a 4096-byte read", describe(e))
		}
	}
	for i := range unseenN {
		if s := uint64(i) * 16; seen[s] != 1 {
			t.Errorf("read at sector %d: %d events, want 1", s, seen[s])
		}
	}
	if len(seen) != unseenN {
		t.Errorf("%d distinct sectors for thread %d, want %d", len(seen), tid, unseenN)
	}
	return evs, tid, r, elapsed, others
}

// TestStaleEntryAtCompletion: the queue of the bio that reuses a missed
// one's memory can be missed too (filtered out, or skipped by the kernel
// like the completion). Its completion then finds the first bio's entry:
// before, it took that bio's submitter, cause and queue time, a read
// reported at another read's sector. Now the entry is checked against the
// completing bio (direction, device, sector) and reported as unseen; the
// completion shows as a bio never seen queued.
func TestStaleEntryAtCompletion(t *testing.T) {
	loop, fd, r, tid := missingRuns(t, Options{NoWitness: true})
	buf := alignedBuf(4096)

	// The first reads are queued under the tracer; their completions are
	// missed.
	const first, next = 16, 64
	r.t.doneSide[0].Close()
	for i := range first {
		if _, err := unix.Pread(fd, buf, int64(i)*8192); err != nil {
			t.Fatal(err)
		}
	}
	// The next reads' queues are missed; their completions are seen.
	r.t.queueSide[len(r.t.queueSide)-1].Close()
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "block_rq_complete", Program: r.t.objs.BlockRqComplete})
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i < first+next; i++ {
		if _, err := unix.Pread(fd, buf, int64(i)*8192); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	all := r.stop(t)
	evs := onDev(all, loop.dev)

	queued, noStart := map[uint64]int{}, map[uint64]int{}
	for i := range evs {
		e := &evs[i]
		switch {
		case e.Tid == tid:
			queued[e.Sector/16]++
			if e.Sector%16 != 0 || e.Sector/16 >= first || e.Flags&event.FlagNoCompletion == 0 || e.Duration != 0 {
				t.Errorf("%s: want one of the first %d reads, without completion", describe(e), first)
			}
		case e.Flags&event.FlagNoStart != 0 && e.Op == event.OpBlockRead && e.Sector%16 == 0:
			noStart[e.Sector/16]++
		}
	}
	for i := range uint64(first + next) {
		if i < first && queued[i] != 1 || i >= first && noStart[i] != 1 {
			t.Errorf("read %d: %d events of thread %d, %d never seen queued; want 1 %s", i, queued[i], tid, noStart[i],
				map[bool]string{true: "of the thread", false: "never seen queued"}[i < first])
		}
	}
	st := r.t.Stats()
	// While the completion program was detached, other I/O on the machine
	// (the root disk's writeback) may have lost its completions too: the
	// counters cover every device, each one an event without completion.
	noCompletion := 0
	for i := range all {
		if all[i].Flags&event.FlagNoCompletion != 0 {
			noCompletion++
		}
	}
	if got := st.Get(event.CountLost, StatUnseen) + st.Get(event.CountUnpaired, StatInFlight); got != uint64(noCompletion) || got < first {
		t.Errorf("unseen + in flight = %d, want the %d events without completion (%d of them the first reads); stats %+v",
			got, noCompletion, first, st.Sorted())
	}
	if st.Get(event.CountInfo, StatStale) == 0 {
		t.Errorf("%q = 0: no later read reused a first read's address", StatStale)
	}
}
