package etw

import (
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
// thread (EventTimeStamp, StackThread): the pipeline joins a stack to the
// latest event with both (or with the timestamp alone, for events logged
// without a thread), as TraceEvent does. With stack caching ("compressed
// stacks") the stack comes as references to cache keys, one for the kernel
// part and one for the user part, and the keys' frames come in key
// definitions, mostly later (when the kernel evicts a key, and at the end
// of the session for the rest): the first pass of a file collects the
// definitions, and a reference takes the frames of the first definition
// of its key at or after it (a key is reused once evicted), else of the
// last KeyCreate before it. Manifest events (Kernel-File) carry their
// stack inline, as an extended data item.
//
// A stack belongs to the request record of a FileIo or Kernel-File
// operation and to the Init of a disk I/O: it stays with the pending
// request until the event is emitted. Identical stacks are written once,
// as a FactStack before the first event that refers to it.

// Counter names of stacks.
const (
	StatStacksFile        = "etw: file requests with a stack"
	StatStacksDisk        = "etw: disk I/Os with a stack"
	StatStackRecords      = "etw: stack records joined to their event (StackWalk, extended data)"
	StatStacksOther       = "etw: stack records of other events (process, thread, image…: not kept)"
	StatStacksNoEvent     = "etw: stack records matching no decoded event (samples and events iotrace does not decode: dropped)"
	StatStacksLate        = "etw: stacks of events already emitted (dropped)"
	StatStackKeyUndefined = "etw: stack key references whose key the trace never defines (that part of the stack is lost)"
	StatStackUserShared   = "etw: stacks whose user part is the one walked when their thread returned to user mode (shared by the kernel events of one system call)"
	StatStacksOff         = "etw: stack records left aside (stacks not wanted)"
	StatStackKeyExt       = "etw: stack keys in extended data (not resolved: that stack is lost)"
)

// stackParts is a stack as it is being assembled.
type stackParts struct {
	kernel, user []uint64
	has          bool
	lost         event.FactFlags
}

// target kinds: what a stack record may belong to.
const (
	targetOther uint8 = iota // an event whose stack iotrace does not keep
	targetFile               // a pending file request
	targetDisk               // a pending disk Init
	targetDone               // an event already emitted
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

// numTargets is how many recent events a stack is looked for among.
const numTargets = 32

// keyDef is the frames a stack cache key stood for, until ts.
type keyDef struct {
	ts     int64
	create bool
	frames []uint64
}

type stackEntry struct {
	kernel, user []uint64
	flags        event.FactFlags
	id           uint64
}

// stackState is the pipeline's stack state.
type stackState struct {
	targets  [numTargets]stackTarget
	next     int
	pre      map[evKey]int32 // index in pres
	pres     []preStack
	arena    []uint64 // frames kept by the first pass
	waitUser map[uint32][]evKey
	byTime   map[int64]uint32  // the thread of a stack collected at a timestamp
	errs     map[string]uint64 // damaged stack records of the first pass, by counter
	errMsgs  []string
	take     stackParts
	keyDefs  map[defKey][]keyDef
	ids      map[uint64][]stackEntry
	lastID   uint64
	seed     maphash.Seed
	scratch  []uint64
}

// noteTarget records an event a stack record may follow.
func (p *Pipeline) noteTarget(r *record.Record, kind uint8, req *fileReq, irp uint64) {
	if p.mode != modeLive {
		return
	}
	s := &p.stk
	t := &s.targets[s.next]
	s.next = (s.next + 1) % numTargets
	*t = stackTarget{ts: r.Timestamp, tid: r.ThreadID, kind: kind, req: req, irp: irp}
	if req != nil {
		t.id = req.ev.ID
	}
}

// findTarget returns the latest event with the stack's timestamp and
// thread.
func (p *Pipeline) findTarget(ts int64, tid uint32) *stackTarget {
	s := &p.stk
	for i := 1; i <= numTargets; i++ {
		t := &s.targets[(s.next-i+numTargets)%numTargets]
		if t.ts == ts && (t.tid == tid || t.tid == record.NoID) {
			return t
		}
	}
	return nil
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

// evKey is the timestamp (raw) and thread of an event, as its stack
// records name it.
type evKey struct {
	ts  int64
	tid uint32
}

// keyRef is a reference to a stack cache key, at the time of the
// reference record.
type keyRef struct {
	key uint64
	ts  int64
	ok  bool
}

// userPart is the user part of a stack: frames, or a cache key. One user
// part may serve several events (see collectStack).
type userPart struct {
	frames []uint64
	ref    keyRef
	ok     bool
}

// preStack is the stack of one event, collected in the first pass of a
// file.
type preStack struct {
	kernel []uint64
	kref   keyRef
	hasK   bool
	user   userPart
	shared bool   // user came from another event's stack record
	n      uint64 // stack records
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
func (p *Pipeline) collectStack(r *record.Record, ev *kernel.Event) {
	s := &p.stk
	if s.pre == nil {
		s.pre = make(map[evKey]int32, 1024)
		s.pres = make([]preStack, 0, 1024)
		s.waitUser = make(map[uint32][]evKey)
	}
	k := evKey{ts: ev.StackTime, tid: ev.Tid}
	i, ok := s.pre[k]
	if !ok {
		i = int32(len(s.pres))
		s.pres = append(s.pres, preStack{})
		s.pre[k] = i
	}
	ps := &s.pres[i]
	ps.n++
	var up userPart
	switch {
	case ev.Kind == kernel.KindStack:
		ptr := ev.Frames.PtrSize()
		f := ev.Frames.AppendTo(s.scratch[:0])
		s.scratch = f
		i := 0
		for i < len(f) && kernelAddr(f[i], ptr) {
			i++
		}
		if i > 0 {
			ps.kernel, ps.hasK = s.keep(f[:i]), true
		}
		if i < len(f) {
			up = userPart{frames: s.keep(f[i:]), ok: true}
			if i > 0 {
				// A whole stack: its user part is its own.
				ps.user, ps.shared = up, false
				up.ok = false
			}
		}
	case r.Opcode == kernel.OpcodeStackKeyKernel:
		ps.kref, ps.hasK = keyRef{key: ev.StackKey, ts: r.Timestamp, ok: true}, true
	default:
		up = userPart{ref: keyRef{key: ev.StackKey, ts: r.Timestamp, ok: true}, ok: true}
	}
	if up.ok {
		ps.user, ps.shared = up, false
		for _, w := range s.waitUser[k.tid] {
			if j, ok := s.pre[w]; ok && w != k && !s.pres[j].user.ok {
				s.pres[j].user, s.pres[j].shared = up, true
			}
		}
		if l, ok := s.waitUser[k.tid]; ok {
			s.waitUser[k.tid] = l[:0]
		}
		return
	}
	if ps.hasK && !ps.user.ok {
		list := s.waitUser[k.tid]
		if len(list) >= maxWaitUser {
			list = append(list[:0], list[1:]...)
		}
		s.waitUser[k.tid] = append(list, k)
	}
}

// keep copies frames into the arena of collected frames.
func (s *stackState) keep(f []uint64) []uint64 {
	start := len(s.arena)
	s.arena = append(s.arena, f...)
	return s.arena[start:len(s.arena):len(s.arena)]
}

// takeStack returns the stack the first pass collected for the event of
// record r (nil when none), resolving its cache keys.
func (p *Pipeline) takeStack(r *record.Record) *stackParts {
	return p.takeStackCounted(r, true)
}

func (p *Pipeline) takeStackCounted(r *record.Record, joined bool) *stackParts {
	if p.mode != modeReplay || len(p.stk.pre) == 0 {
		return nil
	}
	k := evKey{ts: r.Timestamp, tid: r.ThreadID}
	if k.tid == record.NoID {
		// An event logged without its thread (PERFINFO header): the
		// events whose stacks iotrace keeps have one.
		return nil
	}
	i, ok := p.stk.pre[k]
	if !ok {
		return nil
	}
	ps := &p.stk.pres[i]
	delete(p.stk.pre, k)
	if !joined {
		p.count(StatStacksOther, event.CountInfo, ps.n)
		return nil
	}
	p.count(StatStackRecords, event.CountInfo, ps.n)
	sp := &p.stk.take
	*sp = stackParts{has: true, kernel: ps.kernel}
	if ps.kref.ok {
		if f, ok := p.keyFrames(ps.kref.key, true, ps.kref.ts); ok {
			sp.kernel = f
		} else {
			sp.lost |= event.FactKernelLost
		}
	}
	if up := &ps.user; up.ok {
		if ps.shared {
			p.count(StatStackUserShared, event.CountInfo, 1)
		}
		sp.user = up.frames
		if up.ref.ok {
			if f, ok := p.keyFrames(up.ref.key, false, up.ref.ts); ok {
				sp.user = f
			} else {
				sp.lost |= event.FactUserLost
			}
		}
	}
	return sp
}

// otherStack counts the stack of an event whose stack iotrace does not
// keep.
func (p *Pipeline) otherStack(r *record.Record) {
	if p.mode == modeReplay {
		p.takeStackCounted(r, false)
		return
	}
	p.noteTarget(r, targetOther, nil, 0)
}

// flushStacks counts the collected stacks no event took.
func (p *Pipeline) flushStacks() {
	var n uint64
	for _, i := range p.stk.pre {
		n += p.stk.pres[i].n
	}
	if n > 0 {
		p.count(StatStacksNoEvent, event.CountInfo, n)
	}
	p.stk.pre, p.stk.pres, p.stk.arena = nil, nil, nil
}

// onStack handles StackWalk records.
func (p *Pipeline) onStack(r *record.Record, ev *kernel.Event) {
	if ev.Kind == kernel.KindStackKeyDef {
		if p.mode != modeReplay { // the first pass, or a live session
			p.defineKey(r, ev)
		}
		return
	}
	switch p.mode {
	case modeCollect:
		p.collectStack(r, ev)
		return
	case modeReplay:
		return // joined from the first pass's collection (takeStack)
	}
	// A live session: the stack follows its event.
	t := p.findTarget(ev.StackTime, ev.Tid)
	if t == nil {
		p.count(StatStacksNoEvent, event.CountInfo, 1)
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
	default:
		p.count(StatStacksOther, event.CountInfo, 1)
		return
	}
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
	p.count(StatStackRecords, event.CountInfo, 1)
}

// defKey is a stack cache key in its space: the kernel's and the user
// part's keys are apart (the same key can stand for a kernel and a user
// part at once); a definition belongs to the space of its outermost frame.
type defKey struct {
	key    uint64
	kernel bool
}

// defineKey records a stack cache key's frames.
func (p *Pipeline) defineKey(r *record.Record, ev *kernel.Event) {
	s := &p.stk
	if s.keyDefs == nil {
		s.keyDefs = make(map[defKey][]keyDef)
	}
	n := ev.Frames.Len()
	if n == 0 {
		return
	}
	k := defKey{key: ev.StackKey, kernel: kernelAddr(ev.Frames.At(n-1), ev.Frames.PtrSize())}
	f := ev.Frames.AppendTo(s.scratch[:0])
	s.scratch = f
	s.keyDefs[k] = append(s.keyDefs[k], keyDef{ts: r.Timestamp,
		create: r.Opcode == kernel.OpcodeStackKeyCreate, frames: s.keep(f)})
}

// keyFrames returns the frames key (of the kernel or the user space)
// stood for at ts: the first deletion or rundown of the key at or after
// ts, else the last creation before it.
func (p *Pipeline) keyFrames(key uint64, kernelSide bool, ts int64) ([]uint64, bool) {
	defs := p.stk.keyDefs[defKey{key: key, kernel: kernelSide}]
	var created []uint64
	for i := range defs {
		d := &defs[i]
		if d.create {
			if d.ts <= ts {
				created = d.frames
			}
			continue
		}
		if d.ts >= ts {
			return d.frames, true
		}
	}
	if created != nil {
		return created, true
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
			splitFrames(sp, addrs, ptr)
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
	if e.Layer == event.LayerBlock {
		p.count(StatStacksDisk, event.CountInfo, 1)
	} else {
		p.count(StatStacksFile, event.CountInfo, 1)
	}
	e.Stack = p.internStack(sp.kernel, sp.user, sp.lost)
}

func (p *Pipeline) internStack(k, u []uint64, flags event.FactFlags) uint64 {
	s := &p.stk
	if s.ids == nil {
		s.ids = make(map[uint64][]stackEntry)
		s.seed = maphash.MakeSeed()
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	var b [8]byte
	for _, a := range k {
		binary.LittleEndian.PutUint64(b[:], a)
		h.Write(b[:])
	}
	h.WriteByte(0xff)
	for _, a := range u {
		binary.LittleEndian.PutUint64(b[:], a)
		h.Write(b[:])
	}
	binary.LittleEndian.PutUint64(b[:], uint64(flags))
	h.Write(b[:])
	sum := h.Sum64()
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

// keepError keeps the decoding error of a stack record of the first pass
// for the second, which does not see stack records: a count per counter
// and the first few messages.
func (s *stackState) keepError(r *record.Record, k kernel.Key, err error) {
	if !isStackWalk(r) {
		return
	}
	if s.errs == nil {
		s.errs = make(map[string]uint64)
	}
	s.errs[StatDecodeErrors+": "+k.String()]++
	if len(s.errMsgs) < maxWarnings {
		s.errMsgs = append(s.errMsgs, fmt.Sprintf("etl record at file offset %#x (buffer %d): %v", r.FileOffset, r.Buffer, err))
	}
}

// replayErrors counts (and reports) the errors keepError kept, once the
// second pass has begun.
func (s *stackState) replayErrors(p *Pipeline) {
	for name, n := range s.errs {
		p.count(name, event.CountDropped, n)
	}
	for _, m := range s.errMsgs {
		p.warn("%s", m)
	}
	s.errs, s.errMsgs = nil, nil
}
