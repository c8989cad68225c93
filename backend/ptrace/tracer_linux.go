//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf"
	"github.com/iotrace/iotrace/backend/ebpf/procfs"
	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
)

// thread is one traced thread.
type thread struct {
	tid, pid int // pid: its process (thread group)
	// in is set between a traced call's seccomp stop and its exit stop;
	// sc is that call, row its row.
	in  bool
	sc  ebpf.Syscall
	row *systable.Row
	// attached is set once its first stop (the one every new tracee
	// starts with) is seen, or for the command's process itself.
	attached bool
}

// tracer is the state of one trace: every traced thread, by tid. Its
// methods run on one locked OS thread (ptrace requests must come from
// the thread that attached).
type tracer struct {
	opts    backend.Options
	dec     *ebpf.Decoder
	fs      *procfs.FS
	proc    string
	arch    uint32
	calls   []systable.Call // by call number
	threads map[int]*thread
	nthread map[int]int  // live threads per process
	early   map[int]bool // new tids stopped before their parent's fork event
	live    *liveSet
	root    int
	started bool // the command's exec reached
	rootWS  unix.WaitStatus
	rootEnd bool
	nextID  uint64
	buf     []byte
	stacks  bool // user stacks walked at each call

	// Counters for the trailer.
	otherABI, noExit, setuid, seccompMissed uint64
	async                                   map[string]uint64
	warnedSetuid                            bool
}

// liveSet holds the traced processes, for the goroutine that kills them
// when the trace is stopped.
type liveSet struct {
	mu   sync.Mutex
	pids map[int]bool
}

func (l *liveSet) add(pid int) {
	l.mu.Lock()
	l.pids[pid] = true
	l.mu.Unlock()
}

func (l *liveSet) remove(pid int) {
	l.mu.Lock()
	delete(l.pids, pid)
	l.mu.Unlock()
}

// kill sends SIGKILL to every traced process.
func (l *liveSet) kill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for pid := range l.pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

func newTracer(opts backend.Options, dec *ebpf.Decoder, fs *procfs.FS, root int, live *liveSet) *tracer {
	t := &tracer{opts: opts, dec: dec, fs: fs, proc: fs.Root, arch: auditArch[runtime.GOARCH],
		threads: map[int]*thread{}, nthread: map[int]int{}, early: map[int]bool{}, live: live,
		root: root, buf: make([]byte, pathMax), async: map[string]uint64{}, stacks: opts.Stacks&backend.StacksUser != 0}
	for i := range systable.Table {
		if nr, ok := systable.Table[i].Number(runtime.GOARCH); ok {
			for len(t.calls) <= nr {
				t.calls = append(t.calls, 0)
			}
			t.calls[nr] = systable.Call(i + 1)
		}
	}
	t.threads[root] = &thread{tid: root, pid: root, attached: true}
	t.nthread[root] = 1
	live.add(root)
	return t
}

// wNoThread waits for the calling thread's children and tracees only
// (__WNOTHREAD): other children of iotrace are not reaped here.
const wNoThread = 0x20000000

// loop handles stops until no traced thread is left.
func (t *tracer) loop() {
	for len(t.threads) > 0 || len(t.early) > 0 {
		var ws unix.WaitStatus
		tid, err := unix.Wait4(-1, &ws, unix.WALL|wNoThread, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // ECHILD: none left
		}
		t.stop(tid, ws, bootNanos())
		if t.dec.Err() != nil {
			t.live.kill() // the sink failed: end the command
		}
	}
}

// stop handles one wait status of tid.
func (t *tracer) stop(tid int, ws unix.WaitStatus, now uint64) {
	th := t.threads[tid]
	if ws.Exited() || ws.Signaled() {
		t.gone(tid, th, ws, now)
		return
	}
	if !ws.Stopped() {
		return
	}
	if th == nil {
		// A new tracee's first stop, before its parent's fork event:
		// held until that event, so its process exists first.
		t.early[tid] = true
		return
	}
	sig, cause := ws.StopSignal(), int(ws>>16)
	switch {
	case sig == unix.SIGTRAP|0x80:
		t.exit(th, now)
		t.resume(th, 0)
	case cause == unix.PTRACE_EVENT_SECCOMP:
		t.enter(th, now)
	case cause == unix.PTRACE_EVENT_FORK || cause == unix.PTRACE_EVENT_VFORK || cause == unix.PTRACE_EVENT_CLONE:
		t.forked(th, cause, now)
		t.resume(th, 0)
	case cause == unix.PTRACE_EVENT_EXEC:
		th = t.execd(th, now)
		t.resume(th, 0)
	case cause == unix.PTRACE_EVENT_STOP:
		if !th.attached || sig == unix.SIGTRAP {
			th.attached = true // its first stop, or PTRACE_INTERRUPT's
			t.resume(th, 0)
			return
		}
		// A group stop (SIGSTOP, SIGTSTP...): the process stays
		// stopped until SIGCONT, as without a tracer.
		_ = ptrace(unix.PTRACE_LISTEN, tid, 0, 0)
	default:
		// A signal for the tracee: delivered.
		t.resume(th, int(sig))
	}
}

// resume lets th run to its next stop: the exit of the call it is in,
// or the next traced call.
func (t *tracer) resume(th *thread, sig int) {
	req := unix.PTRACE_CONT
	if th.in {
		req = unix.PTRACE_SYSCALL
	}
	_ = ptrace(req, th.tid, 0, uintptr(sig)) // ESRCH: killed meanwhile
}

