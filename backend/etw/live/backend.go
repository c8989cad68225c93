package live

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Config configures the live ETW backend. The zero value uses the
// defaults.
type Config struct {
	// API is the Win32 API to use; nil means the operating system's
	// (available on Windows only). Tests pass a fake.
	API API
	// Flags are the kernel Flag* bits of the main session (default
	// DefaultFlags).
	Flags uint32
	// BufferSizeKB, MinBuffers and MaxBuffers size the session (defaults:
	// 1024 KB, 2 per processor, 64 + 4 per processor); backend.Options
	// BufferSize overrides BufferSizeKB.
	BufferSizeKB, MinBuffers, MaxBuffers uint32
	// ClockType is the session clock (default ClockQPC).
	ClockType uint32
	// RundownTimeout bounds the rundown session (default 3 s).
	RundownTimeout time.Duration
	// StopTimeout bounds the wait for the consumer after stopping (default
	// 5 s).
	StopTimeout time.Duration
	// QueueSize is the number of events in flight between the ETW thread
	// and the decoder (default 65,536; twice that with --stacks).
	QueueSize int
	// NoRundown skips the rundown session (names of files opened before
	// the trace then stay unresolved).
	NoRundown bool
	// FlushTimer is how often, in seconds, the main session delivers
	// buffers that are not full (default 1): it bounds how late an
	// event of a quiet processor arrives.
	FlushTimer uint32
	// ReorderWindow is how long an event is held to put the processors'
	// buffers back in time order (default: the flush timer plus one
	// second); negative passes events on in arrival order.
	ReorderWindow time.Duration
	// ReorderLimit bounds the events held for reordering (default
	// 524,288; twice that with --stacks); beyond it the oldest go out
	// early (counted).
	ReorderLimit int
}

// Backend is the live Windows ETW backend: a kernel session consumed in
// real time, decoded and resolved by the portable etw pipeline.
type Backend struct{ cfg Config }

// New returns the ETW backend.
func New(cfg Config) *Backend { return &Backend{cfg: cfg} }

// Name implements backend.Backend.
func (b *Backend) Name() string { return "etw" }

// Description implements backend.Backend.
func (b *Backend) Description() string {
	return "Windows ETW kernel session (FileIo, DiskIo, Process, Thread, Image), real time, pure Go"
}

func (b *Backend) api() (API, error) {
	if b.cfg.API != nil {
		return b.cfg.API, nil
	}
	return DefaultAPI()
}

// Available implements backend.Backend: the ETW API must exist (Windows
// 7 or later) and this process must be allowed to list sessions
// (administrator or Performance Log Users).
func (b *Backend) Available() error {
	api, err := b.api()
	if err != nil {
		return err
	}
	if major, minor, _ := api.OSVersion(); major < 6 || major == 6 && minor < 1 {
		return fmt.Errorf("Windows %d.%d: %w (the ETW kernel session needs Windows 7 or later)", major, minor, backend.ErrNotSupported)
	}
	if _, err := api.QueryAllTraces(); err != nil {
		if isErrno(err, ErrAccessDenied) {
			return fmt.Errorf("listing ETW sessions: %w: run iotrace elevated (administrator) or as a member of Performance Log Users", err)
		}
		return fmt.Errorf("listing ETW sessions: %w", err)
	}
	return nil
}

func (b *Backend) defaults(opts *backend.Options) Config {
	c := b.cfg
	if c.Flags == 0 {
		c.Flags = DefaultFlags
	}
	if opts.BufferSize > 0 {
		c.BufferSizeKB = uint32((opts.BufferSize + 1023) / 1024)
	}
	if c.BufferSizeKB == 0 {
		c.BufferSizeKB = 1024
	}
	cpus := uint32(runtime.NumCPU())
	if c.MinBuffers == 0 {
		c.MinBuffers = 2 * cpus
	}
	if c.MaxBuffers == 0 {
		c.MaxBuffers = 64 + 4*cpus
	}
	if c.ClockType == 0 {
		c.ClockType = ClockQPC
	}
	if c.RundownTimeout == 0 {
		c.RundownTimeout = 3 * time.Second
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 5 * time.Second
	}
	if c.FlushTimer == 0 {
		c.FlushTimer = 1
	}
	if c.ReorderWindow == 0 {
		c.ReorderWindow = time.Duration(c.FlushTimer)*time.Second + time.Second
	}
	if opts.Stacks != backend.StacksNone {
		// A stack walk follows most events: room for twice as many in
		// flight and in the reorder window.
		if c.QueueSize == 0 {
			c.QueueSize = 2 * defaultQueueSize
		}
		if c.ReorderLimit == 0 {
			c.ReorderLimit = 2 * defaultReorderLimit
		}
	}
	return c
}

