package etw

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/backend/etw/internal/modident"
	"github.com/iotrace/iotrace/backend/etw/internal/names"
	"github.com/iotrace/iotrace/backend/etw/internal/stackjoin"
	"github.com/iotrace/iotrace/backend/etw/internal/tally"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/resolve"
)

// Options configure a Pipeline.
type Options struct {
	// Source is the event source recorded in events and the header
	// (default event.SourceETLFile).
	Source event.Source
	// Header, when set, is the trace header to begin with: live sessions
	// set it (with the clock of the session). When nil, the pipeline
	// begins at the EventTrace header record, the first record of a file.
	Header *event.Header
	// QPCFreq is the QueryPerformanceCounter frequency, used to convert
	// DiskIo response times; taken from the EventTrace header when 0.
	QPCFreq uint64
	// ExpectOpEnd says that FileIo and Kernel-File requests end with an
	// OpEnd event (the session enabled FILE_IO, or the file holds OpEnd
	// events): requests are then held until their OpEnd. When false, they
	// are emitted at once, flagged event.FlagNoCompletion.
	ExpectOpEnd bool
	// DiskIOInit says that the session records DiskIo Init events
	// (DISK_IO_INIT): with ExpectOpEnd, disk I/Os are then linked to the
	// file requests that caused them and a cached read that caused none
	// is flagged event.FlagCacheHit. Files (Run, ReadFile) find out for
	// themselves in their first pass.
	DiskIOInit bool
	// UndecodedDetail adds one info counter per undecoded event (provider
	// or kernel group, id or opcode, version) to the trailer, besides the
	// one counter per provider it always has.
	UndecodedDetail bool
	// NoStacks leaves the stacks of the trace aside (StackWalk records
	// and stack extended data items are counted, not decoded): for a
	// reader that shows no stacks.
	NoStacks bool
	// KernelStacksOnly says that a live session's stack walks hold their
	// kernel part only (--stacks kernel): no user part is waited for, nor
	// flagged lost; a user part's cache key reference is left aside.
	KernelStacksOnly bool
	// UserStacksOnly keeps the user part of stacks only (--stacks user
	// on a live session): a kernel part still tells that a user part is
	// to come, and is dropped when the event is given its stack.
	UserStacksOnly bool
	// Warn is called with a one-line message for the first few
	// undecodable records. May be nil.
	Warn func(msg string)
	// OriginAtFirstRecord, with Header, makes the first record's timestamp
	// the header clock's origin, and the wall-clock time it returns then
	// (UTC ns) the header's StartWall: for a live session on the CPU-cycle
	// clock, whose count at time 0 user space cannot read.
	OriginAtFirstRecord func() int64
}

// Counter names of the Stats a pipeline reports.
const (
	StatRecords             = "etw: records"
	StatDecodeErrors        = "etw: records whose payload does not fit its layout (skipped)"
	StatDiskIOs             = "etw: disk I/Os"
	StatDiskFlushes         = "etw: disk flushes"
	StatDiskResolved        = "etw: disk I/Os resolved to a path"
	StatDiskUnresolved      = "etw: disk I/Os not resolved to a path"
	StatDiskNoFile          = "etw: disk I/Os not resolved to a path (no FileKey)"
	StatDiskInitMismatch    = "etw: disk I/O Inits left without completion (their IRP completed another operation)"
	StatDiskNoInit          = "etw: disk I/O completions without their Init (start from HighResResponseTime)"
	StatDiskNoInitContext   = "etw: disk I/O completions without Init or IssuingThreadId (attributed to the completing context)"
	StatDiskInitReplaced    = "etw: disk I/O Inits replaced by a new Init on the same IRP"
	StatDiskInitPending     = "etw: disk I/O Inits without completion at trace end"
	StatFileRequests        = "etw: file requests"
	StatFileResolved        = "etw: file requests resolved to a path"
	StatFileUnresolved      = "etw: file requests not resolved to a path"
	StatFileNoOpEnd         = "etw: file requests without OpEnd at trace end"
	StatFileNoOpEndInTrace  = "etw: file requests with no OpEnd in the trace (FILE_IO completions not recorded)"
	StatFileReplaced        = "etw: file requests replaced by a new request on the same IRP before their OpEnd"
	StatFileOpEndNoRequest  = "etw: file OpEnds without their request"
	StatUnknownProcessOfTid = "etw: events whose issuing thread has no known process"
	StatNoHeader            = "etw: trace without an EventTrace header first (clock assumed QPC at 10 MHz unless given, time 0 = first record)"
	StatLinked              = "etw: disk I/Os linked to the file request that caused them"
	StatLinkLate            = "etw: disk I/Os linked to a file request emitted before they completed (missing from its CausedIOs)"
	StatCacheHits           = "etw: file reads served from the cache (completed, no disk I/O caused)"
	StatWaitedIO            = "etw: file reads that waited for a paging read of their range in flight (cache manager read-ahead, another reader's fault)"
	StatNoLinks             = "etw: disk I/Os not linked to file requests (the trace lacks FileIo OpEnd or DiskIo Init events)"
	StatNTPath              = "etw: paths left in NT device form, \\Device\\... (the trace maps no drive letter to their volume): events and process images"
	StatProcessImages       = "etw: processes with their executable's full path (from Image or Kernel-Process events)"
)

