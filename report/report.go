package report

import (
	"container/heap"
	"strings"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/heatmap"
	"github.com/iotrace/iotrace/hist"
)

// opStat is the trace-wide summary of one op.
type opStat struct {
	opCounts
	incomplete uint64 // started, never completed
	lat        hist.Sketch
	h          hist.Log2 // latency in µs
	causedIOs  uint64
	causedB    uint64
}

// layerTotals are the totals of one layer.
type layerTotals struct {
	opCounts
	incomplete uint64
}

// device is the block-layer summary of one device.
type device struct {
	dev          event.Device
	ops          [4]opCounts // bread, bwrite, bflush, bdiscard
	lat          hist.Sketch // total, ns
	wait         hist.Sketch // queue → issue, ns
	svc          hist.Sketch // issue → completion, ns
	h            hist.Log2   // total latency, µs
	size         hist.Log2   // bytes
	seq, random  uint64
	lastEnd      uint64 // sector after the previous I/O
	haveLast     bool
	first, last  int64
	incomplete   uint64
	writeback    uint64
	caused       uint64 // with a cause link
	flagsDirect  uint64
	readaheadIOs uint64
}

// procInfo is what facts say about a process.
type procInfo struct {
	ppid        uint32
	name, image string
	cmdline     string
}

// errKey groups failed operations.
type errKey struct {
	op     event.Op
	status event.Status
	code   uint32
	path   string
}

type errGroup struct {
	count uint64
	first int64
	comm  string
	pid   uint32
}

// marker is a user marker.
type marker struct {
	time int64
	note string
	pid  uint32
}

const maxMarkers = 100

// Report is an event.Sink that summarises a trace. Create it with [New];
// read the summary with [Report.Result] once the stream has ended (or at
// any time, for a summary so far).
type Report struct {
	opts    Options
	hdr     event.Header
	began   bool
	ended   bool
	trailer event.Trailer

	events, facts       uint64
	minTime, maxEnd     int64
	haveTime            bool
	layers              [4]layerTotals
	ops                 [event.NumOps]opStat
	procs               table[event.ProcessKey]
	files               table[string]
	devices             map[event.Device]*device
	errs                map[errKey]*errGroup
	errOther            uint64 // failures beyond the error table's capacity
	slow, slowBlock     slowHeap
	recent              recentBlocks
	cache               cacheCounts
	linkSeen, blockSeen bool
	// hitSeen: a read flagged as served from cache, which its source only
	// does when it links reads to the block I/O they cause.
	hitSeen          bool
	procInfo         map[event.ProcessKey]*procInfo
	pidStarts        map[uint32][]int64
	devNames         map[event.Device]string
	noPath           uint64 // file events with a handle but no path
	unknown          uint64 // events of an unknown layer
	excluded         uint64 // left out by Options.ExcludePaging
	markers          []marker
	markersTotal     uint64
	heatBlock        *heatmap.Map
	heatOps          [event.NumOps]*heatmap.Map
	lastRaw, lastKey string
	haveLastKey      bool
}

// New returns an empty report.
func New(opts Options) *Report {
	opts = opts.normalized()
	r := &Report{
		opts:      opts,
		procs:     newTable(opts.Capacity, processSlot, compareProcess),
		files:     newTable(opts.Capacity, stringSlot, strings.Compare),
		devices:   make(map[event.Device]*device),
		errs:      make(map[errKey]*errGroup),
		procInfo:  make(map[event.ProcessKey]*procInfo),
		pidStarts: make(map[uint32][]int64),
		devNames:  make(map[event.Device]string),
		recent:    newRecentBlocks(1 << 16),
	}
	r.slow.init(opts.TopN)
	r.slowBlock.init(opts.TopN)
	if opts.Heatmap {
		r.heatBlock = heatmap.New(0)
	}
	return r
}

// tracedLayers are the layers the trace's source traced, 0 when it does
// not say.
func (r *Report) tracedLayers() event.Layers {
	var t *event.Trailer
	if r.ended {
		t = &r.trailer
	}
	return event.TracedLayers(&r.hdr, t)
}