// Stats counter names of a live trace.
const (
	StatSessionEventsLost = "etw: events lost by the session (EventsLost)"
	StatRealTimeBufLost   = "etw: real-time buffers lost by the session (RealTimeBuffersLost)"
	StatLogBufLost        = "etw: log buffers lost by the session (LogBuffersLost)"
	StatRTLostEvents      = "etw: RT_LostEvent notices received (events or buffers dropped before delivery)"
	StatQueueOverflow     = "etw: events dropped: decoder queue full (the decoder fell behind)"
	StatAfterClose        = "etw: events dropped: delivered after the consumer was given up (stop timeout)"
	StatRundownRecords    = "etw: rundown session records (files open before the trace)"
	StatRundownUnfinished = "etw: rundown session did not finish in time (names of files opened before the trace may be missing)"
	StatReceived          = "etw: events received from the session"
	StatMarkers           = "etw: markers"
	StatFilteredByProcess = "etw: events outside the traced processes (filtered)"
	StatReorderLate       = "etw: events delivered after the reorder window (passed on out of time order: pairing and links may miss them)"
	StatReorderForced     = "etw: events passed on before their reorder window ended (too many held)"
	StatReorderGaveUp     = "etw: image events passed on before their identity was read (held two reorder windows)"
	StatProcessNoImage    = "etw: running processes whose executable path Windows did not give (protected or gone): named by their image file name"
	StatCommandExit       = "command exit status"
)

// session is one running kernel session being consumed.
type session struct {
	api    API
	name   string
	handle SessionHandle
	trace  TraceHandle
	opened bool
	done   chan error // ProcessTrace's result
	stop   sync.Once
	status SessionStatus
	serr   error
	logHdr TraceLogfileHeader // what OpenTrace reported (CPU speed, clock)
}

// start starts and opens a session for consumer c; ProcessTrace runs on
// its own locked OS thread.
func startConsumed(api API, cfg *SessionConfig, c Consumer, warn func(string)) (*session, error) {
	h, err := startSession(api, cfg, warn)
	if err != nil {
		return nil, err
	}
	if err := enableStacks(api, h, cfg.Name, cfg.StackEvents); err != nil {
		return nil, err
	}
	s := &session{api: api, name: cfg.Name, handle: h, done: make(chan error, 1)}
	unregister := registerActive(s.name, func() { s.stopSession() })
	th, lh, err := api.OpenTrace(OpenSpec{SessionName: cfg.Name}, c)
	if err != nil {
		s.stopSession()
		unregister()
		return nil, fmt.Errorf("open ETW session %q for real-time consumption: %w", cfg.Name, err)
	}
	s.trace, s.opened, s.logHdr = th, true, lh
	done := s.done
	go func() {
		defer unregister()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- api.ProcessTrace(th)
	}()
	return s, nil
}

// stopSession stops the session once and keeps its final status.
func (s *session) stopSession() {
	s.stop.Do(func() {
		s.status, s.serr = s.api.ControlTrace(s.handle, s.name, ControlStop)
	})
}

// finish stops the session and waits (at most timeout) for ProcessTrace
// to deliver the last buffers; it then closes the trace. It reports
// whether ProcessTrace returned in time.
func (s *session) finish(timeout time.Duration) (bool, error) {
	s.stopSession()
	var perr error
	ok := true
	select {
	case perr = <-s.done:
	case <-time.After(timeout):
		ok = false
	}
	if s.opened {
		if err := s.api.CloseTrace(s.trace); err != nil && ok && perr == nil {
			perr = fmt.Errorf("close trace: %w", err)
		}
		s.opened = false
	}
	if !ok {
		// CloseTrace makes a running ProcessTrace return.
		select {
		case perr = <-s.done:
		case <-time.After(timeout):
		}
	}
	return ok, perr
}

// collector keeps copies of every record of a short session.
type collector struct {
	mu   sync.Mutex
	recs []record.Record
}