// mode selects what a pipeline does with a record.
type mode uint8

const (
	modeLive    mode = iota // apply facts to the tables and emit everything
	modeCollect             // apply facts only (a file's first pass, firstPass)
	modeReplay              // emit everything; the tables are complete (the second pass)
)

// provider indexes per-provider request state: classic FileIo or the
// Kernel-File manifest provider.
type provider uint8

const (
	provFileIo provider = iota
	provKernelFile
	numProviders
)

type pendKey struct {
	prov provider
	irp  uint64
}

type diskInit struct {
	t        int64
	pid, tid uint32
	cpu      uint32
	hasCtx   bool
	ttid     uint32
	hasTTID  bool
	op       event.Op
	ncand    uint8
	cand     [maxCandidates]*fileReq // file requests it may belong to (link.go)
	stk      *stackjoin.Parts        // its stack, joined while it was pending
}

// Pipeline turns ETW records into events and facts for a sink. Feed it
// records in timestamp order with Push and finish with Close. It is not
// safe for concurrent use.
type Pipeline struct {
	sink  event.Sink
	opts  Options
	mode  mode
	first firstPass // a file's first pass (modeCollect)

	// Decoding and naming.
	dec     *kernel.Decoder
	ev      kernel.Event // the record being pushed, decoded
	tables  *resolve.Tables
	names   *names.Cache // payload strings and DOS paths, shared by both passes
	renamed renames      // a file's second pass: FileKey names given already
	procs   processes    // processes and their executables (process.go)
	hdr     traceHeader  // the trace's header and clock (header.go)

	// Pairing and links (handlers.go, link.go).
	pendFile  map[pendKey]*fileReq
	pendDisk  map[uint64]diskInit
	expectEnd [numProviders]bool
	links     linker

	// Stacks (stacks.go, package stackjoin) and modules (modules.go,
	// package modident).
	stk      *stackjoin.Joiner
	held     *stackjoin.Holder // live: events waiting for their stack's user part
	stackIDs stackjoin.Interner
	live     liveStacks
	mods     *modident.Modules

	// Emitting and counting.
	scratch  event.Event
	fact     event.Fact
	nextID   uint64
	lastTime int64
	records  uint64
	tally    *tally.Tally // counters and warnings, muted in a file's first pass
	err      error
	ended    bool
}

// NewPipeline returns a pipeline that delivers to sink.
func NewPipeline(sink event.Sink, opts Options) *Pipeline {
	if opts.Source == event.SourceUnknown {
		opts.Source = event.SourceETLFile
	}
	p := &Pipeline{
		sink:     sink,
		opts:     opts,
		dec:      kernel.NewDecoder(),
		tables:   resolve.NewTables(),
		procs:    newProcesses(),
		pendFile: make(map[pendKey]*fileReq),
		pendDisk: make(map[uint64]diskInit),
		links:    newLinker(),
		tally:    tally.New(opts.Warn),
	}
	p.hdr.qpcFreq = opts.QPCFreq
	p.names = names.New(p.tables)
	p.mods = modident.New(p.tally, p.names)
	p.stk = stackjoin.New(p.tally)
	firstStacks := p.stk
	if opts.NoStacks {
		firstStacks = nil
	}
	p.first = newFirstPass(firstStacks, p.mods)
	p.held = stackjoin.NewHolder(p.tally)
	for i := range p.expectEnd {
		p.expectEnd[i] = opts.ExpectOpEnd
	}
	p.links.linking = opts.ExpectOpEnd && opts.DiskIOInit
	if opts.Header != nil {
		p.hdr.header = *opts.Header
		p.hdr.clock = opts.Header.Clock
		if p.hdr.qpcFreq == 0 && p.hdr.clock.Kind == event.ClockQPC {
			p.hdr.qpcFreq = p.hdr.clock.Freq
		}
	}
	return p
}

// Tables returns the resolver tables the pipeline uses: a live session
// may pre-fill them (volume mapping, running processes) before the first
// Push.
func (p *Pipeline) Tables() *resolve.Tables { return p.tables }

// setMode sets what the pipeline does with records; a file's first pass
// counts nothing (its second counts the same records).
func (p *Pipeline) setMode(m mode) {
	p.mode = m
	p.tally.Mute(m == modeCollect)
	if m == modeCollect {
		p.mods.BeginCollect()
	}
}

