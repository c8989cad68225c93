package etw

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Stacks.
//
// The kernel walks the stack of chosen events itself and logs it as a
// StackWalk event right after the event, with the event's timestamp and
// thread (EventTimeStamp, StackThread): a stack belongs to the event with
// both, as TraceEvent joins them. The user part of a kernel event's stack
// is walked when the thread returns to user mode and logged then, shared
// by the thread's kernel events since its last return. With stack caching
// ("compressed stacks") the parts come as references to cache keys, and
// the keys' frames come in key definitions, mostly later (when the kernel
// evicts a key, and at the end of the session for the rest). Manifest
// events (Kernel-File) carry their stack inline, as an extended data item.
//
// A file's first pass takes every stack record and key definition before
// the merge by time (takeFirst) and assembles each event's stack
// (assemble); the second pass gives each event its stack as it meets the
// event (takeStack), in time order. The first pass notes the time and
// thread of every other record (noteRecord): a stack no event takes is
// of a record iotrace does not decode, or of none (its event was lost:
// flushStacks). A live session joins a stack to a
// recent pending event (noteTarget, findTarget) and holds a complete event
// whose stack still waits for its user part (emitStacked, liveUser).
//
// A stack belongs to the request record of a FileIo or Kernel-File
// operation and to the Init of a disk I/O: it stays with the pending
// request until the event is emitted. Identical stacks are written once,
// as a FactStack before the first event that refers to it.

// Counter names of stacks.
const (
	StatStacksFile        = "etw: file requests with a stack"
	StatStacksDisk        = "etw: disk I/Os with a stack"
	StatStacksFlush       = "etw: disk flushes with a stack"
	StatStackRecords      = "etw: stack records joined to their event (StackWalk, extended data)"
	StatStacksOther       = "etw: stack records of other events (process, thread, image…: not kept)"
	StatStacksNoEvent     = "etw: stack records of other records in the trace (CPU samples, CLR, events iotrace does not decode: not kept)"
	StatStacksUserAlone   = "etw: user parts of stacks no event took, walked when their thread returned to user mode (their event not looked for: not kept)"
	StatStacksOrphan      = "etw: stack records of no record in the trace (no record of their time and thread: their event lost)"
	StatStacksUndecoded   = "etw: stack records of records iotrace does not decode (live: CPU samples, CLR…: not kept)"
	StatStacksNoRecent    = "etw: stack records matching none of the latest records (live: their event lost, or more than 32 records of its processor came between them: dropped)"
	StatStacksLate        = "etw: stacks of events already emitted (dropped)"
	StatStackKeyUndefined = "etw: stack key references whose key the trace never defines (that part of the stack is lost)"
	StatStackUserShared   = "etw: stacks whose user part is the one walked when their thread returned to user mode (shared by the kernel events of one system call)"
	StatStacksOff         = "etw: stack records left aside (stacks not wanted)"
	StatStackUserNever    = "etw: stacks whose user part never came (live: the thread did not return to user mode in time; flagged user-lost)"
	StatStackKeyExt       = "etw: stack keys in extended data (not resolved: that stack is lost)"
	StatStackUserGone     = "etw: stacks whose user part never came (their thread ended, or its ID went to another process, before it returned to user mode; flagged user-lost)"
)

// stackParts is a stack as it is being assembled.
type stackParts struct {
	kernel, user []uint64
	has          bool
	lost         event.FactFlags
	// waiting (live sessions): the kernel part came, the user part will
	// come when thread tid returns to user mode.
	waiting  bool
	pid, tid uint32
}

// target kinds: what a stack record may belong to.
const (
	targetOther     uint8 = iota // an event whose stack iotrace does not keep
	targetUndecoded              // a record iotrace does not decode
	targetFile                   // a pending file request
	targetDisk                   // a pending disk Init
	targetDone                   // an event already emitted
)

// stackTarget is a recent event a stack may belong to.
type stackTarget struct {
	ts   int64 // raw timestamp
	tid  uint32
	kind uint8
	req  *fileReq
	id   uint64 // the request's event ID (the fileReq may be reused)
	irp  uint64
}

// numTargets is how many recent events of its processor a stack is
// looked for among.
const numTargets = 32

// targetRing is the recent events of one processor.
type targetRing struct {
	t    [numTargets]stackTarget
	next int
}

type stackEntry struct {
	kernel, user []uint64
	flags        event.FactFlags
	id           uint64
}

// stackState is the pipeline's stack state.
type stackState struct {
	// A live session: recent events a stack may follow, by processor
	// (the kernel logs a walk right after its event, on its processor;
	// once the processors' buffers are merged by time, other
	// processors' events come between them).
	targets []targetRing
	// A file's first pass: the stacks, by event, and the key
	// definitions; the second pass takes them in time order (cur).
	raw        [][]rawStack // in chunks of rawChunk (never copied)
	nraw       int
	pres       []preStack
	order      []tsIndex          // pres in time order: by time, thread, then index (low 32 bits)
	cur        int                // in order
	waitUser   map[uint32][]int32 // per thread, the events waiting for a user part
	arena      [][]uint64         // frames kept, by chunk (keep)
	defs       []keyDef
	defsSorted bool
	take       stackParts
	// A live session: pending events waiting for a user part, and the
	// events held for one, by thread.
	liveWait map[uint32][]liveWaiter
	held     map[uint32][]heldEvent
	heldN    int
	// Interned stacks.
	ids     map[uint64][]stackEntry
	lastID  uint64
	seed    maphash.Seed
	idsHint int    // the stacks a file's second pass may intern
	hbuf    []byte // internStack's hash input
	scratch []uint64
	errs    map[string]uint64 // damaged stack records of the first pass, by counter
	errMsgs []string
	undec   []undecoded // records of the first pass no decoder knows
	// A file's first pass: the time and thread of every record but
	// stack walks, by processor, in the order of its stream (noteRecord).
	recent []recentRecs // by processor
	noTid  []noTidLog   // by processor
}

// The first pass of a file tells the stacks no event takes apart: those of
// a record in the trace (a record iotrace does not decode) and those of
// none (their event was lost). The kernel logs a stack walk right after
// its event, on the event's processor: a stack's event is looked for
// among the latest records of the walk's processor (recentRecs), then,
// as a record with no thread in its header (a PERFINFO record: a sample,
// a context switch; the stack's thread is in its payload), on any
// processor (noTidLog: such records are logged on another processor at
// times). A record with a thread in its header is not looked for on
// other processors: its thread was running on that processor, not on the
// walk's. Both are filled in the order of each processor's stream, which
// is the same however the file is read (merged by time or not, cached or
// not): they tell the same stacks apart.

