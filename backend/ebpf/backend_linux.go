package ebpf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf/blockio"
	"github.com/iotrace/iotrace/backend/ebpf/internal/phase"
	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
	"github.com/iotrace/iotrace/backend/ebpf/marker"
	"github.com/iotrace/iotrace/backend/ebpf/procfs"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
)

// lockedSink serialises the syscall reader and the block tracer, and
// remembers the first error.
type lockedSink struct {
	mu  sync.Mutex
	s   event.Sink
	err error
}

func (l *lockedSink) Begin(h *event.Header) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keep(l.s.Begin(h))
}

func (l *lockedSink) Event(e *event.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return l.keep(l.s.Event(e))
}

func (l *lockedSink) Fact(f *event.Fact) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return l.keep(l.s.Fact(f))
}

func (l *lockedSink) End(t *event.Trailer) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.End(t)
}

func (l *lockedSink) keep(err error) error {
	if err != nil && l.err == nil {
		l.err = err
	}
	return err
}

func (l *lockedSink) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// run is the state of one Run.
type run struct {
	b      *Backend
	opts   backend.Options
	sink   *lockedSink
	pr     *probes
	tr     *tracker
	fs     *procfs.FS
	origin uint64
	stats  event.Stats

	// in merges the ring buffer's records with the per-CPU slots' (nil:
	// no slots, records go to the tracker as read; intake.go).
	in *intake

	// blocks hands block events to the reader goroutine (handover_linux.go).
	blocks *blockHandover
	// bt traces block I/O (nil: not traced, or stopped); btDone has its
	// Run's error, btStop ends it. blockErr is why block I/O is not
	// traced when it was asked for.
	bt       *blockio.Tracer
	btDone   chan error
	btStop   context.CancelFunc
	blockErr error

	marks  chan marker.Mark
	nmarks uint64
	// marksDropped counts markers dropped because the reader was behind.
	marksDropped atomic.Uint64
	// savesRefused counts save requests from senders that may not ask.
	savesRefused atomic.Uint64
	warnedAt     uint64
	nextWarn     time.Time

	// noEnterAtStop is the "exits without their enter" counter just before
	// the enter side was detached at stop (stopping is then true): exits
	// counted after it are calls begun after tracing stopped, not before
	// it started.
	noEnterAtStop uint64
	stopping      bool
	// wakeupBytes is the syscall ring's forced-wakeup threshold (the
	// block programs' page-cache records share that ring).
	wakeupBytes uint64
	// wb waits for the command's writeback (writeback_linux.go).
	wb writebackWait

	// tables are the unwind tables, with --stacks user walked by them
	// (unwind_linux.go); procRoot is where procfs is.
	tables   *unwindTables
	procRoot string

	// skipWarn decides when the programs' skipped runs are warned
	// about; nextSkipCheck is when they are read again.
	skipWarn      growthWarner
	nextSkipCheck time.Time
	// nextProgress is when opts.Progress is due.
	nextProgress time.Time

	reaper reaper // reap_linux.go

	phases *phase.Timer // start-up's, counters at the end of start-up
	// blk is the block programs' load under way (nil: no block layer).
	blk *blockLoad
}