func (c *collector) Event(er *EventRecord) {
	if er.EventHeader.ProviderID == lostEventGUID {
		return
	}
	var rec record.Record
	var buf []byte
	var ext []record.ExtItem
	Convert(er, &rec, &buf, &ext)
	c.mu.Lock()
	c.recs = append(c.recs, rec)
	c.mu.Unlock()
}

func (c *collector) records() []record.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]record.Record(nil), c.recs...)
}

// newGUID returns a random (version 4) GUID for a session.
func newGUID() GUID {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0F | 0x40
	b[8] = b[8]&0x3F | 0x80
	g := record.GUIDFromBytes(b[:])
	return GUID(g)
}

// Run implements backend.Backend: it captures the volume map and the
// running processes, runs the rundown session, starts the kernel session
// and delivers its events through the etw pipeline to sink until ctx is
// done, opts.Duration elapses, the traced command exits, or the session
// dies. It always stops the sessions it started.
func (b *Backend) Run(ctx context.Context, opts backend.Options, sink event.Sink) error {
	api, err := b.api()
	if err != nil {
		return err
	}
	cfg := b.defaults(&opts)
	warn := opts.Warnf
	pid := api.Pid()
	major, minor, build := api.OSVersion()
	systemLogger := major > 6 || major == 6 && minor >= 2
	name, rdName := SessionName(pid), RundownName(pid)
	if !systemLogger {
		name, rdName = KernelLoggerName, KernelLoggerName
		warn("Windows 7: tracing through the NT Kernel Logger session; tools that use it too (xperf, Process Monitor, PerfView) cannot run meanwhile")
	}
	cleanupStale(api, warn)

	// Time 0 and the facts that make the trace self-contained.
	freq, qpc0, ft0 := api.Clock()
	hdr := event.Header{
		Source:      event.SourceETWLive,
		OS:          "windows",
		OSVersion:   fmt.Sprintf("%d.%d.%d", major, minor, build),
		CPUs:        uint32(runtime.NumCPU()),
		PointerSize: 8,
		StartWall:   etl.FiletimeToUnixNano(ft0),
		Clock:       event.Clock{Kind: event.ClockQPC, Freq: uint64(freq), Origin: qpc0},
		Command:     strings.Join(opts.Command, " "),
		Tool:        "iotrace (ETW session " + name + ")",
	}
	switch cfg.ClockType {
	case ClockSystemTime:
		hdr.Clock = event.Clock{Kind: event.ClockFiletime, Freq: 10_000_000, Origin: ft0}
	case ClockCPUCycles:
		// The cycle count at time 0 cannot be read from user space: time 0
		// is the first record, StartWall the wall clock when it is
		// decoded (late by at most the session's delivery delay), the
		// frequency the CPU speed the session reports when it opens.
		hdr.Clock = event.Clock{Kind: event.ClockCycles}
	}
	var facts []event.Fact
	vols, err := api.Volumes()
	if err != nil {
		warn(fmt.Sprintf("volume map: %v (paths stay \\Device\\HarddiskVolumeN\\...)", err))
	} else {
		for nt, dos := range vols {
			facts = append(facts, event.Fact{Kind: event.FactVolume, Rundown: true, Name: nt, Image: dos})
		}
	}
	var stats event.Stats
	procs, err := api.Processes()
	if err != nil {
		warn(fmt.Sprintf("process list: %v", err))
	}
	facts = appendProcessFacts(facts, api, procs, &stats)
	out := newLiveSink(sink, &hdr, facts, newPidFilter(&opts))
	pl := etw.NewPipeline(out, etw.Options{
		Source:      event.SourceETWLive,
		Header:      &hdr,
		QPCFreq:     uint64(freq),
		ExpectOpEnd: cfg.Flags&FlagFileIO != 0,
		DiskIOInit:  cfg.Flags&FlagDiskIOInit != 0,
		// --stacks kernel: the walks are trimmed to their kernel part
		// (stacks.go), the user parts that follow them dropped. --stacks
		// user: a kernel-only walk tells the pipeline that the user part
		// will follow; it drops the kernel frames.
		KernelStacksOnly: opts.Stacks == backend.StacksKernel,
		UserStacksOnly:   opts.Stacks == backend.StacksUser,
		Warn:             warn,
		OriginAtFirstRecord: func() func() int64 {
			if cfg.ClockType != ClockCPUCycles {
				return nil
			}
			return func() int64 { _, _, ft := api.Clock(); return etl.FiletimeToUnixNano(ft) }
		}(),
	})
	for i := range facts {
		pl.Tables().Apply(&facts[i])
	}

	// On the CPU-cycle clock, the first session to open tells the CPU
	// speed, before any of its records reach the pipeline.
	cyclesFreq := uint64(0)
	setCycles := func(s *session) error {
		if cfg.ClockType != ClockCPUCycles || cyclesFreq != 0 {
			return nil
		}
		if s.logHdr.CPUSpeedInMHz == 0 {
			s.finish(cfg.StopTimeout)
			return fmt.Errorf("the session runs on the CPU-cycle clock but reports no CPU speed: its times cannot be converted (use the QPC or system-time clock)")
		}
		cyclesFreq = uint64(s.logHdr.CPUSpeedInMHz) * 1_000_000
		pl.SetClockFreq(cyclesFreq)
		return nil
	}

	// The rundown session: stopping it enumerates the open files.
	if !cfg.NoRundown {
		col := &collector{}
		rcfg := &SessionConfig{Name: rdName, EnableFlags: RundownFlags, SystemLogger: systemLogger,
			BufferSizeKB: 1024, ClockType: cfg.ClockType, Guid: newGUID()}
		rs, err := startConsumed(api, rcfg, col, warn)
		if err != nil {
			return fmt.Errorf("rundown session: %w", err)
		}
		if err := setCycles(rs); err != nil {
			return err
		}
		ok, perr := rs.finish(cfg.RundownTimeout)
		if !ok {
			warn(fmt.Sprintf("the rundown session did not finish in %v: names of files opened before the trace may be missing", cfg.RundownTimeout))
			stats.Add(event.CountLost, StatRundownUnfinished, 1)
		} else if perr != nil {
			warn(fmt.Sprintf("rundown session: %v", perr))
		}
		recs := col.records()
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].Timestamp < recs[j].Timestamp })
		stats.Add(event.CountInfo, StatRundownRecords, uint64(len(recs)))
		for i := range recs {
			if err := pl.Push(&recs[i]); err != nil {
				return err
			}
		}
	}

	// The main session.
	q := newQueue(cfg.QueueSize)
	mcfg := &SessionConfig{Name: name, EnableFlags: cfg.Flags, SystemLogger: systemLogger,
		BufferSizeKB: cfg.BufferSizeKB, MinBuffers: cfg.MinBuffers, MaxBuffers: cfg.MaxBuffers,
		FlushTimer: cfg.FlushTimer, ClockType: cfg.ClockType, Guid: newGUID()}
	if opts.Stacks != backend.StacksNone {
		mcfg.StackEvents = StackEvents()
	}
	ms, err := startConsumed(api, mcfg, q, warn)
	if err != nil {
		return err
	}
	defer ms.stopSession()
	if err := setCycles(ms); err != nil {
		return err
	}

	// Decode off the ETW thread, in time order.
	var ro *reorderer
	if cfg.ReorderWindow > 0 && cfg.ClockType != ClockCPUCycles { // cycles: no clock to hold events against
		ro = newReorderer(clockTicks(cfg.ReorderWindow, cfg.ClockType, freq), cfg.ReorderLimit)
	}
	now := func() int64 {
		_, qpc, ft := api.Clock()
		if cfg.ClockType == ClockSystemTime {
			return ft
		}
		return qpc
	}
	consumed := make(chan error, 1)
	sf := newStackFilter(opts.Stacks)
	var ir *imageResolver
	if opts.Stacks != backend.StacksNone {
		// The modules' PDB identities name the frames: read them only
		// when there are frames to name.
		ir = newImageResolver(api, vols)
	}
	go func() { consumed <- consume(q, ro, now, pl, out, sf, ir, cfg.StopTimeout) }()
	procDone := make(chan error, 1)
	orig := ms.done
	ms.done = procDone // finish waits on the relay
	go func() {
		// Close the queue once no callback can run any more, then pass
		// ProcessTrace's result on.
		err := <-orig
		q.closeWork()
		procDone <- err
	}()

	var child Child
	var childDone <-chan childExit
	var cio *commandIO
	if len(opts.Command) > 0 {
		c, cout, err := startCommand(api, &opts)
		if err != nil {
			ms.finish(cfg.StopTimeout)
			<-consumed
			_ = pl.Close(&stats)
			return err
		}
		child, cio = c, cout
		out.filter.addRoot(c.Pid())
		if opts.CommandStarted != nil {
			opts.CommandStarted(int(c.Pid()))
		}
		childDone = waitChild(c)
		if err := c.Resume(); err != nil {
			c.Kill()
			warn(fmt.Sprintf("resume %q: %v", opts.Command[0], err))
		}
	}
	var timeout <-chan time.Time
	if opts.Duration > 0 {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		timeout = t.C
	}
	stopProgress := startProgress(opts.Progress, api, ms, q)
	var runErr error
	var exit *childExit
	died := false
	select {
	case <-ctx.Done():
	case <-timeout:
	case x := <-childDone:
		exit = &x // the session's last buffers are drained below
	case err := <-procDone:
		// ProcessTrace returned while the session should run: it was
		// stopped from outside or died.
		died = true
		procDone <- err // for finish
		runErr = fmt.Errorf("the ETW session %q stopped unexpectedly (stopped by another tool or `logman stop`?)", name)
		if err != nil {
			runErr = fmt.Errorf("%w: %v", runErr, err)
		}
	}
	stopProgress()
	if child != nil && exit == nil {
		exit = settleChild(ctx, child, childDone, opts.Command[0], warn)
	}
	waitOutput(cio, exit, cfg.StopTimeout, warn)
	ok, perr := ms.finish(cfg.StopTimeout)
	if !ok {
		warn(fmt.Sprintf("the session's consumer did not end within %v of the stop; events still queued in the session are lost", cfg.StopTimeout))
		q.closeWork()
	}
	if perr != nil && !died {
		warn(fmt.Sprintf("ProcessTrace: %v", perr))
	}
	cerr := <-consumed
	st := ms.status
	if ms.serr != nil && !died {
		warn(fmt.Sprintf("stop session %q: %v (loss counts unknown)", name, ms.serr))
	}
	stats.Add(event.CountInfo, StatReceived, q.received.Load())
	stats.Add(event.CountLost, StatSessionEventsLost, uint64(st.EventsLost))
	stats.Add(event.CountLost, StatRealTimeBufLost, uint64(st.RealTimeBuffersLost))
	stats.Add(event.CountLost, StatLogBufLost, uint64(st.LogBuffersLost))
	stats.Add(event.CountLost, StatRTLostEvents, q.lostRT.Load())
	stats.Add(event.CountDropped, StatQueueOverflow, q.overflow.Load())
	stats.Add(event.CountDropped, StatAfterClose, q.late.Load())
	if ir != nil {
		ir.stats(&stats)
	}
	if sf != nil {
		stats.Add(event.CountInfo, StatStackWalks, sf.walks)
		stats.Add(event.CountInfo, StatStackWalksNoPart, sf.noPart)
	}
	if ro != nil {
		stats.Add(event.CountInfo, StatReorderLate, ro.late)
		stats.Add(event.CountInfo, StatReorderForced, ro.forced)
		stats.Add(event.CountInfo, StatReorderGaveUp, ro.gaveUp)
	}
	out.stats(&stats)
	reportExit(exit, &opts, &stats)
	if n := st.EventsLost; n > 0 {
		warn(fmt.Sprintf("%d events were lost in the session (buffers full: raise --buffer-size)", n))
	}
	if n := q.overflow.Load(); n > 0 {
		warn(fmt.Sprintf("%d events dropped: the decoder fell behind the session", n))
	}
	if err := pl.Close(&stats); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	return runErr
}