// numRecent is how many of the latest records of its processor's stream
// a stack walk's event is looked for among (a power of 2).
const numRecent = 32

// recentRecs is the time and thread of the latest records of one
// processor's stream but stack walks.
type recentRecs struct {
	ts    [numRecent]int64
	tid   [numRecent]uint32
	next  uint32
	noTid *noTidChunk // the last chunk of the processor's noTidLog
}

// noTidLog is the time of every record of one processor's stream with no
// thread in its header, in chunks (never copied).
type noTidLog struct {
	chunks []*noTidChunk
}

// noTidChunkLen is the length of a noTidLog's chunks.
const noTidChunkLen = 4096

// noTidChunk is times of records of one processor. Once full (close), it
// knows its span and whether they are in order.
type noTidChunk struct {
	n        int
	min, max int64
	sorted   bool
	ts       [noTidChunkLen]int64
}

// noteRecord notes a record other than a stack walk that a file's first
// pass sees: it must see every record once, in the order of its
// processor's stream.
func (s *stackState) noteRecord(r *record.Record) {
	c := int(r.CPU)
	if c >= len(s.recent) {
		s.growRecent(c)
	}
	g := &s.recent[c]
	i := g.next % numRecent
	g.ts[i], g.tid[i] = r.Timestamp, r.ThreadID
	g.next++
	if r.ThreadID == record.NoID {
		if ch := g.noTid; ch != nil && ch.n < noTidChunkLen {
			ch.ts[ch.n] = r.Timestamp
			ch.n++
		} else {
			s.noteNoTid(c, r.Timestamp)
		}
	}
}

// growRecent makes room for processor c.
func (s *stackState) growRecent(c int) {
	s.recent = append(s.recent, make([]recentRecs, c+1-len(s.recent))...)
	s.noTid = append(s.noTid, make([]noTidLog, c+1-len(s.noTid))...)
}

// noteNoTid logs the time of a record of processor c with no thread in
// its header that begins a chunk.
func (s *stackState) noteNoTid(c int, ts int64) {
	g, l := &s.recent[c], &s.noTid[c]
	if g.noTid != nil {
		g.noTid.close()
	}
	g.noTid = &noTidChunk{n: 1}
	g.noTid.ts[0] = ts
	l.chunks = append(l.chunks, g.noTid)
}

// close notes the time span of a chunk, and whether it is in order.
func (ch *noTidChunk) close() {
	t := ch.ts[:ch.n]
	ch.sorted = slices.IsSorted(t)
	if ch.sorted {
		ch.min, ch.max = t[0], t[len(t)-1]
	} else {
		ch.min, ch.max = slices.Min(t), slices.Max(t)
	}
}

// followsRecord reports whether one of the latest records of processor
// cpu's stream is at ts on thread tid, or at ts with no thread in its
// header.
func (s *stackState) followsRecord(cpu uint16, ts int64, tid uint32) bool {
	if int(cpu) >= len(s.recent) {
		return false
	}
	g := &s.recent[cpu]
	// The latest first: mostly the one right before the walk.
	for k := uint32(1); k <= numRecent && k <= g.next; k++ {
		i := (g.next - k) % numRecent
		if g.ts[i] == ts && (g.tid[i] == tid || g.tid[i] == record.NoID) {
			return true
		}
	}
	return false
}

// closeNoTid closes the last chunk of each processor's noTidLog.
func (s *stackState) closeNoTid() {
	for c := range s.noTid {
		if n := len(s.noTid[c].chunks); n > 0 {
			s.noTid[c].chunks[n-1].close()
		}
	}
}

// loggedNoTid reports whether a record with no thread in its header is
// at ts, on any processor. The chunks must be closed (closeNoTid).
func (s *stackState) loggedNoTid(ts int64) bool {
	for c := range s.noTid {
		for _, ch := range s.noTid[c].chunks {
			if ts < ch.min || ts > ch.max {
				continue
			}
			t := ch.ts[:ch.n]
			if ch.sorted {
				if _, ok := slices.BinarySearch(t, ts); ok {
					return true
				}
			} else if slices.Contains(t, ts) {
				return true
			}
		}
	}
	return false
}

// noteTarget records an event of thread tid (stackTid) a stack record
// may follow.
func (p *Pipeline) noteTarget(r *record.Record, tid uint32, kind uint8, req *fileReq, irp uint64) {
	if p.mode != modeLive {
		return
	}
	if tid == record.NoID && kind != targetFile && kind != targetDisk {
		// An event without a thread that cannot carry a stack (a
		// disk completion): no stack of any thread is its.
		return
	}
	s := &p.stk
	if int(r.CPU) >= len(s.targets) {
		s.targets = append(s.targets, make([]targetRing, int(r.CPU)+1-len(s.targets))...)
	}
	g := &s.targets[r.CPU]
	t := &g.t[g.next]
	g.next = (g.next + 1) % numTargets
	*t = stackTarget{ts: r.Timestamp, tid: tid, kind: kind, req: req, irp: irp}
	if req != nil {
		t.id = req.ev.ID
	}
}

// findTarget returns the latest event with the stack's timestamp and
// thread among the recent events of the stack's processor, then of the
// others (thread 0 only on its own: one idle thread per processor).
func (p *Pipeline) findTarget(ts int64, tid uint32, cpu uint16) *stackTarget {
	s := &p.stk
	if int(cpu) < len(s.targets) {
		if t := s.targets[cpu].find(ts, tid); t != nil {
			return t
		}
	}
	if tid == 0 {
		return nil
	}
	for c := range s.targets {
		if c != int(cpu) {
			if t := s.targets[c].find(ts, tid); t != nil {
				return t
			}
		}
	}
	return nil
}

// find returns the latest event of g with that timestamp and thread (or
// no thread).
func (g *targetRing) find(ts int64, tid uint32) *stackTarget {
	for i := 1; i <= numTargets; i++ {
		t := &g.t[(g.next-i+numTargets)%numTargets]
		if t.ts == ts && (t.tid == tid || t.tid == record.NoID) {
			return t
		}
	}
	return nil
}

// stackTid returns the thread whose stack walks belong to the event of r:
// its header's thread, else the payload's issuing thread (TTID), as
// PerfView fills it; record.NoID when neither.
func stackTid(r *record.Record, ev *kernel.Event) uint32 {
	if r.ThreadID != record.NoID {
		return r.ThreadID
	}
	if ev != nil && ev.HasTTID && ev.TTID != 0 {
		return ev.TTID
	}
	return record.NoID
}