// Run implements backend.Backend. It loads and attaches the programs,
// takes the /proc rundown, starts opts.Command when set, and streams
// events to sink until ctx is done, the command exits or opts.Duration
// elapses; then it detaches everything, drains the ring buffer and ends
// the stream with the Stats of what was lost, unpaired and unresolved.
func (b *Backend) Run(ctx context.Context, opts backend.Options, sink event.Sink) error {
	t0 := time.Now()
	if err := b.Available(); err != nil {
		return err
	}
	kt := btf.NewCache()
	go warmKernelTypes(kt)
	kraw := &rawbtf.Shared{}
	defer kraw.Close()
	if err := ensureTracefs(opts.Warn); err != nil {
		return err
	}
	procRoot := b.cfg.ProcRoot
	if procRoot == "" {
		procRoot = "/proc"
	}
	self := uint32(os.Getpid())
	fs := &procfs.FS{Root: procRoot}
	cmdMode := len(opts.Command) > 0
	wantFile := opts.WantLayer(event.LayerFile)
	wantBlock := opts.WantLayer(event.LayerBlock)

	pidSet := selectPids(fs, opts, self)
	size := opts.BufferSize
	if size <= 0 {
		size = DefaultBufferSize
	}
	frac := b.cfg.WakeupFraction
	if frac <= 0 {
		frac = 4
	}
	rs := ringSize(size)
	lc := loadConfig{
		selfTgid:    self,
		filterPids:  cmdMode || pidSet != nil,
		followForks: cmdMode || opts.FollowChildren,
		followSelf:  cmdMode,
		comms:       opts.Comms,
		cause:       wantFile && wantBlock,
		ringSize:    int(rs),
		wakeupBytes: uint64(rs) / uint64(frac),
		stacks:      opts.Stacks,
		unwind:      opts.Stacks&backend.StacksUser != 0 && opts.StackWalk == backend.WalkTables && runtime.GOARCH == "amd64",
		threadSlots: b.cfg.ThreadSlots,
		kernelTypes: kt,
		rawKernel:   kraw,
	}
	lc.attach = attachConfig{file: wantFile, uring: wantFile && asyncWanted(opts.Ops), iowait: wantFile && wantBlock}
	ph := phase.New(startupPrefix)
	tl := time.Now()
	pr, err := createProbes(lc)
	if err != nil {
		return err
	}
	defer pr.close()
	ph.Since("create system-call maps", tl)
	ls := &lockedSink{s: sink}
	var blk *blockLoad
	if wantBlock {
		bo := blockOptions(pr, &opts, ls, lc.wakeupBytes, wantFile, lc.unwind, cmdMode || pidSet != nil)
		bo.RawKernel = kraw
		blk = startBlockLoad(bo)
		defer blk.close()
	}
	tp := time.Now()
	if err := pr.loadPrograms(); err != nil {
		return err
	}
	ph.Since("load system-call programs", tp)
	if pidSet != nil {
		pids := make([]uint32, 0, len(pidSet))
		for p := range pidSet {
			pids = append(pids, p)
		}
		if err := pr.addPids(pids); err != nil {
			return err
		}
	}

	origin := bootNanos()
	wall := time.Now().UnixNano()
	fs.Origin = int64(origin)
	host, _ := os.Hostname()
	hdr := event.Header{
		Source:      event.SourceEBPF,
		OS:          "linux",
		OSVersion:   kernelRelease(),
		Hostname:    host,
		CPUs:        uint32(pr.ncpu),
		PointerSize: 8,
		StartWall:   wall,
		Clock:       event.Clock{Kind: event.ClockBoottime, Freq: 1_000_000_000, Origin: int64(origin)},
		Command:     strings.Join(opts.Command, " "),
		Tool:        "iotrace ebpf",
	}
	if wantFile {
		hdr.Layers = hdr.Layers.With(event.LayerFile)
	}
	if wantBlock {
		hdr.Layers = hdr.Layers.With(event.LayerBlock)
	}
	if err := ls.Begin(&hdr); err != nil {
		return err
	}
	r := &run{b: b, opts: opts, sink: ls, pr: pr, fs: fs, origin: origin, wakeupBytes: lc.wakeupBytes, phases: ph, blk: blk}
	r.tr = newTracker(ls, origin, fs)
	r.in = r.intake()
	if cmdMode {
		r.tr.launches(self)
	}
	r.tr.block = lc.cause
	if opts.Stacks != 0 {
		r.setupStacks(procRoot, lc.unwind)
	}
	if lc.unwind {
		r.setupUnwind(procRoot)
		var pids []uint32
		if !cmdMode {
			all, _ := fs.Pids()
			for _, p := range all {
				if p != self && (pidSet == nil || pidSet[p]) {
					pids = append(pids, p)
				}
			}
		}
		r.preloadTables(opts.Command, pids)
		r.tables.start(1)
		defer r.tables.stop()
	}
	if len(opts.Ops) > 0 {
		var ops [event.NumOps]bool
		for _, o := range opts.Ops {
			if int(o) < event.NumOps {
				ops[o] = true
			}
		}
		r.tr.ops = &ops
	}
	return r.finish(r.trace(ctx, t0, cmdMode, wantFile, wantBlock, pidSet))
}