// reorderTick is how often held events are checked for release.
const reorderTick = 100 * time.Millisecond

// consume feeds queued records to the pipeline, in time order through ro
// (nil: in arrival order); markers go straight to the sink, in order.
// now returns the session clock. sf (nil: none) trims stack walks; ir
// (nil: none) puts each loaded image's identity after its Image record,
// waiting at most drainTimeout for the last ones at the end.
func consume(q *queue, ro *reorderer, now func() int64, pl recordPusher, out *liveSink, sf *stackFilter,
	ir *imageResolver, drainTimeout time.Duration) error {
	var err error
	push := func(it *item) {
		if err != nil {
			return // the sink failed: drain without delivering
		}
		switch {
		case it.rec.Provider == record.GUID(MarkerGUID) && it.rec.Opcode == ownprovider.OpcodeMarker:
			err = out.marker(&it.rec, pl.NewID())
		case sf != nil && isStackWalk(&it.rec) && !sf.apply(&it.rec):
			// none of the frames asked for
		default:
			err = pl.Push(&it.rec)
		}
	}
	if ro == nil {
		for it := range q.work {
			push(it)
			if ir != nil {
				if id := ir.lookupNow(&it.rec); id != nil {
					push(id)
				}
			}
			q.done(it)
		}
		return err
	}
	var identities <-chan imageAnswer // nil: never ready
	answer := func(a imageAnswer) {
		ro.answered(a.seq)
		if a.it != nil {
			if ro.released && a.it.rec.Timestamp < ro.last {
				// Its image went to the decoder without it:
				// counted once, here, not passed on.
				ir.late()
				return
			}
			ro.add(a.it)
		}
	}
	if ir != nil {
		ir.start()
		identities = ir.out
	}
	tick := time.NewTicker(reorderTick)
	defer tick.Stop()
	for {
		select {
		case it, ok := <-q.work:
			if !ok {
				if ir != nil {
					ir.drain(drainTimeout, answer)
				}
				ro.releaseAll(push)
				return err
			}
			back := ro.swap(it)
			if ir != nil && ir.submit(&it.rec, it.seq) {
				ro.hold(it)
			}
			q.done(back)
			if ro.held() > ro.limit {
				ro.release(now(), push)
			}
		case a := <-identities:
			answer(a)
		case <-tick.C:
			ro.release(now(), push)
		}
	}
}