// kernelAddr reports whether a is a kernel-space address.
func kernelAddr(a uint64, ptr int) bool {
	if ptr == 4 {
		return a >= 0x80000000
	}
	return a >= 0xFFFF800000000000
}

// splitFrames appends the kernel frames (innermost, first) and the user
// frames of a whole stack to sp.
func splitFrames(sp *stackParts, addrs []uint64, ptr int) {
	i := 0
	for i < len(addrs) && kernelAddr(addrs[i], ptr) {
		i++
	}
	sp.kernel = slices.Clone(addrs[:i])
	sp.user = slices.Clone(addrs[i:])
	sp.has = true
}

// part is one part (kernel or user) of a collected stack: frames in the
// arena, or a reference to a cache key.
type part struct {
	off, n uint32 // frames: arena[off:off+n]
	key    uint64 // the cache key of a reference
	ts     int64  // the time of the reference record
	isRef  bool
	ok     bool
}

// preStack is the stack of one event, collected in the first pass of a
// file. It holds no pointers: a file's thousands of them cost the
// garbage collector nothing.
type preStack struct {
	ts         int64 // the event's timestamp (raw), process and thread
	pid, tid   uint32
	cpu        uint16 // the event's processor (told apart for thread 0)
	nrec       uint32 // stack records
	kern, user part
	shared     bool // user came from another event's stack record
	taken      bool // an event of the second pass took it
	seen       bool // a record of its time and thread is in the trace (followsRecord, loggedNoTid)
	userGone   bool // its thread's ID went to another process first
}

// maxWaitUser bounds the events of one thread waiting for a user part
// (the threads of the System process never return to user mode).
const maxWaitUser = 256

// collectStack keeps a stack record for the second pass.
//
// The kernel walks the user part of a stack when the thread returns to
// user mode: a kernel event's stack comes as a kernel part at the event
// and a user part at the end of the system call, logged with the
// timestamp of one event of the call and shared by every kernel event of
// the thread since its last return to user mode, as TraceEvent assembles
// them. The user part may come after the event is complete (a disk I/O
// completes before its issuer returns to user mode): collecting them in
// the first pass gives each event its whole stack.
func (p *Pipeline) collectStack(r *record.Record, sw *kernel.StackWalk) {
	s := &p.stk
	raw := rawStack{recTS: r.Timestamp, ts: sw.StackTime, pid: sw.Pid, tid: sw.Tid, cpu: r.CPU,
		seen: s.followsRecord(r.CPU, sw.StackTime, sw.Tid)}
	switch {
	case sw.Kind == kernel.KindStack:
		ptr := sw.Frames.PtrSize()
		fr := s.keepFrames(sw.Frames)
		f := s.frames(fr)
		i := 0
		for i < len(f) && kernelAddr(f[i], ptr) {
			i++
		}
		raw.off, raw.nk, raw.n = fr.off, uint32(i), fr.n
	case sw.Opcode == kernel.OpcodeStackKeyKernel:
		raw.key, raw.ref = sw.StackKey, refKernel
	default:
		raw.key, raw.ref = sw.StackKey, refUser
	}
	s.appendRaw(raw)
}

// appendRaw keeps a collected stack record.
func (s *stackState) appendRaw(raw rawStack) {
	n := len(s.raw)
	if n == 0 || len(s.raw[n-1]) == cap(s.raw[n-1]) {
		s.raw = append(s.raw, make([]rawStack, 0, rawChunk))
		n++
	}
	s.raw[n-1] = append(s.raw[n-1], raw)
	s.nraw++
}

// rawChunk is the size of the chunks of collected stack records.
const rawChunk = 4096

// rawStack is a stack record as the first pass takes it, before the
// merge by time (assemble orders them): n frames kept at off (keep), the
// first nk of them kernel frames, or a reference to a cache key.
type rawStack struct {
	recTS, ts int64 // the record's time; the event's
	key       uint64
	off, nk   uint32
	n, tid    uint32
	pid       uint32
	cpu       uint16 // the processor the walk ran on (the event's)
	ref       uint8
	seen      bool // its event is in the trace (followsRecord; loggedNoTid, but for a user part alone)
}

// Kinds of key references of a rawStack.
const (
	refNone uint8 = iota
	refKernel
	refUser
	refThreadEnd // not a stack: the Thread End of pid, tid at recTS
)

// assemble builds the stacks of events from the stack records, in time
// order. It returns its sort buffer, emptied, for sortCollected.
func (s *stackState) assemble() []tsIndex {
	order := make([]tsIndex, 0, s.nraw)
	s.closeNoTid()
	for c, chunk := range s.raw {
		for i := range chunk {
			r := &chunk[i]
			if !r.seen && (r.ref == refKernel || r.ref == refNone && r.nk > 0) {
				// Not right after its event: its event may be a
				// record with no thread in its header on another
				// processor. A user part alone is not looked for.
				r.seen = s.loggedNoTid(r.ts)
			}
			order = append(order, tsIndex{ts: r.recTS, i: uint64(c*rawChunk + i)})
		}
	}
	s.recent, s.noTid = nil, nil
	sortTS(order)
	s.waitUser = make(map[uint32][]int32)
	s.pres = make([]preStack, 0, s.nraw)
	for _, o := range order {
		r := &s.raw[o.i/rawChunk][o.i%rawChunk]
		switch r.ref {
		case refKernel:
			s.addKernel(r, part{key: r.key, ts: r.recTS, isRef: true, ok: true})
			continue
		case refUser:
			s.addUser(r, part{key: r.key, ts: r.recTS, isRef: true, ok: true})
			continue
		case refThreadEnd:
			s.threadEnd(r.pid, r.tid)
			continue
		}
		kern := part{off: r.off, n: r.nk, ok: r.nk > 0}
		user := part{off: r.off + r.nk, n: r.n - r.nk, ok: r.n > r.nk} // same chunk
		switch {
		case kern.ok && user.ok:
			// A whole stack: its user part is its own.
			s.pres = append(s.pres, preStack{ts: r.ts, pid: r.pid, tid: r.tid, cpu: r.cpu, nrec: 1, kern: kern, user: user, seen: r.seen})
		case kern.ok:
			s.addKernel(r, kern)
		case user.ok:
			s.addUser(r, user)
		}
	}
	s.raw, s.nraw = nil, 0
	return order[:0]
}