// selectPids returns the processes selected by pid (and, with
// FollowChildren, their existing descendants), never iotrace itself; nil
// when no pid was given.
func selectPids(fs *procfs.FS, opts backend.Options, self uint32) map[uint32]bool {
	if len(opts.Pids) == 0 {
		return nil
	}
	pidSet := map[uint32]bool{}
	for _, p := range opts.Pids {
		pidSet[p] = true
	}
	if opts.FollowChildren {
		parents := map[uint32]uint32{}
		if pids, err := fs.Pids(); err == nil {
			for _, p := range pids {
				if info, ok := fs.Process(p); ok {
					parents[p] = info.PPid
				}
			}
		}
		pidSet = procfs.Descendants(parents, opts.Pids)
	}
	delete(pidSet, self)
	return pidSet
}

// finish ends the stream of a trace that ended with err: the tracker's,
// the unwinder's, the reaper's and the kernel's counters (the programs'
// skipped runs among them) into the trailer's Stats, then End. It returns
// the first error.
func (r *run) finish(err error) error {
	r.tr.stats(&r.stats)
	if r.in != nil {
		r.in.stats(&r.stats)
	}
	r.unwindStats(&r.stats)
	r.reaper.stats(&r.stats)
	if cs, cerr := r.pr.counters(); cerr == nil {
		if r.stopping {
			// Calls the traced processes began once the enter side was
			// detached exit without an enter: they started after the
			// trace, not before it.
			after := sum(cs[cExitNoEnter]) - r.noEnterAtStop
			cs[cExitNoEnter] = []uint64{r.noEnterAtStop}
			r.stats.Add(event.CountInfo, "syscalls begun while stopping (exit seen, enter no longer traced)", after)
		}
		addCounters(&r.stats, cs)
	} else if err == nil {
		err = cerr
	}
	if sk, serr := r.pr.skipped(); serr == nil {
		addSkipped(&r.stats, sk)
	} else if err == nil {
		err = serr
	}
	if r.nmarks > 0 {
		r.stats.Add(event.CountInfo, "markers", r.nmarks)
	}
	if n := r.marksDropped.Load(); n > 0 {
		r.stats.Add(event.CountDropped, "markers dropped: the reader was behind", n)
	}
	if n := r.savesRefused.Load(); n > 0 {
		r.stats.Add(event.CountInfo, "save requests refused: the sender is neither root nor the recording's user", n)
	}
	if err == nil {
		err = r.sink.failed()
	}
	end := r.tr.lastTime
	if now := int64(bootNanos() - r.origin); now > end {
		end = now
	}
	tr := event.Trailer{End: end, Stats: r.stats}
	if r.blockErr != nil {
		// Block I/O was asked for, and could not be traced.
		tr.Layers = event.LayersOf(event.LayerFile)
	}
	if eerr := r.sink.End(&tr); err == nil {
		err = eerr
	}
	return err
}

// trace attaches, takes the rundown, runs the command and reads until a
// stop condition, then detaches and drains: attach, rundown (while the
// block programs load: openBlock), startBlock, listenMarks, startCommand,
// read, stop.
func (r *run) trace(ctx context.Context, t0 time.Time, cmdMode, wantFile, wantBlock bool, pidSet map[uint32]bool) error {
	ta := time.Now()
	if err := r.attach(wantFile, wantBlock); err != nil {
		return err
	}
	r.phases.Since("attach system-call programs", ta)
	// Rundown (name what is open already) while the block programs load:
	// the table is not touched by anything else until the reader starts.
	rundownDone := make(chan struct{})
	go func() {
		defer close(rundownDone)
		defer r.phases.Since("rundown (/proc)", time.Now())
		r.rundown(cmdMode, pidSet)
	}()
	btCtx, btStop := context.WithCancel(context.Background())
	defer btStop()
	r.btStop = btStop
	if wantBlock {
		tb := time.Now()
		err := r.openBlock(wantFile)
		r.phases.Since("wait for and attach block programs", tb)
		if err != nil {
			<-rundownDone
			return err
		}
		if bt := r.bt; bt != nil {
			defer bt.Close()
		}
	}
	<-rundownDone
	r.startBlock(btCtx)
	if ml := r.listenMarks(); ml != nil {
		defer ml.Close()
	}
	r.stats.Set(event.CountInfo, "startup (load, attach, rundown) µs", uint64(time.Since(t0).Microseconds()))
	r.phases.AddTo(&r.stats)

	var cmdDone chan struct{}
	if cmdMode {
		done, exited, err := r.startCommand()
		if err != nil {
			r.drain()
			_ = r.stopBlock()
			return err
		}
		defer exited()
		cmdDone = done
	}
	// Wake the reader as soon as the command exits or ctx is done, not
	// at its next poll: the records before are read first.
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		select {
		case <-cmdDone:
		case <-ctx.Done():
		case <-quit:
			return
		}
		_ = r.pr.rd.Flush()
	}()
	var timeout <-chan time.Time
	if r.opts.Duration > 0 {
		tm := time.NewTimer(r.opts.Duration)
		defer tm.Stop()
		timeout = tm.C
	}
	stop := func() bool {
		select {
		case <-ctx.Done():
			return true
		case <-cmdDone:
			return r.commandDone()
		case <-timeout:
			return true
		default:
			return r.sink.failed() != nil
		}
	}
	poll := r.b.cfg.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	return r.stop(r.read(poll, stop), poll)
}

