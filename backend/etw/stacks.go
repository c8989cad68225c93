package etw

import (
	"encoding/binary"
	"slices"

	"github.com/iotrace/iotrace/backend/etw/internal/stackjoin"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Stacks: the pipeline's side of stack joining (package stackjoin holds
// the joiner's state and its doc). A file's stack records are taken by
// the first pass (firstPass) and given to their events by the second
// (takeStack). A live session joins a stack record to a recent pending
// event (noteTarget, findTarget: the kernel logs it right after its
// event) and, when the user part is still to come, waits for it with the
// pending event (liveUser) or holds the complete event (emitStacked,
// stackjoin.Holder). A stack belongs to the request record of a FileIo or
// Kernel-File operation and to the Init of a disk I/O: it stays with the
// pending request until the event is emitted (setStack).

// Counter names of stacks.
const (
	StatStacksFile        = stackjoin.StatFile
	StatStacksDisk        = stackjoin.StatDisk
	StatStacksFlush       = stackjoin.StatFlush
	StatStackRecords      = stackjoin.StatRecords
	StatStacksOther       = stackjoin.StatOther
	StatStacksNoEvent     = stackjoin.StatNoEvent
	StatStacksUserAlone   = stackjoin.StatUserAlone
	StatStacksOrphan      = stackjoin.StatOrphan
	StatStacksUndecoded   = stackjoin.StatUndecoded
	StatStacksNoRecent    = stackjoin.StatNoRecent
	StatStacksLate        = stackjoin.StatLate
	StatStackKeyUndefined = stackjoin.StatKeyUndefined
	StatStackUserShared   = stackjoin.StatUserShared
	StatStacksOff         = stackjoin.StatOff
	StatStackUserNever    = stackjoin.StatUserNever
	StatStackKeyExt       = stackjoin.StatKeyExt
	StatStackUserGone     = stackjoin.StatUserGone
)

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

// maxTargetRings bounds the processors with a ring of their own (Windows
// has at most 2,048); a higher processor number shares a ring.
const maxTargetRings = 4096

// targetRing is the recent events of one processor.
type targetRing struct {
	t    [numTargets]stackTarget
	next int
}

// liveStacks is a live session's stack joining to pending events.
type liveStacks struct {
	// Recent events a stack may follow, by processor: the kernel logs a
	// walk right after its event, on its processor; once the
	// processors' buffers are merged by time, other processors' events
	// come between them.
	targets []targetRing
	wait    map[uint32][]liveWaiter // by thread: pending events waiting for a user part
}

// liveWaiter is a pending event whose stack waits for its user part.
type liveWaiter struct {
	sp  *stackjoin.Parts
	req *fileReq // a file request (the fileReq may be reused: id)
	id  uint64
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
	s := &p.live
	cpu := int(r.CPU) % maxTargetRings
	if cpu >= len(s.targets) {
		s.targets = append(s.targets, make([]targetRing, cpu+1-len(s.targets))...)
	}
	g := &s.targets[cpu]
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
	s := &p.live
	own := int(cpu) % maxTargetRings
	if own < len(s.targets) {
		if t := s.targets[own].find(ts, tid); t != nil {
			return t
		}
	}
	if tid == 0 {
		return nil
	}
	for c := range s.targets {
		if c != own {
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

// takeStack returns the stack the first pass collected for the event of
// record r on thread tid (stackTid; nil when none): a file's second pass
// only. The value is reused by the next call.
func (p *Pipeline) takeStack(r *record.Record, tid uint32) *stackjoin.Parts {
	if p.mode != modeReplay {
		return nil
	}
	return p.stk.Take(r, tid, true)
}

// otherStack counts the stack of an event whose stack iotrace does not
// keep.
func (p *Pipeline) otherStack(r *record.Record) {
	if p.mode == modeReplay {
		p.stk.Take(r, r.ThreadID, false)
		return
	}
	p.noteTarget(r, r.ThreadID, targetOther, nil, 0)
}

// onStack handles StackWalk records of a live session (a file's first
// pass takes them before the merge).
func (p *Pipeline) onStack(r *record.Record, ev *kernel.Event) {
	if p.mode != modeLive {
		return
	}
	if ev.Kind == kernel.KindStackKeyDef {
		p.stk.DefineLiveKey(r, ev.StackKey, ev.Frames)
		return
	}
	if ev.Kind == kernel.KindStackKeyRef && r.Opcode == kernel.OpcodeStackKeyUser && p.opts.KernelStacksOnly {
		// A cache key reference of the part not asked for (the
		// session's stack filter trims the frames of whole stacks).
		p.tally.Add(StatStacksOff, event.CountInfo, 1)
		return
	}
	// The stack follows its event; its user part may come when the
	// thread returns to user mode (liveUser).
	if userOnly(r, ev) && p.liveUser(r, ev) {
		return
	}
	t := p.findTarget(ev.StackTime, ev.Tid, r.CPU)
	if t == nil {
		// Its event was lost, or came more than numTargets records
		// before it: a session on a busy machine may deliver other
		// processors' records between them, so it is no proof of a
		// loss (info).
		p.tally.Add(StatStacksNoRecent, event.CountInfo, 1)
		return
	}
	var sp *stackjoin.Parts
	switch t.kind {
	case targetFile:
		if t.req.ev.ID != t.id || t.req.emitted {
			p.tally.Add(StatStacksLate, event.CountDropped, 1)
			return
		}
		sp = &t.req.stk
	case targetDisk:
		d, ok := p.pendDisk[t.irp]
		if !ok || d.t != p.hdr.clock.ToNanos(t.ts) {
			p.tally.Add(StatStacksLate, event.CountDropped, 1)
			return
		}
		if d.stk == nil {
			d.stk = &stackjoin.Parts{}
			p.pendDisk[t.irp] = d
		}
		sp = d.stk
	case targetDone:
		p.tally.Add(StatStacksLate, event.CountDropped, 1)
		return
	case targetUndecoded:
		p.tally.Add(StatStacksUndecoded, event.CountInfo, 1)
		return
	default:
		p.tally.Add(StatStacksOther, event.CountInfo, 1)
		return
	}
	p.stk.LivePart(sp, r, ev)
	p.tally.Add(StatStackRecords, event.CountInfo, 1)
	if len(sp.User) == 0 && sp.Lost&event.FactUserLost == 0 && kernelOnly(r, ev) && ev.Pid != 0 && ev.Pid != 4 && !p.opts.KernelStacksOnly {
		// Its user part comes when the thread returns to user mode
		// (the System process's threads never do; a session asked for
		// kernel stacks alone filters it out).
		sp.Waiting, sp.Pid, sp.Tid = true, ev.Pid, ev.Tid
		w := liveWaiter{sp: sp}
		if t.kind == targetFile {
			w.req, w.id = t.req, t.id
		}
		s := &p.live
		if s.wait == nil {
			s.wait = make(map[uint32][]liveWaiter)
		}
		list := s.wait[ev.Tid]
		if len(list) >= stackjoin.MaxWaitUser {
			list = append(list[:0], list[1:]...)
		}
		s.wait[ev.Tid] = append(list, w)
	}
}

// userOnly reports whether a stack record is a user part alone.
func userOnly(r *record.Record, ev *kernel.Event) bool {
	if ev.Kind == kernel.KindStackKeyRef {
		return r.Opcode == kernel.OpcodeStackKeyUser
	}
	return ev.Frames.Len() > 0 && !stackjoin.KernelAddr(ev.Frames.At(0), ev.Frames.PtrSize())
}

// kernelOnly reports whether a stack record is a kernel part alone.
func kernelOnly(r *record.Record, ev *kernel.Event) bool {
	if ev.Kind == kernel.KindStackKeyRef {
		return r.Opcode == kernel.OpcodeStackKeyKernel
	}
	n := ev.Frames.Len()
	return n > 0 && stackjoin.KernelAddr(ev.Frames.At(n-1), ev.Frames.PtrSize())
}

// liveUser gives a user part to the kernel events of its thread waiting
// for one, pending or held; it reports whether any took it.
func (p *Pipeline) liveUser(r *record.Record, ev *kernel.Event) bool {
	tid := ev.Tid
	waiters := p.live.wait[tid]
	if len(waiters) == 0 && !p.held.Holds(tid) {
		return false
	}
	var up stackjoin.Parts
	p.stk.LivePart(&up, r, ev)
	user := slices.Clone(up.User)
	// Waiters of another process: their thread ended and its ID went to
	// this one's (threadEnded was not seen); they get none.
	joined := false
	for _, w := range waiters {
		if w.req != nil && (w.req.ev.ID != w.id || w.req.emitted) {
			continue
		}
		if !w.sp.Waiting {
			continue
		}
		if w.sp.Pid != ev.Pid {
			w.sp.UserGone(p.tally)
			continue
		}
		w.sp.User, w.sp.Waiting = user, false
		w.sp.Lost |= up.Lost & event.FactUserLost
		joined = true
	}
	delete(p.live.wait, tid)
	if p.held.GiveUser(tid, ev.Pid, user, up.Lost&event.FactUserLost) {
		joined = true
	}
	p.releaseHeld()
	if joined {
		p.tally.Add(StatStackRecords, event.CountInfo, 1)
	}
	return joined
}

// threadEnded gives up the user parts the stacks of thread tid of process
// pid wait for (live sessions): pending events are flagged, held ones
// emitted.
func (p *Pipeline) threadEnded(pid, tid uint32) {
	s := &p.live
	if list, ok := s.wait[tid]; ok {
		n := 0
		for _, w := range list {
			if w.sp.Pid != pid {
				list[n] = w
				n++
				continue
			}
			if w.sp.Waiting && (w.req == nil || w.req.ev.ID == w.id && !w.req.emitted) {
				w.sp.UserGone(p.tally)
			}
		}
		if n == 0 {
			delete(s.wait, tid)
		} else {
			s.wait[tid] = list[:n]
		}
	}
	p.held.ThreadEnded(pid, tid)
	p.releaseHeld()
}

// emitStacked emits e with its stack, or holds it while its stack waits
// for its user part (live sessions).
func (p *Pipeline) emitStacked(e *event.Event, sp *stackjoin.Parts, file bool) {
	if sp != nil && sp.Waiting && p.mode == modeLive {
		p.held.Hold(e, sp, file)
		p.releaseHeld()
		return
	}
	p.setStack(e, sp)
	if file {
		p.emitFile(e)
	} else {
		p.emit(e)
	}
}

// releaseHeld emits the events the holder let go.
func (p *Pipeline) releaseHeld() {
	out := p.held.Released()
	for i := range out {
		h := &out[i]
		p.setStack(&h.Event, &h.Parts)
		if h.File {
			p.emitFile(&h.Event)
		} else {
			p.emit(&h.Event)
		}
	}
}

// expireHeld emits the held events that waited too long (all of them at
// the end).
func (p *Pipeline) expireHeld(all bool) {
	p.held.Expire(all, p.lastTime)
	p.releaseHeld()
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
func (p *Pipeline) extStack(r *record.Record, sp *stackjoin.Parts) {
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
				p.tally.Add(StatDecodeErrors+": stack extended data", event.CountDropped, 1)
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
			for i < len(addrs) && stackjoin.KernelAddr(addrs[i], ptr) {
				i++
			}
			sp.Kernel, sp.User, sp.Has = addrs[:i:i], addrs[i:], true
			p.tally.Add(StatStackRecords, event.CountInfo, 1)
			return
		case extStackKey32, extStackKey64:
			p.tally.Add(StatStackKeyExt, event.CountDropped, 1)
		}
	}
}

// setStack gives e the ID of its stack, writing the stack fact first when
// it is new.
func (p *Pipeline) setStack(e *event.Event, sp *stackjoin.Parts) {
	if sp == nil || !sp.Has || p.mode == modeCollect {
		return
	}
	k, flags := sp.Kernel, sp.Lost
	if p.opts.UserStacksOnly {
		k, flags = nil, flags&^event.FactKernelLost
		if len(sp.User) == 0 && flags == 0 {
			return
		}
	}
	switch {
	case e.Layer == event.LayerBlock && e.Op == event.OpBlockFlush:
		p.tally.Add(StatStacksFlush, event.CountInfo, 1)
	case e.Layer == event.LayerBlock:
		p.tally.Add(StatStacksDisk, event.CountInfo, 1)
	default:
		p.tally.Add(StatStacksFile, event.CountInfo, 1)
	}
	id, fresh := p.stackIDs.Intern(k, sp.User, flags)
	if fresh {
		p.fact = event.Fact{Kind: event.FactStack, Handle: id, Kernel: k, User: sp.User, Flags: flags}
		p.emitFact(&p.fact)
	}
	e.Stack = id
}