// addKernel collects the kernel part of the stack of the event of stack
// record r: the event then waits for its thread's next user part.
func (s *stackState) addKernel(r *rawStack, k part) {
	tid := r.tid
	s.pres = append(s.pres, preStack{ts: r.ts, pid: r.pid, tid: tid, cpu: r.cpu, nrec: 1, kern: k, seen: r.seen})
	list := s.waitUser[tid]
	if len(list) >= maxWaitUser {
		list = append(list[:0], list[1:]...)
	}
	s.waitUser[tid] = append(list, int32(len(s.pres)-1))
}

// addUser collects a user part: the event's own, and that of every kernel
// event of the thread still waiting for one. A waiting event of another
// process had its thread end before it returned to user mode, the
// thread's ID then reused: it gets none (userGone).
func (s *stackState) addUser(r *rawStack, u part) {
	ts, pid, tid := r.ts, r.pid, r.tid
	list := s.waitUser[tid]
	own := false
	for _, j := range list {
		e := &s.pres[j]
		if e.user.ok {
			continue
		}
		if e.pid != pid {
			e.userGone = true
			continue
		}
		e.user, e.shared = u, true
		if e.ts == ts && !own {
			e.shared, own = false, true
			e.nrec++
			e.seen = e.seen || r.seen
		}
	}
	if list != nil {
		s.waitUser[tid] = list[:0]
	}
	if !own {
		s.pres = append(s.pres, preStack{ts: ts, pid: pid, tid: tid, cpu: r.cpu, nrec: 1, user: u, seen: r.seen})
	}
}

// collectThreadEnd keeps a Thread End for assemble: the kernel parts its
// thread's stacks wait with get no user part (a file's first pass).
func (s *stackState) collectThreadEnd(ts int64, pid, tid uint32) {
	s.appendRaw(rawStack{recTS: ts, ts: ts, pid: pid, tid: tid, ref: refThreadEnd})
}

// threadEnd gives up the user parts the stacks of thread tid of process
// pid wait for: it ended before returning to user mode.
func (s *stackState) threadEnd(pid, tid uint32) {
	list := s.waitUser[tid]
	n := 0
	for _, j := range list {
		e := &s.pres[j]
		if e.pid != pid {
			list[n] = j
			n++
			continue
		}
		if !e.user.ok {
			e.userGone = true
		}
	}
	if list != nil {
		s.waitUser[tid] = list[:n]
	}
}

// arenaChunk is the size of the arena's chunks, in frames: the arena
// grows by chunks, never copied (a stack has at most a few hundred
// frames; a record's payload at most 16,384).
const arenaChunk = 1 << 16

// keepFrames copies the frames of a record into the arena of collected
// frames, decoded straight into it. A part's off is the chunk (high 16
// bits) and the offset in it (low 16 bits).
func (s *stackState) keepFrames(fr kernel.Frames) part {
	n := len(s.arena)
	k := fr.Len()
	if n == 0 || len(s.arena[n-1])+k > cap(s.arena[n-1]) {
		s.arena = append(s.arena, make([]uint64, 0, max(arenaChunk, k)))
		n++
	}
	c := &s.arena[n-1]
	off := len(*c)
	*c = fr.AppendTo(*c)
	return part{off: uint32(n-1)<<16 | uint32(off), n: uint32(k), ok: true}
}

// frames returns the frames of a part that holds frames.
func (s *stackState) frames(pt part) []uint64 {
	c := s.arena[pt.off>>16]
	off := pt.off & 0xffff
	return c[off : off+pt.n : off+pt.n]
}

// sortCollected orders the collected stacks by event (the second pass
// meets the events in time order) and the key definitions by key.
func (s *stackState) sortCollected() {
	// Sort small (time, thread and index) keys: the stacks stay where
	// assemble put them (no stack can outnumber the records it reused
	// the buffer of).
	order := s.assemble()
	for i := range s.pres {
		order = append(order, tsIndex{ts: s.pres[i].ts, i: uint64(s.pres[i].tid)<<32 | uint64(i)})
	}
	sortTS(order)
	s.order = order
	s.idsHint = min(len(s.pres)/16, 1<<12) // most events share stacks (PerfView fixture: 301 for 1,793)
	s.cur = 0
	s.sortDefsOnce()
	s.waitUser = nil
}

// tsIndex is a sort key: a time, then i (which ends with an index, so
// that equal times keep their order).
type tsIndex struct {
	ts int64
	i  uint64
}

func sortTS(o []tsIndex) {
	// The first pass meets the records of each processor in time order,
	// its streams merged with little lead: nearly sorted, or sorted runs
	// (a stream runs ahead past the records the pass does not keep).
	// Insertion sort takes the former in linear time; when moves add up,
	// the ascending runs are merged instead.
	budget := 2 * len(o)
	for i := 1; i < len(o); i++ {
		x := o[i]
		j := i
		for j > 0 && tsLess(x, o[j-1]) {
			o[j] = o[j-1]
			j--
		}
		o[j] = x
		if budget -= i - j; budget < 0 {
			mergeRuns(o)
			return
		}
	}
}

// mergeRuns sorts o by merging its ascending runs, pairwise, until one is
// left; when o has many short runs, it sorts it by pdqsort instead.
func mergeRuns(o []tsIndex) {
	bounds := []int{0}
	for i := 1; i < len(o); i++ {
		if tsLess(o[i], o[i-1]) {
			bounds = append(bounds, i)
		}
	}
	bounds = append(bounds, len(o))
	if len(bounds) <= 2 {
		return
	}
	if len(bounds) > len(o)/8 {
		slices.SortFunc(o, func(a, b tsIndex) int {
			if c := cmp.Compare(a.ts, b.ts); c != 0 {
				return c
			}
			return cmp.Compare(a.i, b.i)
		})
		return
	}
	src, dst := o, make([]tsIndex, len(o))
	for len(bounds) > 2 {
		// Merge runs 0 and 1, 2 and 3, ... into dst; bounds are
		// rewritten in place (each is read before it is overwritten).
		k := 1
		for j := 0; j+1 < len(bounds); j += 2 {
			lo, hi := bounds[j], bounds[j+1]
			if j+2 < len(bounds) {
				mid := hi
				hi = bounds[j+2]
				mergeTS(dst[lo:hi], src[lo:mid], src[mid:hi])
			} else {
				copy(dst[lo:hi], src[lo:hi])
			}
			bounds[k] = hi
			k++
		}
		bounds = bounds[:k]
		src, dst = dst, src
	}
	if &src[0] != &o[0] {
		copy(o, src)
	}
}

// mergeTS merges the sorted a and b into d (len(a)+len(b) long).
func mergeTS(d, a, b []tsIndex) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if tsLess(b[j], a[i]) {
			d[k] = b[j]
			j++
		} else {
			d[k] = a[i]
			i++
		}
		k++
	}
	k += copy(d[k:], a[i:])
	copy(d[k:], b[j:])
}