// attach enables the system calls and the programs the layers and ops
// need, and lists what this kernel lacks.
func (r *run) attach(wantFile, wantBlock bool) error {
	ac := attachConfig{file: wantFile, ops: r.tr.ops, uring: wantFile && asyncWanted(r.opts.Ops), iowait: wantFile && wantBlock}
	if err := r.pr.attach(ac); err != nil {
		return err
	}
	for _, m := range r.pr.missing {
		r.stats.Add(event.CountInfo, "not traced here: "+m, 1)
	}
	return nil
}

// openBlock attaches block I/O tracing (package blockio) once its
// programs are loaded (r.blk, begun beside the system-call programs). A
// failure is an error when block I/O is all that was asked for, else a
// warning (counted) and the trace goes on without it.
func (r *run) openBlock(wantFile bool) error {
	bt, err := r.blk.wait()
	r.phases.Add("load block programs (beside the system-call programs)", r.blk.took)
	if err == nil {
		ta := time.Now()
		if err = bt.Attach(int64(r.origin)); err != nil {
			_ = bt.Close()
		}
		r.phases.Since("attach block programs", ta)
	}
	if err != nil {
		if !wantFile {
			return fmt.Errorf("ebpf: block I/O tracing: %w", err)
		}
		r.opts.Warnf(fmt.Sprintf("block I/O not traced: %v", err))
		r.blockErr = err
		r.tr.block = false
		return nil
	}
	r.bt = bt
	r.tr.pc.fillDone = bt.FillDone
	for _, f := range bt.Facts() {
		f := f
		_ = r.sink.Fact(&f)
	}
	return nil
}

// startBlock starts reading block I/O (after the rundown, which fills the
// table the block events are named from; the block ring buffer holds what
// comes meanwhile). The events go to the reader through r.blocks
// (handover_linux.go).
func (r *run) startBlock(ctx context.Context) {
	bt := r.bt
	if bt != nil {
		r.blocks = newBlockHandover()
		r.btDone = make(chan error, 1)
		ops := r.tr.ops
		go func() {
			r.btDone <- bt.Run(ctx, func(e *event.Event) {
				if ops != nil && !ops[e.Op] {
					return
				}
				r.blocks.offer(e, r.sink)
			})
		}()
	}
	if r.blockErr != nil {
		r.stats.Add(event.CountInfo, "block I/O not traced: "+r.blockErr.Error(), 1)
	}
}

// stopBlock stops block I/O tracing once the system-call records are all
// read: it hands over what the block tracer still delivers while it
// drains, then the rest, and merges its counts.
func (r *run) stopBlock() error {
	if r.bt == nil {
		return nil
	}
	r.btStop()
	err := r.blocks.finish(r.tr, r.btDone)
	r.stats.Merge(r.bt.Stats())
	if n := r.blocks.overflow.Load(); n != 0 {
		r.stats.Add(event.CountUnresolved, statBlockOverflow, n)
	}
	r.bt = nil
	return err
}