// recordPusher takes decoded-to-be records: the etw pipeline.
type recordPusher interface {
	Push(r *record.Record) error
	// NewID numbers an event made beside the pipeline (a marker) in the
	// pipeline's ID sequence.
	NewID() uint64
}

// clockTicks converts d to ticks of the session clock.
func clockTicks(d time.Duration, clockType uint32, qpcFreq int64) int64 {
	if clockType == ClockSystemTime {
		return d.Nanoseconds() / 100
	}
	return int64(d.Seconds() * float64(qpcFreq))
}

// appendProcessFacts appends a rundown process fact for each running
// process, named as a trace file names it: the executable's full path
// as its Image and the path's file name without .exe as its name, where
// Windows gives the path (the image file name otherwise, counted).
func appendProcessFacts(facts []event.Fact, api API, procs []Process, stats *event.Stats) []event.Fact {
	for _, p := range procs {
		f := event.Fact{Kind: event.FactProcess, Rundown: true, Pid: p.Pid, PPid: p.PPid, Name: etw.ProcessName(p.Name)}
		if img, err := api.ProcessImage(p.Pid); err == nil && img != "" {
			f.Image, f.Name = img, etw.ProcessName(img)
		} else if p.Pid != 0 && p.Pid != 4 { // Idle and System have no executable
			stats.Add(event.CountInfo, StatProcessNoImage, 1)
		}
		facts = append(facts, f)
	}
	return facts
}