func tsLess(a, b tsIndex) bool {
	return a.ts < b.ts || a.ts == b.ts && a.i < b.i
}

// takeStack returns the stack the first pass collected for the event of
// record r on thread tid (stackTid; nil when none), resolving its cache
// keys. The value is reused by the next call.
func (p *Pipeline) takeStack(r *record.Record, tid uint32) *stackParts {
	return p.takeStackCounted(r, tid, true)
}

func (p *Pipeline) takeStackCounted(r *record.Record, tid uint32, joined bool) *stackParts {
	s := &p.stk
	if p.mode != modeReplay || len(s.pres) == 0 || tid == record.NoID {
		// An event logged without any thread (a disk completion,
		// PERFINFO header): no stack is its.
		return nil
	}
	ts := r.Timestamp
	for s.cur < len(s.order) && s.order[s.cur].ts < ts {
		s.cur++
	}
	// The event's stack: the first stack of its thread at its time not
	// taken yet, one with a kernel part first (events of one thread at
	// one time take theirs in order; a user part alone is one no kernel
	// part took). Thread 0 is one idle thread per processor: told apart
	// by processor.
	pick := -1
	for j := s.cur; j < len(s.order) && s.order[j].ts == ts; j++ {
		e := &s.pres[uint32(s.order[j].i)]
		if e.tid != tid || e.taken || e.tid == 0 && e.cpu != r.CPU {
			continue
		}
		if e.kern.ok {
			pick = j
			break
		}
		if pick < 0 {
			pick = j
		}
	}
	if pick < 0 {
		return nil
	}
	e := &s.pres[uint32(s.order[pick].i)]
	e.taken = true
	ps := *e
	if !joined {
		p.count(StatStacksOther, event.CountInfo, uint64(ps.nrec))
		return nil
	}
	p.count(StatStackRecords, event.CountInfo, uint64(ps.nrec))
	sp := &s.take
	*sp = stackParts{has: true}
	if ps.kern.ok {
		if f, ok := p.partFrames(ps.kern, true); ok {
			sp.kernel = f
		} else {
			sp.lost |= event.FactKernelLost
		}
	}
	if !ps.user.ok && ps.userGone {
		sp.lost |= event.FactUserLost
		p.count(StatStackUserGone, event.CountDropped, 1)
	}
	if ps.user.ok {
		if ps.shared {
			p.count(StatStackUserShared, event.CountInfo, 1)
		}
		if f, ok := p.partFrames(ps.user, false); ok {
			sp.user = f
		} else {
			sp.lost |= event.FactUserLost
		}
	}
	return sp
}

// partFrames returns the frames of a collected part.
func (p *Pipeline) partFrames(pt part, kernelSide bool) ([]uint64, bool) {
	if !pt.isRef {
		return p.stk.frames(pt), true
	}
	return p.keyFrames(pt.key, kernelSide, pt.ts)
}

// otherStack counts the stack of an event whose stack iotrace does not
// keep.
func (p *Pipeline) otherStack(r *record.Record) {
	if p.mode == modeReplay {
		p.takeStackCounted(r, r.ThreadID, false)
		return
	}
	p.noteTarget(r, r.ThreadID, targetOther, nil, 0)
}

// flushStacks counts the collected stacks no event took: those of a
// record in the trace (iotrace does not decode it, or keeps no stack of
// it), those with a kernel part of no record of their time and thread
// (their event was lost: a problem) and user parts alone, whose event is
// not looked for (walked when the thread returned to user mode, maybe on
// another processor, any number of records later).
func (p *Pipeline) flushStacks() {
	var other, orphan, user uint64
	for i := range p.stk.pres {
		e := &p.stk.pres[i]
		switch {
		case e.taken:
		case e.seen:
			other += uint64(e.nrec)
		case e.kern.ok:
			orphan += uint64(e.nrec)
		default:
			user += uint64(e.nrec)
		}
	}
	if other > 0 {
		p.count(StatStacksNoEvent, event.CountInfo, other)
	}
	if orphan > 0 {
		p.count(StatStacksOrphan, event.CountLost, orphan)
	}
	if user > 0 {
		p.count(StatStacksUserAlone, event.CountInfo, user)
	}
	p.stk.pres, p.stk.order, p.stk.arena, p.stk.defs = nil, nil, nil, nil
}

// onStack handles StackWalk records.
func (p *Pipeline) onStack(r *record.Record, ev *kernel.Event) {
	if p.mode != modeLive {
		return // a file's first pass takes them before the merge (takeFirst)
	}
	if ev.Kind == kernel.KindStackKeyDef {
		p.defineKey(r, ev.StackKey, ev.Frames)
		return
	}
	if ev.Kind == kernel.KindStackKeyRef && r.Opcode == kernel.OpcodeStackKeyUser && p.opts.KernelStacksOnly {
		// A cache key reference of the part not asked for (the
		// session's stack filter trims the frames of whole stacks).
		p.count(StatStacksOff, event.CountInfo, 1)
		return
	}
	// A live session: the stack follows its event; its user part may
	// come when the thread returns to user mode (liveUser).
	if userOnly(r, ev) && p.liveUser(r, ev) {
		return
	}
	t := p.findTarget(ev.StackTime, ev.Tid, r.CPU)
	if t == nil {
		// Its event was lost, or came more than numTargets records
		// before it: a session on a busy machine may deliver other
		// processors' records between them, so it is no proof of a
		// loss (info).
		p.count(StatStacksNoRecent, event.CountInfo, 1)
		return
	}
	var sp *stackParts
	switch t.kind {
	case targetFile:
		if t.req.ev.ID != t.id || t.req.emitted {
			p.count(StatStacksLate, event.CountDropped, 1)
			return
		}
		sp = &t.req.stk
	case targetDisk:
		d, ok := p.pendDisk[t.irp]
		if !ok || d.t != p.clock.ToNanos(t.ts) {
			p.count(StatStacksLate, event.CountDropped, 1)
			return
		}
		if d.stk == nil {
			d.stk = &stackParts{}
			p.pendDisk[t.irp] = d
		}
		sp = d.stk
	case targetDone:
		p.count(StatStacksLate, event.CountDropped, 1)
		return
	case targetUndecoded:
		p.count(StatStacksUndecoded, event.CountInfo, 1)
		return
	default:
		p.count(StatStacksOther, event.CountInfo, 1)
		return
	}
	p.liveStackPart(sp, r, ev)
	p.count(StatStackRecords, event.CountInfo, 1)
	if len(sp.user) == 0 && sp.lost&event.FactUserLost == 0 && kernelOnly(r, ev) && ev.Pid != 0 && ev.Pid != 4 && !p.opts.KernelStacksOnly {
		// Its user part comes when the thread returns to user mode
		// (the System process's threads never do; a session asked for
		// kernel stacks alone filters it out).
		sp.waiting, sp.pid, sp.tid = true, ev.Pid, ev.Tid
		w := liveWaiter{sp: sp}
		if t.kind == targetFile {
			w.req, w.id = t.req, t.id
		}
		s := &p.stk
		if s.liveWait == nil {
			s.liveWait = make(map[uint32][]liveWaiter)
		}
		list := s.liveWait[ev.Tid]
		if len(list) >= maxWaitUser {
			list = append(list[:0], list[1:]...)
		}
		s.liveWait[ev.Tid] = append(list, w)
	}
}