// errEnded is returned by Push after Close.
var errEnded = errors.New("etw pipeline: record pushed after Close")

// Push processes one record. Records must come in timestamp order (the
// ETL reader merges its per-CPU streams; a live session delivers them in
// order per CPU, close enough for pairing by IRP). An error is returned
// only when the sink fails; records that cannot be decoded are counted.
func (p *Pipeline) Push(r *record.Record) error {
	if p.err != nil {
		return p.err
	}
	if p.ended {
		return errEnded
	}
	p.records++
	if p.opts.NoStacks && isStackWalk(r) {
		p.tally.Add(StatStacksOff, event.CountInfo, 1)
		return nil
	}
	if p.mode == modeReplay && takenFirst(r) {
		return nil // taken by the first pass
	}
	if p.mode == modeCollect && !p.firstWants(r) {
		return nil
	}
	ok, err := p.dec.Decode(r, &p.ev)
	if !ok || err != nil {
		// A stack record may follow it (live sessions).
		p.noteTarget(r, r.ThreadID, targetUndecoded, nil, 0)
	}
	if !ok {
		return p.beginIfReady(r)
	}
	if err != nil {
		p.tally.Add(StatDecodeErrors+": "+p.ev.Key.String(), event.CountDropped, 1)
		p.tally.Warn("etl record at file offset %#x (buffer %d): %v", r.FileOffset, r.Buffer, err)
		return p.beginIfReady(r)
	}
	ev := &p.ev
	if ev.Kind == kernel.KindTraceHeader {
		return p.onHeader(r, ev.Header)
	}
	if err := p.beginIfReady(r); err != nil {
		return err
	}
	t := p.hdr.clock.ToNanos(r.Timestamp)
	if t > p.lastTime {
		p.lastTime = t
	}
	if p.mods.Waiting() {
		p.mods.Settle(r.Timestamp, false)
		p.emitModules()
	}
	if p.mode == modeCollect {
		p.first.inOrder(r, ev)
	}
	switch ev.Kind {
	case kernel.KindFileName, kernel.KindFileRundown, kernel.KindFileNameDelete:
		p.onFileName(ev, t)
	case kernel.KindFileRequest:
		p.onFileRequest(r, ev, t)
	case kernel.KindFileOpEnd:
		p.onFileOpEnd(ev, t)
	case kernel.KindDiskInit:
		p.onDiskInit(r, ev, t)
	case kernel.KindDiskDone:
		p.onDiskDone(r, ev, t)
	case kernel.KindProcess:
		p.onProcess(ev, t)
		p.otherStack(r)
	case kernel.KindThread:
		p.onThread(ev, t)
		p.otherStack(r)
	case kernel.KindImage:
		p.onImage(r, ev, t)
		p.onModule(r, ev, t)
		p.otherStack(r)
	case kernel.KindStack, kernel.KindStackKeyRef, kernel.KindStackKeyDef:
		p.onStack(r, ev)
	case kernel.KindImageID, kernel.KindImageDbgID:
		p.onIdentityRecord(r, ev)
	case kernel.KindOwnMarker, kernel.KindOwnVolume, kernel.KindOwnImage:
		p.onOwn(r, ev, t)
	case kernel.KindPhysicalDisk, kernel.KindLogicalDisk, kernel.KindComputer,
		kernel.KindVolumeMapping, kernel.KindSystemPaths:
		p.onConfig(ev, t)
	}
	if len(p.links.deferred) > 0 {
		p.expire(false)
	}
	if p.held.Len() > 0 && p.records%stackjoin.ExpireEvery == 0 {
		p.expireHeld(false)
	}
	return p.err
}

// countUndecodable counts n records like r that the second pass does not
// want (secondWants is false for them), as Push would count them.
func (p *Pipeline) countUndecodable(r *record.Record, n uint64) {
	if p.err != nil || p.ended {
		return
	}
	p.records += n
	if takenFirst(r) {
		if p.opts.NoStacks && isStackWalk(r) {
			p.tally.Add(StatStacksOff, event.CountInfo, n)
		}
		return // taken by the first pass
	}
	if p.mode != modeCollect {
		p.dec.CountUnknown(r, n)
	}
}

// firstWants reports whether the first pass decodes r (firstPass.keep,
// unless the source applied it already). The first record fixes time 0
// when the stream has no header.
func (p *Pipeline) firstWants(r *record.Record) bool {
	if p.first.kept {
		if decodedFirst(r) {
			return true
		}
	} else if p.first.keep(r) {
		return true
	}
	if p.headerless() {
		_ = p.beginIfReady(r)
	}
	return false
}