// settleChild is called when tracing stops before the command was seen to
// exit: it returns the exit if it has come meanwhile; otherwise it kills
// the command on cancel (Ctrl-C) or leaves it running with a warning (the
// duration is over) and returns nil.
func settleChild(ctx context.Context, child Child, done <-chan childExit, name string, warn func(string)) *childExit {
	select {
	case x := <-done:
		return &x
	default:
	}
	if ctx.Err() != nil {
		child.Kill()
	} else {
		warn(fmt.Sprintf("%s (pid %d) is still running, no longer traced", name, child.Pid()))
	}
	return nil
}

// startCommand starts opts.Command suspended, its standard output going
// to opts.CommandStdout when set, and returns it with what carries that
// output (for waitOutput).
func startCommand(api API, opts *backend.Options) (Child, *commandIO, error) {
	cio, err := newCommandIO(opts.CommandStdout)
	if err != nil {
		return nil, nil, fmt.Errorf("start %q: %w", opts.Command[0], err)
	}
	child, err := api.StartSuspended(opts.Command, cio.stdio)
	cio.started()
	if err != nil {
		return nil, nil, fmt.Errorf("start %q: %w", opts.Command[0], err)
	}
	return child, cio, nil
}

// waitOutput waits, when the command has exited, for the rest of its
// output to reach opts.CommandStdout; a command left running (or killed)
// is not waited for (one left running goes on writing there, as it would
// into a file).
func waitOutput(cio *commandIO, exit *childExit, d time.Duration, warn func(string)) {
	if cio == nil || exit == nil {
		return
	}
	if err := cio.wait(d); err != nil {
		warn(err.Error())
	}
}