// Began reports whether the stream has begun (a live trace that could not
// start has nothing to report).
func (r *Report) Began() bool { return r.began }

// Begin implements event.Sink.
func (r *Report) Begin(h *event.Header) error {
	r.hdr = *h
	r.began = true
	return nil
}

// End implements event.Sink.
func (r *Report) End(t *event.Trailer) error {
	r.trailer.End = t.End
	r.trailer.Stats.Merge(t.Stats)
	if t.Layers != 0 {
		r.trailer.Layers = t.Layers
	}
	r.ended = true
	return nil
}

// Fact implements event.Sink: processes feed the process tree and names,
// devices their names.
func (r *Report) Fact(f *event.Fact) error {
	r.facts++
	switch f.Kind {
	case event.FactProcess:
		if f.End {
			return nil
		}
		k := event.ProcessKey{Pid: f.Pid, Start: f.ProcStart}
		pi := r.procInfo[k]
		if pi == nil {
			pi = &procInfo{}
			r.procInfo[k] = pi
			r.pidStarts[f.Pid] = append(r.pidStarts[f.Pid], f.ProcStart)
		}
		pi.ppid = f.PPid
		if f.Name != "" {
			pi.name = f.Name
		}
		if f.Image != "" {
			pi.image = f.Image
		}
		if f.Detail != "" {
			pi.cmdline = f.Detail
		}
	case event.FactDevice:
		if f.Name != "" {
			r.devNames[f.Dev] = f.Name
		}
	}
	return nil
}

// Event implements event.Sink.
func (r *Report) Event(e *event.Event) error {
	r.events++
	end := e.Time + e.Duration
	if !r.haveTime {
		r.minTime, r.maxEnd, r.haveTime = e.Time, end, true
	} else {
		if e.Time < r.minTime {
			r.minTime = e.Time
		}
		if end > r.maxEnd {
			r.maxEnd = end
		}
	}
	switch e.Layer {
	case event.LayerFile:
		if r.opts.ExcludePaging && e.Flags&event.FlagPaging != 0 {
			r.excluded++
			return nil
		}
		r.fileEvent(e)
	case event.LayerBlock:
		r.blockEvent(e)
	case event.LayerMarker:
		r.markersTotal++
		r.layers[event.LayerMarker].count++
		if len(r.markers) < maxMarkers {
			r.markers = append(r.markers, marker{time: e.Time, note: e.Note, pid: e.Pid})
		}
	default:
		r.unknown++
	}
	return nil
}

// dataBytes returns the bytes an event moved: Bytes when known, for block
// I/O the requested Size otherwise, except for an I/O whose completion was
// never seen: its bytes are not known to have moved (0, as the null bytes
// of Parquet and the -1 of scripts say; it is counted as incomplete).
func dataBytes(e *event.Event) uint64 {
	if e.Bytes >= 0 {
		return uint64(e.Bytes)
	}
	if e.Layer == event.LayerBlock && e.Flags&event.FlagNoCompletion == 0 {
		return e.Size
	}
	return 0
}

// movesData reports whether op's bytes count as data moved (totals and
// rankings). Of the other file ops only readdir's bytes (directory
// entries) are shown; the rest (lseek's offset, an ioctl's range) are not
// bytes moved.
func movesData(op event.Op) bool {
	switch op {
	case event.OpRead, event.OpWrite, event.OpCopy, event.OpAsync, event.OpBlockRead, event.OpBlockWrite:
		return true
	}
	return false
}

func (r *Report) fileKey(path string) string {
	if r.opts.PathKey == nil || path == "" {
		return path
	}
	if r.haveLastKey && path == r.lastRaw {
		return r.lastKey
	}
	r.lastRaw, r.lastKey, r.haveLastKey = path, r.opts.PathKey(path), true
	return r.lastKey
}