// userOnly reports whether a stack record is a user part alone.
func userOnly(r *record.Record, ev *kernel.Event) bool {
	if ev.Kind == kernel.KindStackKeyRef {
		return r.Opcode == kernel.OpcodeStackKeyUser
	}
	return ev.Frames.Len() > 0 && !kernelAddr(ev.Frames.At(0), ev.Frames.PtrSize())
}

// kernelOnly reports whether a stack record is a kernel part alone.
func kernelOnly(r *record.Record, ev *kernel.Event) bool {
	if ev.Kind == kernel.KindStackKeyRef {
		return r.Opcode == kernel.OpcodeStackKeyKernel
	}
	n := ev.Frames.Len()
	return n > 0 && kernelAddr(ev.Frames.At(n-1), ev.Frames.PtrSize())
}

// liveWaiter is a pending event whose stack waits for its user part.
type liveWaiter struct {
	sp  *stackParts
	req *fileReq // a file request (the fileReq may be reused: id)
	id  uint64
}

// heldEvent is an event complete but for the user part of its stack
// (live sessions).
type heldEvent struct {
	e    event.Event
	sp   stackParts
	file bool
}

// Live sessions hold an event whose stack waits for its user part at
// most this long (trace time) and this many per thread.
const (
	maxHoldTime    = 2_000_000_000
	maxHeldPerTid  = 64
	holdCheckEvery = 256
)

// liveUser gives a user part to the kernel events of its thread waiting
// for one, pending or held; it reports whether any took it.
func (p *Pipeline) liveUser(r *record.Record, ev *kernel.Event) bool {
	s := &p.stk
	tid := ev.Tid
	waiters, held := s.liveWait[tid], s.held[tid]
	if len(waiters) == 0 && len(held) == 0 {
		return false
	}
	var up stackParts
	p.liveStackPart(&up, r, ev)
	user := slices.Clone(up.user)
	// Waiters of another process: their thread ended and its ID went to
	// this one's (threadEnded was not seen); they get none.
	joined := false
	for _, w := range waiters {
		if w.req != nil && (w.req.ev.ID != w.id || w.req.emitted) {
			continue
		}
		if !w.sp.waiting {
			continue
		}
		if w.sp.pid != ev.Pid {
			p.userGone(w.sp)
			continue
		}
		w.sp.user, w.sp.waiting = user, false
		w.sp.lost |= up.lost & event.FactUserLost
		joined = true
	}
	delete(s.liveWait, tid)
	for i := range held {
		h := &held[i]
		if h.sp.pid != ev.Pid {
			p.userGone(&h.sp)
		} else {
			h.sp.user, h.sp.waiting = user, false
			h.sp.lost |= up.lost & event.FactUserLost
			joined = true
		}
		p.releaseHeld(h)
	}
	if held != nil {
		s.heldN -= len(held)
		delete(s.held, tid)
	}
	if joined {
		p.count(StatStackRecords, event.CountInfo, 1)
	}
	return joined
}

// userGone flags a stack whose thread ended before returning to user
// mode: its user part will never come.
func (p *Pipeline) userGone(sp *stackParts) {
	sp.waiting = false
	sp.lost |= event.FactUserLost
	p.count(StatStackUserGone, event.CountDropped, 1)
}

// threadEnded gives up the user parts the stacks of thread tid of process
// pid wait for (live sessions): pending events are flagged, held ones
// emitted.
func (p *Pipeline) threadEnded(pid, tid uint32) {
	s := &p.stk
	if list, ok := s.liveWait[tid]; ok {
		n := 0
		for _, w := range list {
			if w.sp.pid != pid {
				list[n] = w
				n++
				continue
			}
			if w.sp.waiting && (w.req == nil || w.req.ev.ID == w.id && !w.req.emitted) {
				p.userGone(w.sp)
			}
		}
		if n == 0 {
			delete(s.liveWait, tid)
		} else {
			s.liveWait[tid] = list[:n]
		}
	}
	if list, ok := s.held[tid]; ok {
		n := 0
		for i := range list {
			if list[i].sp.pid != pid {
				list[n] = list[i]
				n++
				continue
			}
			p.userGone(&list[i].sp)
			p.releaseHeld(&list[i])
		}
		s.heldN -= len(list) - n
		if n == 0 {
			delete(s.held, tid)
		} else {
			s.held[tid] = list[:n]
		}
	}
}

// emitStacked emits e with its stack, or holds it while its stack waits
// for its user part (live sessions).
func (p *Pipeline) emitStacked(e *event.Event, sp *stackParts, file bool) {
	if sp != nil && sp.waiting && p.mode == modeLive {
		s := &p.stk
		if s.held == nil {
			s.held = make(map[uint32][]heldEvent)
		}
		list := s.held[sp.tid]
		if len(list) >= maxHeldPerTid {
			p.releaseNoUser(&list[0])
			list = append(list[:0], list[1:]...)
			s.heldN--
		}
		s.held[sp.tid] = append(list, heldEvent{e: *e, sp: *sp, file: file})
		s.heldN++
		return
	}
	p.setStack(e, sp)
	if file {
		p.emitFile(e)
	} else {
		p.emit(e)
	}
}

// releaseNoUser emits a held event whose user part never came.
func (p *Pipeline) releaseNoUser(h *heldEvent) {
	h.sp.waiting = false
	h.sp.lost |= event.FactUserLost
	p.count(StatStackUserNever, event.CountDropped, 1)
	p.releaseHeld(h)
}

func (p *Pipeline) releaseHeld(h *heldEvent) {
	p.setStack(&h.e, &h.sp)
	if h.file {
		p.emitFile(&h.e)
	} else {
		p.emit(&h.e)
	}
}