// listenMarks listens for `iotrace mark` (unless the backend was told not
// to); the marks go to the reader through r.marks, save requests refused
// to the sender are counted. The listener is for the caller to close.
func (r *run) listenMarks() *marker.Listener {
	dir := r.b.cfg.MarkerDir
	if dir == "-" {
		return nil
	}
	if dir == "" {
		dir = marker.DefaultDir
	}
	ml, err := marker.Listen(dir)
	if err != nil {
		r.opts.Warnf(fmt.Sprintf("iotrace mark will not reach this trace: %v", err))
		return nil
	}
	r.marks = make(chan marker.Mark, 64)
	go func() {
		for {
			m, err := ml.Read()
			if err != nil {
				return
			}
			if m.SaveRefused {
				r.savesRefused.Add(1)
			}
			select {
			case r.marks <- m:
			default: // the reader is behind; drop (counted) rather than block
				r.marksDropped.Add(1)
			}
		}
	}()
	return ml
}

// startCommand starts the command, traced from its first instruction: its
// fork is seen by the sched_process_fork program, which adds it to the
// pid filter. done is closed when it exits; exited, called when tracing
// ends, reports its exit status (or that it still runs).
func (r *run) startCommand() (done chan struct{}, exited func(), err error) {
	opts := &r.opts
	cmd := exec.Command(opts.Command[0], opts.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if opts.CommandStdout != nil {
		cmd.Stdout = opts.CommandStdout
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", opts.Command[0], err)
	}
	if opts.CommandStarted != nil {
		opts.CommandStarted(cmd.Process.Pid)
	}
	done = make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	exited = func() {
		select {
		case <-done:
			exit, ok := exitStatus(waitErr)
			if !ok {
				opts.Warnf(fmt.Sprintf("wait for %s: %v", opts.Command[0], waitErr))
				return
			}
			r.stats.Set(event.CountInfo, "command exit status", uint64(exit.Status))
			if opts.CommandExited != nil {
				opts.CommandExited(exit)
			}
		default:
			opts.Warnf(fmt.Sprintf("%s (pid %d) is still running, no longer traced", opts.Command[0], cmd.Process.Pid))
		}
	}
	return done, exited, nil
}

// stop ends a trace whose reading ended with err: no new system calls,
// those in flight let exit, the block events handed over, the rest
// detached, what is left drained, the calls and AIO requests still in
// flight emitted as such, block tracing stopped. It returns the first
// error.
func (r *run) stop(err error, poll time.Duration) error {
	pr := r.pr
	if cs, cerr := pr.counters(); cerr == nil {
		r.noEnterAtStop, r.stopping = sum(cs[cExitNoEnter]), true
	}
	ph := phase.New(stopPrefix)
	defer ph.AddTo(&r.stats)
	pr.detachEnters()
	ph.Done("detach sys_enter")
	if err == nil {
		err = r.letCallsExit(2 * poll)
	}
	ph.Done("let calls in flight exit")
	// The block tracer drains and stops (waiting for the bios still in
	// flight) beside the rest of this stop: the calls that queue bios
	// have ended, or are reported in flight. stopBlock collects it.
	if r.bt != nil {
		r.btStop()
	}
	if err == nil {
		err = r.flushBlocks()
	}
	ph.Done("flush block events")
	pr.detach()
	ph.Done("detach the rest")
	if err == nil {
		err = r.readFor(0)
	}
	if err == nil {
		err = sinkNil(r.pump(true))
	}
	r.flushMarks()
	ph.Done("drain")
	inflight, ierr := pr.inFlight()
	for _, rec := range inflight {
		r.tr.syscall(&rec, false)
	}
	if len(inflight) != 0 {
		r.stats.Add(event.CountUnpaired, statCallsInFlight, uint64(len(inflight)))
	}
	if ierr != nil {
		r.opts.Warnf(ierr.Error())
		r.stats.Add(event.CountInfo, "system calls in flight at stop not reported: "+ierr.Error(), 1)
	}
	aios, aerr := pr.aioInFlight()
	for i := range aios {
		r.tr.aioRecord(&aios[i], false)
	}
	if len(aios) != 0 {
		r.stats.Add(event.CountUnpaired, "AIO requests in flight when tracing stopped (submitted, not reaped)", uint64(len(aios)))
	}
	if aerr != nil {
		r.opts.Warnf(aerr.Error())
		r.stats.Add(event.CountInfo, "AIO requests in flight at stop not reported: "+aerr.Error(), 1)
	}
	ph.Done("calls and requests in flight")
	if berr := r.stopBlock(); err == nil {
		err = berr
	}
	ph.Done("stop block tracing")
	return err
}

// statCallsInFlight counts the calls reported in flight at stop (their
// events flagged FlagNoCompletion).
const statCallsInFlight = "system calls in flight when tracing stopped (entered, no exit)"

// letCallsExit reads the ring buffer while system calls entered before
// the enter side was detached are still in flight, up to max: the calls
// that end meanwhile are reported whole, the others as in flight at stop.
// When none is in flight (a command that exited, an idle process) it
// does not wait.
func (r *run) letCallsExit(max time.Duration) error {
	deadline := time.Now().Add(max)
	for step := time.Millisecond; ; step = min(2*step, max/4) {
		if err := r.readFor(0); err != nil {
			return err
		}
		calls, err := r.pr.inFlight()
		if (err == nil && len(calls) == 0) || !time.Now().Before(deadline) {
			return nil
		}
		if err := r.readFor(min(step, time.Until(deadline))); err != nil {
			return err
		}
	}
}

// exitStatus turns the result of exec.Cmd.Wait into how the command
// ended: its exit status as a shell reports it (the exit code, or 128
// plus the signal number) and the signal's name. ok is false when the
// command's status is unknown.
func exitStatus(waitErr error) (exit backend.CommandExit, ok bool) {
	if waitErr == nil {
		return exit, true
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return exit, false
	}
	if ws, isWS := ee.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
		return backend.CommandExit{Status: 128 + int(ws.Signal()), Signal: unix.SignalName(ws.Signal())}, true
	}
	if c := ee.ExitCode(); c >= 0 {
		return backend.CommandExit{Status: c}, true
	}
	return exit, false
}