func (r *Report) fileEvent(e *event.Event) {
	op := e.Op
	if int(op) >= event.NumOps {
		op = event.OpUnknown
	}
	incomplete := e.Flags&event.FlagNoCompletion != 0
	dur := uint64(0)
	if e.Duration > 0 && !incomplete {
		dur = uint64(e.Duration)
	}
	b := dataBytes(e)
	db := uint64(0)
	if movesData(op) {
		db = b
	}
	failed := e.Status.Failed()

	os := &r.ops[op]
	os.count++
	if db > 0 || op == event.OpReadDir {
		os.bytes += b
	}
	os.time += dur
	os.causedIOs += uint64(e.CausedIOs)
	os.causedB += e.CausedBytes
	lt := &r.layers[event.LayerFile]
	lt.count++
	lt.bytes += db
	lt.time += dur
	if failed {
		os.failed++
		lt.failed++
	}
	if incomplete {
		os.incomplete++
		lt.incomplete++
	} else {
		os.lat.Add(dur)
		os.h.Add(dur / 1000)
		if r.heatBlock != nil {
			hm := r.heatOps[op]
			if hm == nil {
				hm = heatmap.New(0)
				r.heatOps[op] = hm
			}
			hm.Add(e.Time, int64(dur))
		}
	}
	if e.CausedIOs > 0 || e.Flags&(event.FlagCacheHit|event.FlagWaitedIO) != 0 {
		r.linkSeen = true
	}
	if e.Flags&(event.FlagCacheHit|event.FlagWaitedIO) != 0 || e.ReadKnown() != 0 {
		// The source classifies reads: one it did not is not a hit.
		r.hitSeen, r.linkSeen = true, true
	}

	// Cache behaviour of a completed read: it caused block I/O itself (a
	// disk read, what it did not get from its own I/O came from the
	// cache), waited for I/O already in flight (FlagWaitedIO), was
	// flagged a cache hit, or none of these (see cacheOut).
	var cc cacheCounts
	cc.causedIOs = uint64(e.CausedIOs)
	cc.causedB = e.CausedBytes
	if op == event.OpRead && !incomplete && !failed && e.ReadKnown() != 0 {
		provenance(&cc, e, b)
	} else if op == event.OpRead && !incomplete && !failed {
		cc.reads = 1
		switch {
		case e.CausedIOs != 0 && e.Flags&event.FlagCacheHit == 0:
			cc.diskReads = 1
			cc.bytesDisk = min(e.CausedBytes, b)
			cc.bytesCache = b - cc.bytesDisk
		case e.Flags&event.FlagWaitedIO != 0:
			cc.waitedReads, cc.bytesWaited = 1, b
		case e.Flags&event.FlagCacheHit != 0:
			cc.bytesCache = b
		default:
			cc.unflagged, cc.bytesUnflagged = 1, b
		}
	}
	hasCache := cc != cacheCounts{}
	if hasCache {
		r.cache.merge(&cc)
	}

	pe, created := r.procs.get(e.Process())
	if created {
		pe.pk = e.Process()
	}
	if pe.name == "" && e.Comm != "" {
		pe.name = e.Comm
	}
	addEntity(pe, op, b, db, dur, failed, incomplete, hasCache, &cc)

	path := e.Path
	if path == "" && e.HasHandle() {
		r.noPath++
	}
	key := r.fileKey(path)
	if key == "" {
		key = "(no path)"
	}
	fe, created := r.files.get(key)
	if created {
		fe.name = key
	}
	addEntity(fe, op, b, db, dur, failed, incomplete, hasCache, &cc)

	if failed {
		r.addError(e, op, key)
	}
	if !incomplete && r.slow.wants(dur) {
		s := r.slow.add(e, dur)
		if e.CausedIOs > 0 {
			s.blocks = r.recent.take(e.ID, s.blocks)
		}
	}
}