// emitFact applies f to the tables (unless they are complete already) and
// passes it to the sink (unless collecting).
func (p *Pipeline) emitFact(f *event.Fact) {
	if p.mode != modeReplay {
		p.apply(f)
	}
	if p.mode == modeCollect || p.err != nil {
		return
	}
	if err := p.sink.Fact(f); err != nil {
		p.err = fmt.Errorf("sink: fact: %w", err)
	}
}

// apply records f in the tables and the process start history.
func (p *Pipeline) apply(f *event.Fact) {
	p.tables.Apply(f)
	if f.Kind == event.FactProcess {
		p.procs.applySpan(f)
	}
}

// threadPid returns the process of thread tid at t.
func (p *Pipeline) threadPid(tid uint32, t int64) (uint32, bool) {
	s, ok := p.tables.Threads.Lookup(tid, t)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(v), true
}

// filePath resolves a FileKey, then a FileObject, at time t. A DiskIo
// FileKey is also tried as a FileObject, which some versions log there.
func (p *Pipeline) filePath(fileKey, fileObject uint64, t int64) (string, bool) {
	if fileKey != 0 {
		if s, ok := p.tables.FileKeys.Lookup(fileKey, t); ok && s != "" {
			return p.names.DOS(s), true
		}
	}
	if fileObject != 0 {
		if s, ok := p.tables.FileObjects.Lookup(fileObject, t); ok && s != "" {
			return p.names.DOS(s), true
		}
	}
	return "", false
}

// comm returns the name of process pid at t: the full name of its
// executable when an image event gave it, else the process events' name.
func (p *Pipeline) comm(pid uint32, t int64) string {
	if len(p.procs.main) > 0 {
		if m := p.procs.main[event.ProcessKey{Pid: pid, Start: p.procs.start(pid, t)}]; m != nil && m.name != "" {
			return m.name
		}
	}
	s, _ := p.tables.ProcessName(pid, t)
	return s
}

// ntForm reports whether a path is still an NT device path.
func ntForm(s string) bool { return strings.HasPrefix(s, `\Device\`) }

func (p *Pipeline) emit(e *event.Event) {
	if p.err != nil || p.mode == modeCollect {
		return
	}
	if e.Comm == "" {
		e.Comm = p.comm(e.Pid, e.Time)
	}
	if ntForm(e.Path) || ntForm(e.Path2) {
		p.tally.Add(StatNTPath, event.CountInfo, 1)
	}
	if err := p.sink.Event(e); err != nil {
		p.err = fmt.Errorf("sink: event: %w", err)
	}
}

func (p *Pipeline) newID() uint64 {
	p.nextID++
	return p.nextID
}

// NewID returns the next event ID of the pipeline's sequence (counted from
// 1), for an event made outside the pipeline into its stream (a live
// session's markers), so that it shares the pipeline's compact IDs without
// colliding. Call it only from the goroutine that calls Push.
func (p *Pipeline) NewID() uint64 { return p.newID() }

// Close flushes what is still pending (requests without OpEnd are
// emitted, flagged; Inits without completion are counted) and ends the
// trace with the stats. extra are added to the trailer's stats (the
// reader's own counters). Close begins the trace if no record did.
func (p *Pipeline) Close(extra *event.Stats) error {
	if p.ended {
		return p.err
	}
	p.ended = true
	if p.err != nil {
		return p.err
	}
	if !p.hdr.begun {
		if p.headerless() {
			p.hdr.header = event.Header{Source: p.opts.Source, OS: "windows", Tool: "ETW"}
		}
		p.hdr.begun = true
		if err := p.sink.Begin(&p.hdr.header); err != nil {
			p.err = fmt.Errorf("sink: begin: %w", err)
			return p.err
		}
	}
	p.mods.End()
	p.emitModules()
	p.flushPending()
	p.expireHeld(true)
	p.stk.Leftover()
	if p.err != nil {
		return p.err
	}
	tr := event.Trailer{End: p.lastTime}
	p.stats(&tr.Stats)
	if extra != nil {
		tr.Stats.Merge(*extra)
	}
	if err := p.sink.End(&tr); err != nil {
		p.err = fmt.Errorf("sink: end: %w", err)
	}
	return p.err
}

// Stats returns the pipeline's counters so far.
func (p *Pipeline) Stats() event.Stats {
	var s event.Stats
	p.stats(&s)
	return s
}

func (p *Pipeline) stats(s *event.Stats) {
	s.Add(event.CountInfo, StatRecords, p.records)
	if p.hdr.noHeader {
		s.Add(event.CountDropped, StatNoHeader, 1)
	}
	p.tally.AddTo(s)
	if n := p.tally.Get(StatDiskIOs); !p.links.linking && n > 0 && p.links.rwRequests > 0 {
		s.Add(event.CountInfo, StatNoLinks, n)
	}
	p.dec.Stats(s)
	if p.opts.UndecodedDetail {
		p.dec.StatsDetail(s)
	}
}