// rundown snapshots /proc: every traced process's name, cwd and open
// descriptors become rundown facts. iotrace's own table is kept quietly so
// that the command it forks inherits names for its standard descriptors.
func (r *run) rundown(cmdMode bool, pidSet map[uint32]bool) {
	self := uint32(os.Getpid())
	// Of its own descriptors only those without close-on-exec are read
	// (asked of the descriptor itself): by then iotrace holds a hundred
	// or more of BPF objects, all close-on-exec, and reading each from
	// /proc took 13 ms of the start-up. Under another /proc root (tests)
	// the pids are that root's: all are read.
	var inherited func(fd int32) bool
	if r.fs.Root == "/proc" {
		inherited = func(fd int32) bool {
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			return err != nil || flags&unix.FD_CLOEXEC == 0
		}
	}
	if p, ok := r.fs.SnapshotFDs(self, inherited); ok {
		for fd, d := range p.FDs {
			if d.Cloexec {
				delete(p.FDs, fd) // gone in the command after its exec
			}
		}
		r.tr.table.Rundown(p.ProcInfo, p.Cwd, p.FDs, 0, true)
	}
	if cmdMode || r.b.cfg.NoRundown {
		return
	}
	pids, err := r.fs.Pids()
	if err != nil {
		r.opts.Warnf(fmt.Sprintf("rundown: %v", err))
		return
	}
	comms := map[string]bool{}
	for _, c := range r.opts.Comms {
		if len(c) > commLen-1 {
			c = c[:commLen-1]
		}
		comms[c] = true
	}
	var n uint64
	for _, pid := range pids {
		if pid == self || (pidSet != nil && !pidSet[pid]) {
			continue
		}
		p, ok := r.fs.Snapshot(pid)
		if !ok || (len(comms) > 0 && !comms[p.Comm]) {
			continue
		}
		ts := int64(bootNanos() - r.origin)
		r.tr.table.Rundown(p.ProcInfo, p.Cwd, p.FDs, ts, false)
		if r.tr.mods != nil {
			if b, err := r.tr.readMaps(pid); err == nil {
				if err := r.tr.mods.fromMaps(pid, p.Start, ts, true, b); err != nil {
					r.tr.mapsErrs++
				}
			}
		}
		n++
	}
	r.stats.Add(event.CountInfo, "processes in the rundown", n)
}