// addEntity counts a file event in x; cc (when hasCache) is how a read
// was served and what block I/O the event caused.
func addEntity(x *entity, op event.Op, b, db, dur uint64, failed, incomplete, hasCache bool, cc *cacheCounts) {
	oc := &x.ops[op]
	x.opsUsed |= 1 << op
	oc.count++
	if db > 0 || op == event.OpReadDir {
		oc.bytes += b
	}
	oc.time += dur
	x.tot.count++
	x.tot.bytes += db
	x.tot.time += dur
	if failed {
		oc.failed++
		x.tot.failed++
	}
	if !incomplete {
		x.lat.Add(dur)
	}
	if hasCache {
		x.c.merge(cc)
	}
}

func (r *Report) addError(e *event.Event, op event.Op, path string) {
	k := errKey{op: op, status: e.Status, code: e.Code, path: path}
	g := r.errs[k]
	if g == nil {
		if len(r.errs) >= r.opts.Capacity {
			r.errOther++
			return
		}
		g = &errGroup{first: e.Time, comm: e.Comm, pid: e.Pid}
		r.errs[k] = g
	}
	g.count++
}

func (r *Report) blockEvent(e *event.Event) {
	r.blockSeen = true
	op := e.Op
	idx := int(op) - int(event.OpBlockRead)
	if idx < 0 || idx > 3 {
		r.unknown++
		return
	}
	incomplete := e.Flags&event.FlagNoCompletion != 0
	dur := uint64(0)
	if e.Duration > 0 && !incomplete {
		dur = uint64(e.Duration)
	}
	b := dataBytes(e)
	failed := e.Status.Failed()

	lt := &r.layers[event.LayerBlock]
	lt.count++
	if movesData(op) {
		lt.bytes += b
	}
	lt.time += dur
	os := &r.ops[op]
	os.count++
	os.bytes += b
	os.time += dur

	d := r.devices[e.Dev]
	if d == nil {
		d = &device{dev: e.Dev, first: e.Time, last: e.Time + int64(dur)}
		r.devices[e.Dev] = d
	}
	oc := &d.ops[idx]
	oc.count++
	oc.bytes += b
	oc.time += dur
	if failed {
		oc.failed++
		os.failed++
		lt.failed++
	}
	if e.Time < d.first {
		d.first = e.Time
	}
	if end := e.Time + int64(dur); end > d.last {
		d.last = end
	}
	if incomplete {
		d.incomplete++
		os.incomplete++
		lt.incomplete++
	} else {
		wait := uint64(0)
		if e.Wait > 0 {
			wait = min(uint64(e.Wait), dur)
		}
		d.lat.Add(dur)
		d.wait.Add(wait)
		d.svc.Add(dur - wait)
		d.h.Add(dur / 1000)
		os.lat.Add(dur)
		os.h.Add(dur / 1000)
		if r.heatBlock != nil {
			r.heatBlock.Add(e.Time, int64(dur))
		}
	}
	if op == event.OpBlockRead || op == event.OpBlockWrite {
		d.size.Add(b)
		if d.haveLast && e.Sector == d.lastEnd {
			d.seq++
		} else if d.haveLast {
			d.random++
		} else {
			d.random++ // the first I/O has no predecessor
		}
		d.lastEnd = e.Sector + (b+511)/512
		d.haveLast = true
	}
	if e.Flags&event.FlagWriteback != 0 {
		d.writeback++
	}
	if e.Flags&event.FlagReadahead != 0 {
		d.readaheadIOs++
	}

	// Attribution: the submitter, and the file when the block event names
	// one without a cause link (with a link, the causing file op counts it).
	pe, created := r.procs.get(e.Process())
	if created {
		pe.pk = e.Process()
	}
	if pe.name == "" && e.Comm != "" {
		pe.name = e.Comm
	}
	// Bytes as in the layer's total: data moved (reads and writes), not
	// the ranges of discards or flushes.
	db := uint64(0)
	if movesData(op) {
		db = b
	}
	pe.blockIOs++
	pe.blockBytes += db
	if e.Cause == 0 && e.Path != "" {
		fe, created := r.files.get(r.fileKey(e.Path))
		if created {
			fe.name = r.fileKey(e.Path)
		}
		fe.blockIOs++
		fe.blockBytes += db
	}
	if e.Cause != 0 {
		r.linkSeen = true
		d.caused++
		ref := makeBlockRef(e, dur)
		if s := r.slow.byID[e.Cause]; s != nil {
			s.attach(ref)
		}
		r.recent.add(e.Cause, ref)
	}
	if !incomplete && r.slowBlock.wants(dur) {
		r.slowBlock.add(e, dur)
	}
}

