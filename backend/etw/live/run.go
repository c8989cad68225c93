package live

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/event"
)

// liveRun is one Backend.Run: what it traces and the state its steps
// share. The steps, in order: newRun (the spec: clock, header, facts,
// pipeline), rundown and startMain (the sessions), startConsume and
// connect (the decoder and the consumer's connection), startCommand,
// wait, and stop (the sessions stopped and drained, the trailer).
type liveRun struct {
	api   API
	cfg   Config // with the defaults
	opts  *backend.Options
	warn  func(string)
	pid   uint32
	name  string // the main session's
	hdr   event.Header
	freq  int64 // QPC frequency
	vols  map[string]string
	stats event.Stats
	out   *liveSink
	pl    *etw.Pipeline
	// cyclesFreq is the CPU speed of the CPU-cycle clock, once known.
	cyclesFreq uint64

	ms       *consumed
	q        *queue
	ro       *reorderer
	sf       *stackFilter
	ir       *imageResolver
	consumed chan error // consume's result

	child     Child
	childDone <-chan childExit
	cio       *commandIO
}

// ending is why a trace stopped.
type ending struct {
	exit *childExit // the command exited
	died bool       // the session ended by itself
	err  error      // what to return
}

// newRun sets up what a trace needs before any session starts: the
// configuration, stale sessions stopped, time 0, the header, the facts
// that make the trace self-contained (volumes, running processes) and
// the pipeline.
func (b *Backend) newRun(opts *backend.Options, sink event.Sink) (*liveRun, error) {
	api, err := b.api()
	if err != nil {
		return nil, err
	}
	if err := checkOS(api); err != nil {
		return nil, err
	}
	cfg, err := b.defaults(api, opts)
	if err != nil {
		return nil, err
	}
	r := &liveRun{api: api, cfg: cfg, opts: opts, warn: opts.Warnf, pid: api.Pid()}
	r.name = SessionName(r.pid)
	cleanupStale(api, r.warn)
	r.header()
	var facts []event.Fact
	if r.vols, err = api.Volumes(); err != nil {
		r.warn(fmt.Sprintf("volume map: %v (paths stay \\Device\\HarddiskVolumeN\\...)", err))
	}
	for nt, dos := range r.vols {
		facts = append(facts, event.Fact{Kind: event.FactVolume, Rundown: true, Name: nt, Image: dos})
	}
	procs, err := api.Processes()
	if err != nil {
		r.warn(fmt.Sprintf("process list: %v", err))
	}
	facts = appendProcessFacts(facts, api, procs, &r.stats)
	r.out = newLiveSink(sink, &r.hdr, facts, newPidFilter(opts, r.pid))
	r.pl = r.pipeline()
	for i := range facts {
		r.pl.Tables().Apply(&facts[i])
	}
	return r, nil
}

// header sets time 0 (a QPC and wall clock reading taken together) and
// the trace's header.
func (r *liveRun) header() {
	major, minor, build := r.api.OSVersion()
	freq, qpc0, ft0 := r.api.Clock()
	r.freq = freq
	r.hdr = event.Header{
		Source:      event.SourceETWLive,
		OS:          "windows",
		OSVersion:   fmt.Sprintf("%d.%d.%d", major, minor, build),
		CPUs:        r.api.Processors(),
		PointerSize: 8,
		StartWall:   etl.FiletimeToUnixNano(ft0),
		Clock:       event.Clock{Kind: event.ClockQPC, Freq: uint64(freq), Origin: qpc0},
		Command:     strings.Join(r.opts.Command, " "),
		Tool:        "iotrace (ETW session " + r.name + ")",
		Layers:      tracedLayers(r.cfg.Flags),
	}
	switch r.cfg.ClockType {
	case ClockSystemTime:
		r.hdr.Clock = event.Clock{Kind: event.ClockFiletime, Freq: 10_000_000, Origin: ft0}
	case ClockCPUCycles:
		// The cycle count at time 0 cannot be read from user space: time 0
		// is the first record, StartWall the wall clock when it is
		// decoded (late by at most the session's delivery delay), the
		// frequency the CPU speed the first session reports.
		r.hdr.Clock = event.Clock{Kind: event.ClockCycles}
	}
}

// pipeline returns the etw pipeline the records go through.
func (r *liveRun) pipeline() *etw.Pipeline {
	o := etw.Options{
		Source:      event.SourceETWLive,
		Header:      &r.hdr,
		QPCFreq:     uint64(r.freq),
		ExpectOpEnd: r.cfg.Flags&FlagFileIO != 0,
		DiskIOInit:  r.cfg.Flags&FlagDiskIOInit != 0,
		// --stacks kernel: the walks are trimmed to their kernel part
		// (stacks.go), the user parts that follow them dropped. --stacks
		// user: a kernel-only walk tells the pipeline that the user part
		// will follow; it drops the kernel frames.
		KernelStacksOnly: r.opts.Stacks == backend.StacksKernel,
		UserStacksOnly:   r.opts.Stacks == backend.StacksUser,
		Warn:             r.warn,
	}
	if r.cfg.ClockType == ClockCPUCycles {
		api := r.api
		o.OriginAtFirstRecord = func() int64 { _, _, ft := api.Clock(); return etl.FiletimeToUnixNano(ft) }
	}
	return etw.NewPipeline(r.out, o)
}

