package etw

import (
	"sort"

	"github.com/iotrace/iotrace/backend/etw/internal/stackjoin"
	"github.com/iotrace/iotrace/event"
)

// maxCandidates bounds the in-flight requests of one thread a disk Init
// may link to (overlapped I/O can keep several in flight).
const maxCandidates = 4

// maxDeferTime and maxDeferred bound how long and how many ended requests
// wait for the disk I/Os they may have caused.
const (
	maxDeferTime = 2_000_000_000 // 2 s of trace time
	maxDeferred  = 4096
)

// linker is the state of the links between disk I/O and file requests
// (see the package doc): the requests of each thread in flight, the
// ended requests that wait for their disk I/Os, and the last paging reads
// of each file. Memory is bounded by the requests and disk I/Os in
// flight.
type linker struct {
	linking    bool   // the trace links (OpEnds and DiskIo Inits)
	rwRequests uint64 // file reads, writes and flushes seen
	inflight   map[uint32][]*fileReq
	deferred   []*fileReq
	freeReq    []*fileReq
	paging     map[uint64]*pagingReads // by file (waited)
}

func newLinker() linker {
	return linker{inflight: make(map[uint32][]*fileReq), paging: make(map[uint64]*pagingReads)}
}

// fileReq is a file request waiting for its OpEnd (or, once ended, for
// the disk I/Os it may have caused).
type fileReq struct {
	ev      event.Event
	refs    int32 // disk Inits in flight that may link to this request
	done    bool  // ended: emitted as soon as refs drops to 0
	emitted bool  // emitted (possibly before refs dropped to 0)
	queued  bool  // in the deferred queue
	linkOK  bool  // counted in inflight: disk I/O may link to it
	unsure  bool  // a disk I/O it may have caused never completed
	doneAt  int64
	stk     stackjoin.Parts // its stack, joined while it was pending
}

// linkable reports whether a request of op can cause disk I/O that we
// attribute to it.
func linkable(op event.Op) bool {
	return op == event.OpRead || op == event.OpWrite || op == event.OpFlush
}

func (l *linker) newReq() *fileReq {
	if n := len(l.freeReq); n > 0 {
		r := l.freeReq[n-1]
		l.freeReq = l.freeReq[:n-1]
		*r = fileReq{}
		return r
	}
	return new(fileReq)
}

// recycle returns r to the free list once nothing refers to it.
func (l *linker) recycle(r *fileReq) {
	if r.refs == 0 && r.emitted && !r.queued {
		l.freeReq = append(l.freeReq, r)
	}
}

// track adds a pending request to its thread's in-flight list.
func (l *linker) track(r *fileReq) {
	if !l.linking || !linkable(r.ev.Op) || r.ev.Tid == 0 {
		return
	}
	r.linkOK = true
	l.inflight[r.ev.Tid] = append(l.inflight[r.ev.Tid], r)
}

// untrack removes r from its thread's in-flight list.
func (l *linker) untrack(r *fileReq) {
	if !r.linkOK {
		return
	}
	r.linkOK = false
	list := l.inflight[r.ev.Tid]
	for i, x := range list {
		if x == r {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = nil
			l.inflight[r.ev.Tid] = list[:len(list)-1]
			return
		}
	}
}

// candidates fills d with the requests thread tid has in flight that a
// disk I/O of op may belong to, most recent first.
func (l *linker) candidates(d *diskInit, tid uint32, op event.Op) {
	if !l.linking || tid == 0 {
		return
	}
	list := l.inflight[tid]
	for i := len(list) - 1; i >= 0 && d.ncand < maxCandidates; i-- {
		r := list[i]
		if op == event.OpBlockFlush && r.ev.Op != event.OpFlush {
			continue
		}
		r.refs++
		d.cand[d.ncand] = r
		d.ncand++
	}
}

// link finds the request that caused disk I/O e among d's candidates and
// links both. The caller emits e, then releases d (so that a request that
// waited for e goes out after it).
func (p *Pipeline) link(d *diskInit, e *event.Event) {
	var cause *fileReq
	for i := 0; i < int(d.ncand) && cause == nil; i++ {
		r := d.cand[i]
		switch {
		case e.Op == event.OpBlockFlush:
			cause = r
		case e.FileKey != 0 && (r.ev.FileKey == e.FileKey || r.ev.FileObject == e.FileKey):
			cause = r
		}
	}
	if cause != nil {
		e.Cause = cause.ev.ID
		p.tally.Add(StatLinked, event.CountInfo, 1)
		if cause.emitted {
			p.tally.Add(StatLinkLate, event.CountUnpaired, 1)
		} else {
			cause.ev.CausedIOs++
			cause.ev.CausedBytes += e.Size
		}
	}
}

// release drops d's references to its candidates; a request that ended
// and waited only for them is emitted. completed says whether d's disk
// I/O completed (else whether it was the candidates' stays unknown).
func (p *Pipeline) release(d *diskInit, completed bool) {
	for i := 0; i < int(d.ncand); i++ {
		r := d.cand[i]
		d.cand[i] = nil
		r.unsure = r.unsure || !completed
		r.refs--
		if r.refs > 0 {
			continue
		}
		if r.done && !r.emitted {
			p.emitReq(r)
		}
		p.links.recycle(r)
	}
	d.ncand = 0
}