// expireHeld emits the held events that waited too long (all of them at
// the end).
func (p *Pipeline) expireHeld(all bool) {
	s := &p.stk
	for tid, list := range s.held {
		n := 0
		for i := range list {
			if all || p.lastTime-list[i].e.End() > maxHoldTime {
				p.releaseNoUser(&list[i])
				continue
			}
			list[n] = list[i]
			n++
		}
		s.heldN -= len(list) - n
		if n == 0 {
			delete(s.held, tid)
		} else {
			s.held[tid] = list[:n]
		}
	}
}

// liveStackPart adds a stack record's frames to sp (live sessions).
func (p *Pipeline) liveStackPart(sp *stackParts, r *record.Record, ev *kernel.Event) {
	ptr := ev.Frames.PtrSize()
	switch {
	case ev.Kind == kernel.KindStack:
		splitFrames(sp, ev.Frames.AppendTo(p.stk.scratch[:0]), ptr)
	case r.Opcode == kernel.OpcodeStackKeyKernel:
		if f, ok := p.keyFrames(ev.StackKey, true, r.Timestamp); ok {
			sp.kernel = f
		} else {
			sp.lost |= event.FactKernelLost
		}
		sp.has = true
	default:
		if f, ok := p.keyFrames(ev.StackKey, false, r.Timestamp); ok {
			sp.user = f
		} else {
			sp.lost |= event.FactUserLost
		}
		sp.has = true
	}
}

// keyDef is the frames a stack cache key stood for, until ts. The
// kernel's and the user part's keys are apart (the same key can stand
// for a kernel and a user part at once): a definition belongs to the
// space of its outermost frame.
type keyDef struct {
	key    uint64
	ts     int64
	frames part
	seq    uint32 // arrival order, for equal times
	kernel bool
	create bool
}

// maxLiveDefs bounds the key definitions a live session keeps.
const maxLiveDefs = 1 << 16

// defineKey records a stack cache key's frames.
func (p *Pipeline) defineKey(r *record.Record, key uint64, frames kernel.Frames) {
	s := &p.stk
	n := frames.Len()
	if n == 0 {
		return
	}
	if p.mode == modeLive && len(s.defs) >= maxLiveDefs {
		// A live session keeps the latest half.
		s.defs = append(s.defs[:0], s.defs[len(s.defs)/2:]...)
	}
	fr := s.keepFrames(frames)
	s.defs = append(s.defs, keyDef{key: key, ts: r.Timestamp, frames: fr, seq: uint32(len(s.defs)),
		kernel: kernelAddr(frames.At(n-1), frames.PtrSize()), create: r.Opcode == kernel.OpcodeStackKeyCreate})
	s.defsSorted = false
}