// setCycles gives the pipeline the CPU speed of the CPU-cycle clock,
// from the first session that tells it (mhz), before any of its records
// is pushed.
func (r *liveRun) setCycles(mhz uint32) error {
	if r.cfg.ClockType != ClockCPUCycles || r.cyclesFreq != 0 {
		return nil
	}
	if mhz == 0 {
		return fmt.Errorf("the session runs on the CPU-cycle clock but reports no CPU speed: its times cannot be converted (use the QPC or system-time clock)")
	}
	r.cyclesFreq = uint64(mhz) * 1_000_000
	r.pl.SetClockFreq(r.cyclesFreq)
	return nil
}

// sessionConfig returns a kernel session of the run's plan.
func (r *liveRun) sessionConfig(name string, flags uint32) *SessionConfig {
	return &SessionConfig{Name: name, EnableFlags: flags, BufferSizeKB: r.cfg.BufferSizeKB, MinBuffers: r.cfg.MinBuffers,
		MaxBuffers: r.cfg.MaxBuffers, FlushTimer: r.cfg.FlushTimer, ClockType: r.cfg.ClockType}
}

// rundown runs the rundown session (rundown.go) and pushes its file names
// into the pipeline, ahead of every event.
func (r *liveRun) rundown() error {
	if r.cfg.NoRundown {
		return nil
	}
	rd, err := runRundown(r.api, r.sessionConfig(RundownName(r.pid), RundownFlags), r.cfg.RundownTimeout, r.warn)
	if rd == nil {
		return err
	}
	if err != nil {
		r.warn(err.Error())
	}
	if !rd.finished {
		r.warn(fmt.Sprintf("the rundown session did not finish in %v: names of files opened before the trace may be missing", r.cfg.RundownTimeout))
		r.stats.Add(event.CountLost, StatRundownUnfinished, 1)
		return nil
	}
	r.stats.Add(event.CountInfo, StatRundownRecords, uint64(len(rd.recs)))
	r.stats.Add(event.CountLost, StatRundownLost, rd.lost)
	r.stats.Add(event.CountInfo, StatRundownUnused, rd.unused)
	if err := r.setCycles(rd.header.CPUSpeedMHz); err != nil {
		return err
	}
	for i := range rd.recs {
		if err := r.pl.Push(&rd.recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// startMain starts the main session and its consumer.
func (r *liveRun) startMain() error {
	r.q = newQueue(r.cfg.QueueSize)
	mcfg := r.sessionConfig(r.name, r.cfg.Flags)
	if r.opts.Stacks != backend.StacksNone {
		mcfg.StackEvents = StackEvents()
	}
	ms, err := startConsumed(r.api, mcfg, kindMain, r.q, consumeOptions{own: true, ended: r.q.closeWork}, r.warn)
	if err != nil {
		return err
	}
	r.ms = ms
	if err := r.setCycles(ms.logHdr.CPUSpeedInMHz); err != nil {
		ms.finish(r.cfg.StopTimeout)
		return err
	}
	return nil
}

// startConsume starts the decoder: records off the ETW thread, in time
// order (reorder.go), through the pipeline.
func (r *liveRun) startConsume() {
	if r.cfg.ReorderWindow > 0 && r.cfg.ClockType != ClockCPUCycles { // cycles: no clock to hold events against
		r.ro = newReorderer(clockTicks(r.cfg.ReorderWindow, r.cfg.ClockType, r.freq), r.cfg.ReorderLimit)
	}
	api, clock := r.api, r.cfg.ClockType
	now := func() int64 {
		_, qpc, ft := api.Clock()
		if clock == ClockSystemTime {
			return ft
		}
		return qpc
	}
	r.sf = newStackFilter(r.opts.Stacks)
	if r.opts.Stacks != backend.StacksNone {
		// The modules' PDB identities name the frames: read them only
		// when there are frames to name.
		r.ir = newImageResolver(r.api, r.vols)
	}
	r.consumed = make(chan error, 1)
	go func() { r.consumed <- consume(r.q, r.ro, now, r.pl, r.out, r.sf, r.ir, r.cfg.StopTimeout) }()
}

// connect waits until the consumer is connected (its first event
// delivered), so that nothing the trace is for happens before: a session
// stopped before ProcessTrace connects loses its buffers. It returns
// non-nil when the session ended meanwhile.
func (r *liveRun) connect() *ending {
	ok, err := r.ms.waitConnected(r.cfg.ConnectTimeout)
	if err != nil {
		return &ending{died: true, err: err}
	}
	if !ok {
		r.warn(fmt.Sprintf("the session delivered no event within %v of its start: the first events of the trace may be lost", r.cfg.ConnectTimeout))
	}
	return nil
}

// startCommand starts the traced command suspended, keeps it and its
// descendants, and resumes it.
func (r *liveRun) startCommand() error {
	if len(r.opts.Command) == 0 {
		return nil
	}
	c, cio, err := startCommand(r.api, r.opts)
	if err != nil {
		return err
	}
	r.child, r.cio = c, cio
	r.out.filter.addRoot(c.Pid())
	if r.opts.CommandStarted != nil {
		r.opts.CommandStarted(int(c.Pid()))
	}
	r.childDone = waitChild(c)
	if err := c.Resume(); err != nil {
		c.Kill()
		r.warn(fmt.Sprintf("resume %q: %v", r.opts.Command[0], err))
	}
	return nil
}

// wait waits for the end of the trace: cancellation, the duration, the
// command's exit or the session's own end.
func (r *liveRun) wait(ctx context.Context) ending {
	var timeout <-chan time.Time
	if r.opts.Duration > 0 {
		t := time.NewTimer(r.opts.Duration)
		defer t.Stop()
		timeout = t.C
	}
	defer startProgress(r.opts.Progress, r.api, r.ms.session, r.q)()
	select {
	case <-ctx.Done():
	case <-timeout:
	case x := <-r.childDone:
		return ending{exit: &x} // the session's last buffers are drained by stop
	case err := <-r.ms.done:
		// ProcessTrace returned while the session should run: it was
		// stopped from outside or died.
		r.ms.done <- err // for finish
		e := ending{died: true, err: fmt.Errorf("the ETW session %q stopped unexpectedly (stopped by another tool or `logman stop`?)", r.name)}
		if err != nil {
			e.err = fmt.Errorf("%w: %v", e.err, err)
		}
		return e
	}
	return ending{}
}

// stop settles the command, stops the session and drains it, writes the
// trailer and returns the trace's error.
func (r *liveRun) stop(ctx context.Context, end ending) error {
	if r.child != nil && end.exit == nil {
		end.exit = settleChild(ctx, r.child, r.childDone, r.opts.Command[0], r.warn)
	}
	waitOutput(r.cio, end.exit, r.cfg.StopTimeout, r.warn)
	ok, perr := r.ms.finish(r.cfg.StopTimeout)
	if !ok {
		r.warn(fmt.Sprintf("the session's consumer did not end within %v of the stop; events still queued in the session are lost", r.cfg.StopTimeout))
		r.q.closeWork()
	}
	if perr != nil && !end.died {
		r.warn(fmt.Sprintf("ProcessTrace: %v", perr))
	}
	cerr := <-r.consumed
	if r.ms.serr != nil && !end.died {
		r.warn(fmt.Sprintf("stop session %q: %v (loss counts unknown)", r.name, r.ms.serr))
	}
	r.addStats()
	reportExit(end.exit, r.opts, &r.stats)
	if err := r.pl.Close(&r.stats); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	return end.err
}

// abort stops what started when the trace cannot go on, and returns err.
func (r *liveRun) abort(err error) error {
	r.ms.finish(r.cfg.StopTimeout)
	<-r.consumed
	_ = r.pl.Close(&r.stats)
	return err
}

// addStats adds the session's and the decoder's counters to the
// trailer's, and warns about losses.
func (r *liveRun) addStats() {
	st, s := r.ms.status, &r.stats
	s.Add(event.CountInfo, StatReceived, r.q.received.Load())
	s.Add(event.CountLost, StatSessionEventsLost, uint64(st.EventsLost))
	s.Add(event.CountLost, StatRealTimeBufLost, uint64(st.RealTimeBuffersLost))
	s.Add(event.CountLost, StatLogBufLost, uint64(st.LogBuffersLost))
	s.Add(event.CountLost, StatRTLostEvents, r.q.lostRT.Load())
	s.Add(event.CountDropped, StatQueueOverflow, r.q.overflow.Load())
	s.Add(event.CountDropped, StatAfterClose, r.q.late.Load())
	if r.ir != nil {
		r.ir.stats(s)
	}
	if r.sf != nil {
		s.Add(event.CountInfo, StatStackWalks, r.sf.walks)
		s.Add(event.CountInfo, StatStackWalksNoPart, r.sf.noPart)
	}
	if r.ro != nil {
		s.Add(event.CountInfo, StatReorderLate, r.ro.late)
		s.Add(event.CountInfo, StatReorderForced, r.ro.forced)
		s.Add(event.CountInfo, StatReorderGaveUp, r.ro.gaveUp)
	}
	r.out.stats(s)
	if n := st.EventsLost; n > 0 {
		r.warn(fmt.Sprintf("%d events were lost in the session (buffers full: raise --buffer-size)", n))
	}
	if n := r.q.overflow.Load(); n > 0 {
		r.warn(fmt.Sprintf("%d events dropped: the decoder fell behind the session", n))
	}
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