// childExit is how a traced command ended.
type childExit struct {
	code uint32
	err  error
}

// waitChild waits for c on its own goroutine.
func waitChild(c Child) <-chan childExit {
	ch := make(chan childExit, 1)
	go func() {
		code, err := c.Wait()
		ch <- childExit{code: code, err: err}
	}()
	return ch
}

// reportExit passes the traced command's exit status to
// opts.CommandExited, as Windows shells show it (%ERRORLEVEL%,
// $LASTEXITCODE: the code as a signed 32-bit number, so that an
// NTSTATUS such as 0xC0000005 reads -1073741819 and os.Exit passes it on
// unchanged), and records it in stats.
func reportExit(exit *childExit, opts *backend.Options, stats *event.Stats) {
	if exit == nil {
		return
	}
	if exit.err != nil {
		opts.Warnf(fmt.Sprintf("wait for %s: %v (exit status unknown)", opts.Command[0], exit.err))
		return
	}
	stats.Add(event.CountInfo, StatCommandExit, uint64(exit.code))
	if opts.CommandExited != nil {
		opts.CommandExited(int(int32(exit.code)))
	}
}

// markerText decodes the UTF-16 text of a marker event.
func markerText(b []byte) string { return ownprovider.DecodeMarker(b) }

// markerPayload encodes marker text as UTF-16 with a terminating NUL.
func markerPayload(text string) []byte { return ownprovider.Marker(text) }