// read consumes the ring buffer until stop reports true.
func (r *run) read(poll time.Duration, stop func() bool) error {
	var rec ringbuf.Record
	rd := r.pr.rd
	deadline := time.Now().Add(poll)
	rd.SetDeadline(deadline)
	for n := 1; ; n++ {
		err := rd.ReadInto(&rec)
		switch {
		case err == nil:
			if herr := r.ingest(rec.RawSample); herr != nil {
				return nil // the sink failed; Run reports it
			}
			// While the reader polls, the slots' writers do not wake it:
			// a ring buffer never empty must not keep it from them.
			if n&4095 != 0 && !r.blocks.halfFull() && (r.in == nil || !r.in.kicked) &&
				(n&63 != 0 || r.in == nil || !r.in.polling || time.Now().Before(deadline)) {
				continue
			}
		case woken(err):
		default:
			return fmt.Errorf("ebpf: read ring buffer: %w", err)
		}
		if err := r.pump(false); err != nil {
			return sinkNil(err)
		}
		if err := r.flushBlocks(); err != nil {
			return sinkNil(err)
		}
		now := time.Now()
		wait := poll
		if r.in != nil {
			wait = r.in.wait(now, poll)
		}
		deadline = now.Add(wait)
		// The reader waits whole milliseconds, rounded down: a deadline
		// less than 1 ms away returns at once (a 1 ms poll spun).
		rd.SetDeadline(deadline.Add(time.Millisecond - 1))
		r.flushMarks()
		if stop() {
			r.checkLoss(true)
			return nil
		}
		r.checkLoss(false)
		r.checkSkipped()
		r.reap(time.Now())
		r.progress()
	}
}

// progress calls opts.Progress, when set, at most every
// backend.ProgressEvery with the counters so far, composed as Run
// composes the trailer's.
func (r *run) progress() {
	now := time.Now()
	if r.opts.Progress == nil || now.Before(r.nextProgress) {
		return
	}
	r.nextProgress = now.Add(backend.ProgressEvery)
	var s event.Stats
	s.Merge(r.stats)
	r.tr.stats(&s)
	r.unwindStats(&s)
	r.reaper.stats(&s)
	if cs, err := r.pr.counters(); err == nil {
		addCounters(&s, cs)
	}
	if sk, err := r.pr.skipped(); err == nil {
		addSkipped(&s, sk)
	}
	if r.bt != nil {
		s.Merge(r.bt.Stats())
	}
	if r.blocks != nil {
		if n := r.blocks.overflow.Load(); n != 0 {
			s.Add(event.CountUnresolved, statBlockOverflow, n)
		}
	}
	r.opts.Progress(s)
}

// readFor drains the ring buffer, waiting up to d for more records.
func (r *run) readFor(d time.Duration) error {
	var rec ringbuf.Record
	rd := r.pr.rd
	rd.SetDeadline(time.Now().Add(d))
	for {
		err := rd.ReadInto(&rec)
		switch {
		case err == nil:
			if herr := r.ingest(rec.RawSample); herr != nil {
				return nil
			}
		case woken(err):
			return sinkNil(r.pump(false))
		default:
			return fmt.Errorf("ebpf: read ring buffer: %w", err)
		}
	}
}

// intake returns the merge of the ring buffer's records and the per-CPU
// slots' (nil without slots). A release can be long behind a slow sink:
// the block events queued meanwhile are taken every 256 records, as the
// ring buffer's reader takes them (readAvailable).
func (r *run) intake() *intake {
	if r.pr.slots == nil {
		return nil
	}
	var n int
	return newIntake(r.pr.slots, func(b []byte) error {
		err := r.tr.handle(b)
		if n++; n&255 == 0 && r.blocks.halfFull() {
			r.blocks.take(r.tr)
		}
		return err
	})
}

// ingest takes a record read from the ring buffer: to the intake, or
// with no per-CPU slots straight to the tracker.
func (r *run) ingest(b []byte) error {
	if r.in == nil {
		return r.tr.handle(b)
	}
	r.in.ring(b)
	return nil
}

// pump reads the ring buffer's records available now, then hands the
// tracker, in time order, the records of the ring buffer and of every
// CPU's slots written before now less holdBack (all: every record
// there). Without slots it does nothing.
func (r *run) pump(all bool) error {
	if r.in == nil {
		return nil
	}
	upTo := bootNanos() - holdBack
	if err := r.readAvailable(); err != nil {
		return err
	}
	if all {
		upTo = ^uint64(0)
	}
	return r.in.release(upTo)
}