// Reads that waited for I/O in flight (package doc): the last
// maxPagingSpans paging reads of each file are kept from their OpEnd on.

// maxPagingSpans is how many paging reads are kept per file; maxPagingFiles
// bounds the files (past it the table starts over: evidence is lost, and
// a read that waited may then count as a hit).
const (
	maxPagingSpans = 8
	maxPagingFiles = 65536
)

// pagingSpan is one completed paging read: its time and file range.
type pagingSpan struct {
	start, end int64
	off, size  uint64
}

type pagingReads struct {
	spans [maxPagingSpans]pagingSpan
	next  int
}

// fileOf is the key a request's file is known by: its FileKey, else its
// FileObject.
func fileOf(e *event.Event) uint64 {
	if e.FileKey != 0 {
		return e.FileKey
	}
	return e.FileObject
}

// notePaging remembers a completed paging read.
func (l *linker) notePaging(e *event.Event) {
	if !l.linking || e.Op != event.OpRead || e.Flags&event.FlagPaging == 0 || e.Offset < 0 || e.Status.Failed() ||
		e.Flags&event.FlagNoCompletion != 0 {
		return
	}
	k := fileOf(e)
	if k == 0 {
		return
	}
	pr := l.paging[k]
	if pr == nil {
		if len(l.paging) >= maxPagingFiles {
			clear(l.paging)
		}
		pr = &pagingReads{}
		l.paging[k] = pr
	}
	size := e.Size
	if e.Bytes > 0 {
		size = uint64(e.Bytes)
	}
	pr.spans[pr.next] = pagingSpan{start: e.Time, end: e.End(), off: uint64(e.Offset), size: size}
	pr.next = (pr.next + 1) % maxPagingSpans
}

// waited reports whether a paging read of e's file and range was in flight
// while e ran.
func (l *linker) waited(e *event.Event) bool {
	pr := l.paging[fileOf(e)]
	if pr == nil || e.Offset < 0 {
		return false
	}
	lo, hi := uint64(e.Offset), uint64(e.Offset)+uint64(e.Bytes)
	for _, s := range pr.spans {
		if s.size != 0 && s.start < e.End() && s.end > e.Time && s.off < hi && lo < s.off+s.size {
			return true
		}
	}
	return false
}

// finish ends a pending request: it is emitted now unless disk I/Os it
// may have caused are still in flight.
func (p *Pipeline) finish(r *fileReq) {
	p.links.notePaging(&r.ev)
	p.links.untrack(r)
	r.done = true
	if r.refs == 0 {
		p.emitReq(r)
		p.links.recycle(r)
		return
	}
	r.doneAt = p.lastTime
	r.queued = true
	p.links.deferred = append(p.links.deferred, r)
}

// expire emits the deferred requests that waited too long (or too many),
// and drops the settled ones from the queue.
func (p *Pipeline) expire(force bool) {
	n := 0
	for _, r := range p.links.deferred {
		old := force || len(p.links.deferred)-n > maxDeferred || p.lastTime-r.doneAt > maxDeferTime
		if !r.emitted && !old {
			break
		}
		if !r.emitted {
			p.emitReq(r)
		}
		r.queued = false
		p.links.recycle(r)
		n++
	}
	if n > 0 {
		m := copy(p.links.deferred, p.links.deferred[n:])
		clear(p.links.deferred[m:])
		p.links.deferred = p.links.deferred[:m]
	}
}

// emitReq emits a request, flagging a completed cached read that caused
// no disk I/O as a cache hit when the trace links disk I/O, or as having
// waited for I/O in flight (see waited).
func (p *Pipeline) emitReq(r *fileReq) {
	e := &r.ev
	r.emitted = true
	if p.links.linking && e.Op == event.OpRead && e.CausedIOs == 0 && r.refs == 0 && !r.unsure &&
		e.Flags&(event.FlagNoCompletion|event.FlagDirect|event.FlagPaging) == 0 &&
		!e.Status.Failed() && e.Bytes > 0 {
		if p.links.waited(e) {
			e.Flags |= event.FlagWaitedIO
			p.tally.Add(StatWaitedIO, event.CountInfo, 1)
		} else {
			e.Flags |= event.FlagCacheHit
			p.tally.Add(StatCacheHits, event.CountInfo, 1)
		}
	}
	p.emitStacked(e, &r.stk, true)
}

// flushLinks settles everything at the end: disk Inits without
// completion release their candidates (oldest first) and the deferred
// requests go out.
func (p *Pipeline) flushLinks() {
	if len(p.pendDisk) > 0 {
		irps := make([]uint64, 0, len(p.pendDisk))
		for irp := range p.pendDisk {
			irps = append(irps, irp)
		}
		sort.Slice(irps, func(i, j int) bool {
			a, b := p.pendDisk[irps[i]], p.pendDisk[irps[j]]
			if a.t != b.t {
				return a.t < b.t
			}
			return irps[i] < irps[j]
		})
		for _, irp := range irps {
			d := p.pendDisk[irp]
			p.release(&d, false)
		}
	}
}