// gone handles the end of thread tid; its process ends with its last
// thread.
func (t *tracer) gone(tid int, th *thread, ws unix.WaitStatus, now uint64) {
	delete(t.early, tid)
	if th == nil {
		return
	}
	if th.in {
		t.noExit++
		t.emit(th, false, now)
	}
	delete(t.threads, tid)
	if tid == t.root {
		t.rootWS, t.rootEnd = ws, true
	}
	if t.nthread[th.pid]--; t.nthread[th.pid] <= 0 {
		delete(t.nthread, th.pid)
		t.live.remove(th.pid)
		t.dec.Exit(uint32(th.pid), uint32(tid), now)
	}
}

// forked handles a fork, vfork or clone of th: the new thread or process
// is traced from its first instruction.
func (t *tracer) forked(th *thread, cause int, now uint64) {
	msg, err := unix.PtraceGetEventMsg(th.tid)
	if err != nil {
		return
	}
	ntid := int(msg)
	nt := &thread{tid: ntid, pid: ntid}
	isThread := false
	if cause == unix.PTRACE_EVENT_CLONE {
		_, err := os.Stat(t.proc + "/" + strconv.Itoa(th.pid) + "/task/" + strconv.Itoa(ntid))
		isThread = err == nil
	}
	if isThread {
		nt.pid = th.pid
	} else {
		var start uint64
		if b, err := os.ReadFile(t.proc + "/" + strconv.Itoa(ntid) + "/stat"); err == nil {
			if st, err := procfs.ParseStat(b); err == nil {
				start = st.StartTicks * (1_000_000_000 / procfs.ClockTicks)
			}
		}
		t.dec.Fork(uint32(th.pid), uint32(ntid), start, now, t.comm(ntid),
			kcmp(th.tid, ntid, kcmpFiles), kcmp(th.tid, ntid, kcmpFS))
		t.live.add(ntid)
	}
	t.threads[ntid] = nt
	t.nthread[nt.pid]++
	if t.early[ntid] {
		delete(t.early, ntid)
		nt.attached = true
		t.resume(nt, 0)
	}
}

// kcmp types (linux/kcmp.h).
const (
	kcmpFiles = 2
	kcmpFS    = 3
)

// kcmp reports whether processes a and b share the resource typ.
func kcmp(a, b, typ int) bool {
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), uintptr(typ), 0, 0, 0)
	return e == 0 && r == 0
}

// comm returns the name of tid.
func (t *tracer) comm(tid int) string {
	b, _ := os.ReadFile(t.proc + "/" + strconv.Itoa(tid) + "/comm")
	return string(bytes.TrimSuffix(b, []byte("\n")))
}

// execd handles the exec of th's process; a thread other than the leader
// that exec'd takes the leader's tid (its former tid is the event's
// message). It returns the thread now stopped.
func (t *tracer) execd(th *thread, now uint64) *thread {
	if msg, err := unix.PtraceGetEventMsg(th.tid); err == nil && int(msg) != th.tid {
		if old := t.threads[int(msg)]; old != nil {
			delete(t.threads, int(msg))
			t.nthread[th.pid]--
			if th.in {
				t.noExit++
				t.emit(th, false, now)
			}
			old.tid = th.tid
			old.attached = true
			t.threads[th.tid] = old
			th = old
		}
	}
	dir := t.proc + "/" + strconv.Itoa(th.tid)
	image, _ := os.Readlink(dir + "/exe")
	cmdline, _ := os.ReadFile(dir + "/cmdline")
	var st unix.Stat_t
	if image != "" && unix.Stat(image, &st) == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		t.setuid++
		if !t.warnedSetuid {
			t.warnedSetuid = true
			t.opts.Warnf(fmt.Sprintf("%s is set-user-ID or set-group-ID: traced, it runs without those privileges", image))
		}
	}
	t.dec.Exec(uint32(th.pid), now, t.comm(th.tid), image, cmdline)
	return th
}

// rundown names what the command's process has open before its exec:
// what it inherited from iotrace.
func (t *tracer) rundown(pid int, now uint64) {
	if p, ok := t.fs.Snapshot(uint32(pid)); ok {
		t.dec.Table().Rundown(p.ProcInfo, p.Cwd, p.FDs, t.dec.Time(now), false)
	}
}

// stats adds the tracer's counters to s.
func (t *tracer) stats(s *event.Stats) {
	s.Add(event.CountInfo, "block I/O: not traced (ptrace backend: file layer only)", 1)
	if t.otherABI != 0 {
		s.Add(event.CountLost, "calls of another ABI (i386, x32): not decoded", t.otherABI)
	}
	if t.noExit != 0 {
		s.Add(event.CountUnpaired, "calls without their exit (the thread died in the call, or the trace stopped)", t.noExit)
	}
	if t.setuid != 0 {
		s.Add(event.CountInfo, "set-user-ID or set-group-ID programs run without those privileges (traced)", t.setuid)
	}
	if t.seccompMissed != 0 {
		s.Add(event.CountLost, "traced calls whose arguments could not be read (the thread was gone)", t.seccompMissed)
	}
	for name, n := range t.async {
		s.Add(event.CountLost, name+" calls: their asynchronous requests are not traced by the ptrace backend", n)
	}
}

// bootNanos reads CLOCK_BOOTTIME, the eBPF backend's clock, as the
// monotonic clock (read without a system call) plus their difference at
// the first reading: a clock_gettime system call per stop was a tenth of
// the tracer's time. (The two differ by the time suspended, which a
// trace that spans a suspend then does not count.)
func bootNanos() uint64 {
	clockOnce.Do(func() {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
		clockBase, clockT0 = uint64(ts.Nano()), time.Now()
	})
	return clockBase + uint64(time.Since(clockT0))
}

var (
	clockOnce sync.Once
	clockBase uint64
	clockT0   time.Time
)