// SendMark writes a marker with text into every running iotrace session
// whose owner is alive, and returns how many it reached.
func SendMark(api API, text string) (int, error) {
	all, err := api.QueryAllTraces()
	if err != nil {
		return 0, fmt.Errorf("list ETW sessions: %w", err)
	}
	procs, err := api.Processes()
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	payload := markerPayload(text)
	n := 0
	var errs []error
	for _, s := range all {
		if _, ok := OwnerPid(s.Name); !ok || helperSession(s.Name) || Stale(s.Name, procs, 0) {
			continue
		}
		if err := api.TraceEvent(s.Handle, MarkerGUID, ownprovider.OpcodeMarker, payload); err != nil {
			errs = append(errs, fmt.Errorf("session %q: %w", s.Name, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Child is a process started suspended for `iotrace trace -- cmd`.
type Child interface {
	// Pid is the process id.
	Pid() uint32
	// Resume lets its first thread run.
	Resume() error
	// Wait waits for it to exit and returns its exit code
	// (GetExitCodeProcess).
	Wait() (exitCode uint32, err error)
	// Kill terminates it, unless Wait has returned.
	Kill()
}

// RecordETL records the kernel events of opts (flags from the backend's
// Config) into the .etl file path with a file-mode session, until ctx is
// done, opts.Duration elapses or the traced command exits. The file is
// then read like any other (two passes resolve the end-of-session file
// rundown). It returns the session's final status (events and buffers
// lost).
func (b *Backend) RecordETL(ctx context.Context, opts backend.Options, path string) (SessionStatus, error) {
	api, err := b.api()
	if err != nil {
		return SessionStatus{}, err
	}
	cfg := b.defaults(&opts)
	warn := opts.Warnf
	pid := api.Pid()
	major, minor, _ := api.OSVersion()
	systemLogger := major > 6 || major == 6 && minor >= 2
	name := SessionName(pid)
	if !systemLogger {
		name = KernelLoggerName
	}
	cleanupStale(api, warn)
	scfg := &SessionConfig{Name: name, LogFile: path, EnableFlags: cfg.Flags, SystemLogger: systemLogger,
		BufferSizeKB: cfg.BufferSizeKB, MinBuffers: cfg.MinBuffers, MaxBuffers: cfg.MaxBuffers,
		ClockType: cfg.ClockType, Guid: newGUID()}
	if opts.Stacks != backend.StacksNone {
		scfg.StackEvents = StackEvents()
		if opts.Stacks != backend.StacksBoth {
			warn("--stacks: Windows walks kernel and user frames together; the .etl file keeps both (trace, not record, keeps only the part asked for)")
		}
	}
	vols, verr := api.Volumes()
	h, err := startSession(api, scfg, warn)
	if err != nil {
		return SessionStatus{}, err
	}
	if err := enableStacks(api, h, name, scfg.StackEvents); err != nil {
		return SessionStatus{}, err
	}
	s := &session{api: api, name: name, handle: h}
	unregister := registerActive(name, s.stopSession)
	defer unregister()
	defer s.stopSession()

	// What a reader of the file needs besides the kernel's events
	// (recordown.go).
	if verr != nil {
		warn(fmt.Sprintf("volume map: %v (paths in %s stay \\Device\\HarddiskVolumeN\\... when read)", verr, path))
	} else if _, err := writeVolumes(api, h, vols); err != nil {
		warn(fmt.Sprintf("%v (paths in %s stay \\Device\\HarddiskVolumeN\\... when read)", err, path))
	}
	var imgs *imageRecorder
	if opts.Stacks != backend.StacksNone {
		if !systemLogger {
			warn("Windows 7: the images' PDB identities are not recorded (the kernel has one session, and it records): read on another machine, the file's frames may stay module+offset")
		} else if imgs, err = startImageRecorder(api, h, pid, cfg.ClockType, vols, cfg.StopTimeout, warn); err != nil {
			warn(fmt.Sprintf("image identities not recorded: %v: read on another machine, the file's frames may stay module+offset", err))
			imgs = nil
		} else {
			defer imgs.finish()
		}
	}
	var child Child
	var childDone <-chan childExit
	var cio *commandIO
	if len(opts.Command) > 0 {
		c, cout, err := startCommand(api, &opts)
		if err != nil {
			s.stopSession()
			return s.status, err
		}
		cio = cout
		if opts.CommandStarted != nil {
			opts.CommandStarted(int(c.Pid()))
		}
		childDone = waitChild(c)
		if err := c.Resume(); err != nil {
			c.Kill()
			return s.status, fmt.Errorf("resume %q: %w", opts.Command[0], err)
		}
		child = c
	}
	var timeout <-chan time.Time
	if opts.Duration > 0 {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		timeout = t.C
	}
	var exit *childExit
	select {
	case <-ctx.Done():
	case <-timeout:
	case x := <-childDone:
		exit = &x
	}
	if child != nil && exit == nil {
		exit = settleChild(ctx, child, childDone, opts.Command[0], warn)
	}
	waitOutput(cio, exit, cfg.StopTimeout, warn)
	if imgs != nil {
		warn(fmt.Sprintf("%s: %s", path, imgs.finish())) // before the recording stops
	}
	s.stopSession()
	var discard event.Stats
	reportExit(exit, &opts, &discard)
	if s.serr != nil {
		return s.status, fmt.Errorf("stop session %q: %w (%s may be incomplete)", name, s.serr, path)
	}
	// The session said it stopped; check that it left a trace behind.
	switch size, err := api.FileSize(path); {
	case err != nil:
		return s.status, fmt.Errorf("the session %q stopped, but its file %s cannot be read: %w (ETW wrote no trace)", name, path, err)
	case size == 0:
		return s.status, fmt.Errorf("the session %q stopped, but its file %s is empty: ETW wrote no buffer (%d written, %d lost)", name, path, s.status.BuffersWritten, s.status.LogBuffersLost)
	}
	if n := s.status.EventsLost; n > 0 {
		warn(fmt.Sprintf("%d events were lost in the session (buffers full: raise --buffer-size)", n))
	}
	return s.status, nil
}

// Sessions lists every running ETW session (as `xperf -Loggers` or
// `logman query -ets` do).
func Sessions(api API) ([]SessionStatus, error) {
	all, err := api.QueryAllTraces()
	if err != nil {
		if isErrno(err, ErrAccessDenied) {
			return nil, fmt.Errorf("list ETW sessions: %w: run elevated or as a member of Performance Log Users", err)
		}
		return nil, fmt.Errorf("list ETW sessions: %w", err)
	}
	return all, nil
}