// blockRef is a block I/O shown in a cause chain.
type blockRef struct {
	ID       uint64
	Op       event.Op
	Dev      event.Device
	Sector   uint64
	Bytes    uint64
	Time     int64
	Wait     int64
	Duration int64
	Status   event.Status
}

func makeBlockRef(e *event.Event, dur uint64) blockRef {
	return blockRef{ID: e.ID, Op: e.Op, Dev: e.Dev, Sector: e.Sector, Bytes: dataBytes(e),
		Time: e.Time, Wait: e.Wait, Duration: int64(dur), Status: e.Status}
}

// maxChain bounds the block I/Os kept per slow operation.
const maxChain = 32

// slowOp is one of the slowest operations, with its cause chain.
type slowOp struct {
	ev      event.Event
	dur     uint64
	blocks  []blockRef
	dropped uint64 // chain entries beyond maxChain
	idx     int
}

func (s *slowOp) attach(b blockRef) {
	if len(s.blocks) < maxChain {
		s.blocks = append(s.blocks, b)
	} else {
		s.dropped++
	}
}

// slowHeap keeps the n slowest operations (a min-heap on duration).
type slowHeap struct {
	n    int
	h    []*slowOp
	byID map[uint64]*slowOp
}

func (s *slowHeap) init(n int) {
	s.n = n
	s.byID = make(map[uint64]*slowOp, n)
}

func (s *slowHeap) Len() int           { return len(s.h) }
func (s *slowHeap) Less(i, j int) bool { return s.h[i].dur < s.h[j].dur }
func (s *slowHeap) Swap(i, j int) {
	s.h[i], s.h[j] = s.h[j], s.h[i]
	s.h[i].idx, s.h[j].idx = i, j
}
func (s *slowHeap) Push(x any) { o := x.(*slowOp); o.idx = len(s.h); s.h = append(s.h, o) }
func (s *slowHeap) Pop() any {
	o := s.h[len(s.h)-1]
	s.h = s.h[:len(s.h)-1]
	return o
}

// wants reports whether an operation of duration dur enters the heap.
func (s *slowHeap) wants(dur uint64) bool {
	return len(s.h) < s.n || dur > s.h[0].dur
}

// add inserts e (which must be wanted), evicting the fastest when full.
func (s *slowHeap) add(e *event.Event, dur uint64) *slowOp {
	o := &slowOp{ev: *e, dur: dur}
	if len(s.h) >= s.n {
		old := heap.Pop(s).(*slowOp)
		if s.byID[old.ev.ID] == old {
			delete(s.byID, old.ev.ID)
		}
		o.blocks = old.blocks[:0]
	}
	heap.Push(s, o)
	if e.ID != 0 {
		s.byID[e.ID] = o
	}
	return o
}

// provenance counts a read classified by page-cache provenance (its
// Read fields; b its bytes): a cache hit when every byte was already in
// memory, a disk read when some came from disk for it, a waited read
// when some waited for I/O in flight.
func provenance(cc *cacheCounts, e *event.Event, b uint64) {
	cc.reads, cc.provReads = 1, 1
	cc.bytesCache, cc.bytesAhead, cc.bytesDisk, cc.bytesWaited = e.ReadCached, e.ReadAhead, e.ReadDisk, e.ReadWaited
	if k := e.ReadKnown(); b > k {
		cc.bytesUnknown = b - k
	}
	switch {
	case e.ReadDisk != 0:
		cc.diskReads = 1
	case e.ReadWaited != 0:
		cc.waitedReads = 1
	case e.ReadCached == b:
	default:
		// read-ahead, or partly not classified: neither a hit nor a miss
		cc.unflagged = 1
	}
}