// sortDefs orders the key definitions by key, space and time (then
// arrival), in place: a live session's, sorted again as they come.
func (s *stackState) sortDefs() {
	if s.defsSorted {
		return
	}
	slices.SortFunc(s.defs, func(a, b keyDef) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if a.kernel != b.kernel {
			if a.kernel {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(a.ts, b.ts); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	s.defsSorted = true
}

// sortDefsOnce orders the key definitions as sortDefs does, once they are
// all in (a file's first pass): it sorts small keys, then moves each
// definition once.
func (s *stackState) sortDefsOnce() {
	if s.defsSorted {
		return
	}
	defs := s.defs
	order := make([]defOrder, len(defs))
	for i := range defs {
		d := &defs[i]
		o := defOrder{key: d.key, ts: d.ts, ks: uint64(d.seq&(1<<31-1))<<32 | uint64(uint32(i))}
		if d.kernel {
			o.ks |= 1 << 63
		}
		order[i] = o
	}
	sortDefOrder(order)
	sorted := make([]keyDef, len(defs))
	for j, o := range order {
		sorted[j] = defs[uint32(o.ks)]
	}
	s.defs = sorted
	s.defsSorted = true
}

// sortDefOrder sorts o by key (a radix sort, byte by byte from the
// lowest: the keys are addresses and hashes, rarely equal), then each run
// of equal keys by space, time and arrival (insertion sort: runs are
// short, else pdqsort).
func sortDefOrder(o []defOrder) {
	if len(o) < 2 {
		return
	}
	tmp := make([]defOrder, len(o))
	src, dst := o, tmp
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for i := range src {
			count[byte(src[i].key>>shift)]++
		}
		if count[byte(src[0].key>>shift)] == len(src) {
			continue // every key has this byte: the order stands
		}
		pos := 0
		for b := range count {
			pos, count[b] = pos+count[b], pos
		}
		for i := range src {
			b := byte(src[i].key >> shift)
			dst[count[b]] = src[i]
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &o[0] {
		copy(o, src)
	}
	for lo := 0; lo < len(o); {
		hi := lo + 1
		for hi < len(o) && o[hi].key == o[lo].key {
			hi++
		}
		run := o[lo:hi]
		if len(run) > 16 {
			// Many definitions of one key (a damaged or crafted file):
			// no quadratic insertion sort.
			slices.SortFunc(run, func(a, b defOrder) int {
				switch {
				case defAfter(a, b):
					return 1
				case defAfter(b, a):
					return -1
				}
				return 0
			})
		} else {
			for i := 1; i < len(run); i++ {
				x := run[i]
				j := i
				for j > 0 && defAfter(run[j-1], x) {
					run[j] = run[j-1]
					j--
				}
				run[j] = x
			}
		}
		lo = hi
	}
}

// defAfter reports whether a comes after b, both of one key: by space
// (user first), time, then arrival and index.
func defAfter(a, b defOrder) bool {
	if ka, kb := a.ks>>63, b.ks>>63; ka != kb {
		return ka > kb
	}
	if a.ts != b.ts {
		return a.ts > b.ts
	}
	return a.ks > b.ks
}

// defOrder is the sort key of a key definition: key, then space (kernel
// in the top bit of ks), time, arrival (seq, in bits 32-62: a file's
// first pass never keeps 1<<31 definitions) and its index (low 32 bits).
type defOrder struct {
	key uint64
	ts  int64
	ks  uint64
}

// keyFrames returns the frames key (of the kernel or the user space)
// stood for at ts: the first deletion or rundown of the key at or after
// ts, else the last creation before it.
func (p *Pipeline) keyFrames(key uint64, kernelSide bool, ts int64) ([]uint64, bool) {
	s := &p.stk
	s.sortDefs()
	i, _ := slices.BinarySearchFunc(s.defs, key, func(d keyDef, k uint64) int { return cmp.Compare(d.key, k) })
	var created *keyDef
	for ; i < len(s.defs) && s.defs[i].key == key; i++ {
		d := &s.defs[i]
		if d.kernel != kernelSide {
			continue
		}
		if d.create {
			if d.ts <= ts {
				created = d
			}
			continue
		}
		if d.ts >= ts {
			return s.frames(d.frames), true
		}
	}
	if created != nil {
		return s.frames(created.frames), true
	}
	p.count(StatStackKeyUndefined, event.CountDropped, 1)
	return nil, false
}

// Extended data item types of stacks (EVENT_HEADER_EXT_TYPE_*).
const (
	extStackTrace32 = 5
	extStackTrace64 = 6
	extStackKey32   = 17
	extStackKey64   = 18
)

// isStackWalk reports whether r is a StackWalk record.
func isStackWalk(r *record.Record) bool {
	switch r.Kind {
	case record.KindSystem, record.KindCompact, record.KindPerfInfo:
		return r.Group == record.GroupStackWalk
	}
	return r.Kind == record.KindClassic && r.Provider == kernel.GUIDStackWalk
}

// extStack takes the stack a manifest event carries inline, if any.
func (p *Pipeline) extStack(r *record.Record, sp *stackParts) {
	if p.opts.NoStacks {
		return
	}
	for i := range r.Ext {
		x := &r.Ext[i]
		switch x.Type {
		case extStackTrace32, extStackTrace64:
			ptr := 8
			if x.Type == extStackTrace32 {
				ptr = 4
			}
			b := x.Data
			if len(b) < 8+ptr || (len(b)-8)%ptr != 0 {
				p.count(StatDecodeErrors+": stack extended data", event.CountDropped, 1)
				continue
			}
			addrs := make([]uint64, 0, (len(b)-8)/ptr)
			for off := 8; off < len(b); off += ptr {
				if ptr == 4 {
					addrs = append(addrs, uint64(binary.LittleEndian.Uint32(b[off:])))
				} else {
					addrs = append(addrs, binary.LittleEndian.Uint64(b[off:]))
				}
			}
			// The frames are the stack's own: split in place (no
			// copies; neither part is appended to).
			i := 0
			for i < len(addrs) && kernelAddr(addrs[i], ptr) {
				i++
			}
			sp.kernel, sp.user, sp.has = addrs[:i:i], addrs[i:], true
			p.count(StatStackRecords, event.CountInfo, 1)
			return
		case extStackKey32, extStackKey64:
			p.count(StatStackKeyExt, event.CountDropped, 1)
		}
	}
}

// setStack gives e the ID of its stack, writing the stack fact first when
// it is new.
func (p *Pipeline) setStack(e *event.Event, sp *stackParts) {
	if sp == nil || !sp.has || p.mode == modeCollect {
		return
	}
	k, flags := sp.kernel, sp.lost
	if p.opts.UserStacksOnly {
		k, flags = nil, flags&^event.FactKernelLost
		if len(sp.user) == 0 && flags == 0 {
			return
		}
	}
	switch {
	case e.Layer == event.LayerBlock && e.Op == event.OpBlockFlush:
		p.count(StatStacksFlush, event.CountInfo, 1)
	case e.Layer == event.LayerBlock:
		p.count(StatStacksDisk, event.CountInfo, 1)
	default:
		p.count(StatStacksFile, event.CountInfo, 1)
	}
	e.Stack = p.internStack(k, sp.user, flags)
}

func (p *Pipeline) internStack(k, u []uint64, flags event.FactFlags) uint64 {
	s := &p.stk
	if s.ids == nil {
		s.ids = make(map[uint64][]stackEntry, s.idsHint)
		s.seed = maphash.MakeSeed()
	}
	// One hash over the frames laid out as bytes (maphash per word
	// costs a call each).
	b := s.hbuf[:0]
	for _, a := range k {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	b = append(b, 0xff)
	for _, a := range u {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(flags))
	s.hbuf = b
	sum := maphash.Bytes(s.seed, b)
	for _, e := range s.ids[sum] {
		if e.flags == flags && slices.Equal(e.kernel, k) && slices.Equal(e.user, u) {
			return e.id
		}
	}
	s.lastID++
	s.ids[sum] = append(s.ids[sum], stackEntry{kernel: k, user: u, flags: flags, id: s.lastID})
	p.fact = event.Fact{Kind: event.FactStack, Handle: s.lastID, Kernel: k, User: u, Flags: flags}
	p.emitFact(&p.fact)
	return s.lastID
}

// keepError keeps the decoding error of a record the first pass takes
// (stack walks, image identities) for the second, which does not see
// them: a count per counter and the first few messages.
func (s *stackState) keepError(r *record.Record, counter string, err error) {
	if s.errs == nil {
		s.errs = make(map[string]uint64)
	}
	s.errs[counter]++
	if len(s.errMsgs) < maxWarnings {
		s.errMsgs = append(s.errMsgs, fmt.Sprintf("etl record at file offset %#x (buffer %d): %v", r.FileOffset, r.Buffer, err))
	}
}

// undecoded is a count of records like r (header only) that the first
// pass takes and no decoder knows.
type undecoded struct {
	r record.Record
	n uint64
}

// keepUndecoded counts a record the first pass takes and no decoder knows
// (an ImageID FileVersion, a StackWalk of a later version…), for the
// second pass's not-decoded counts: the second pass does not see it.
func (s *stackState) keepUndecoded(r *record.Record) {
	for i := range s.undec {
		u := &s.undec[i].r
		if u.Kind == r.Kind && u.Group == r.Group && u.Provider == r.Provider && u.Opcode == r.Opcode &&
			u.ID == r.ID && u.HeaderType == r.HeaderType && u.Flags == r.Flags && u.Version == r.Version && u.PointerSize == r.PointerSize {
			s.undec[i].n++
			return
		}
	}
	s.undec = append(s.undec, undecoded{r: record.Record{Kind: r.Kind, Group: r.Group, Provider: r.Provider,
		HeaderType: r.HeaderType, Flags: r.Flags, Opcode: r.Opcode, ID: r.ID, Version: r.Version, PointerSize: r.PointerSize}, n: 1})
}

// replayErrors counts (and reports) the errors keepError kept, and the
// records keepUndecoded counted, once the second pass has begun.
func (s *stackState) replayErrors(p *Pipeline) {
	for i := range s.undec {
		p.dec.CountUnknown(&s.undec[i].r, s.undec[i].n)
	}
	s.undec = nil
	for name, n := range s.errs {
		p.count(name, event.CountDropped, n)
	}
	for _, m := range s.errMsgs {
		p.warn("%s", m)
	}
	s.errs, s.errMsgs = nil, nil
}