// sinkNil turns errSink into nil: the sink's error is Run's to report.
func sinkNil(err error) error {
	if errors.Is(err, errSink) {
		return nil
	}
	return err
}

// woken reports whether a read ended because its deadline passed or the
// reader was flushed (Flush: the command exited): every record before
// was read.
func woken(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrFlushed)
}

// drain empties the ring buffer without waiting.
func (r *run) drain() { _ = r.readFor(0) }

func (r *run) flushMarks() {
	for {
		select {
		case m := <-r.marks:
			r.mark(m)
		default:
			return
		}
	}
}

func (r *run) mark(m marker.Mark) {
	e := event.New()
	r.nmarks++
	e.ID = r.nmarks<<2 | blockio.KindMarker
	e.Source = event.SourceEBPF
	e.Layer = event.LayerMarker
	e.Op = event.OpMarker
	e.Native = "mark"
	ts := int64(m.Time - r.origin)
	if m.Time < r.origin || m.Time == 0 {
		ts = int64(bootNanos() - r.origin)
	}
	e.Time = ts
	e.Pid, e.Tid = m.Pid, m.Tid
	if p := r.tr.table.Ensure(m.Pid, ts); p != nil {
		e.Comm, e.ProcStart = p.Comm, p.Start
	}
	e.Status = event.StatusOK
	e.Note = m.Text
	_ = r.sink.Event(&e)
}

// checkLoss warns as soon as records are lost (the counters are read every
// 50 ms until then), then at most every 5 s while the loss grows. final
// forces the check when the trace stops, so a short trace that lost
// records still warns before its summary.
func (r *run) checkLoss(final bool) {
	now := time.Now()
	if now.Before(r.nextWarn) && !(final && r.warnedAt == 0) {
		return
	}
	r.nextWarn = now.Add(50 * time.Millisecond)
	cs, err := r.pr.counters()
	if err != nil {
		return
	}
	lost := lostTotal(cs)
	if lost > r.warnedAt {
		r.opts.Warnf(lossWarning(lost, r.pr.objs.Rb.MaxEntries()))
		r.warnedAt = lost
		r.nextWarn = now.Add(5 * time.Second)
	}
}

// checkSkipped reads the programs' skipped runs once a second and warns
// when they grew: at once the first time, then at most once a minute (a
// nested completion on a busy disk skips runs every second; the trailer
// counts them by program at the end).
func (r *run) checkSkipped() {
	now := time.Now()
	if now.Before(r.nextSkipCheck) {
		return
	}
	r.nextSkipCheck = now.Add(time.Second)
	sk, err := r.pr.skipped()
	if err != nil {
		return
	}
	var total uint64
	for _, n := range sk {
		total += n
	}
	if r.skipWarn.due(now, total) {
		r.opts.Warnf(skippedWarning(sk))
	}
}

// setupStacks prepares the stack and module tables (--stacks): the
// kernel's symbols (read once, written into the trace as its stacks need
// them) and its build ID as a module of pid 0.
func (r *run) setupStacks(procRoot string, unwind bool) {
	loadKsyms := func() *symbolize.Kernel {
		f, err := os.Open("/proc/kallsyms")
		if err != nil {
			r.tr.ksymErr = err.Error()
			return nil
		}
		defer f.Close()
		k, err := symbolize.ParseKallsyms(f)
		if err != nil {
			r.tr.ksymErr = err.Error()
			return nil
		}
		return k
	}
	var readUser func(int32) ([]uint64, uint32, error)
	if unwind {
		readUser = r.pr.readUStack
	}
	r.tr.stacks = newStackTable(r.pr.readStack, readUser, r.tr.fact, loadKsyms)
	r.tr.mods = newModuleTable(r.tr.fact)
	r.tr.readMaps = func(pid uint32) ([]byte, error) {
		return os.ReadFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "maps"))
	}
	// The command runs iotrace's code between its fork and its exec.
	if b, err := r.tr.readMaps(uint32(os.Getpid())); err == nil {
		r.tr.mods.adopt(uint32(os.Getpid()), b)
	}
	if b, err := os.ReadFile("/sys/kernel/notes"); err == nil {
		if id := kernelBuildID(b); id != "" {
			r.tr.fact(&event.Fact{Kind: event.FactModule, Rundown: true, Name: "[kernel]", Detail: "gnu:" + id})
		}
	}
}
