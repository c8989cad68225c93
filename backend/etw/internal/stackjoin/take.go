package stackjoin

import (
	"sort"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Take returns the stack assembled for the event of record r on thread
// tid (the thread its stack walks name; nil when none), resolving its
// cache keys, and counts its stack records: joined, or of an event whose
// stack is not kept (joined false: nil is returned). Events must come in
// time order. The value is reused by the next call.
func (s *Joiner) Take(r *record.Record, tid uint32, joined bool) *Parts {
	if len(s.pres) == 0 || tid == record.NoID {
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
	pick := s.group(ts, tid, r.CPU).next(s, tid, r.CPU)
	if pick < 0 {
		return nil
	}
	e := &s.pres[uint32(s.order[pick].i)]
	e.taken = true
	ps := *e
	if !joined {
		s.t.Add(StatOther, event.CountInfo, uint64(ps.nrec))
		return nil
	}
	s.t.Add(StatRecords, event.CountInfo, uint64(ps.nrec))
	sp := &s.take
	*sp = Parts{Has: true}
	if ps.kern.ok {
		if f, ok := s.partFrames(ps.kern, true); ok {
			sp.Kernel = f
		} else {
			sp.Lost |= event.FactKernelLost
		}
	}
	if !ps.user.ok && ps.userGone {
		sp.Lost |= event.FactUserLost
		s.t.Add(StatUserGone, event.CountDropped, 1)
	}
	if ps.user.ok {
		if ps.shared {
			s.t.Add(StatUserShared, event.CountInfo, 1)
		}
		if f, ok := s.partFrames(ps.user, false); ok {
			sp.User = f
		} else {
			sp.Lost |= event.FactUserLost
		}
	}
	return sp
}

// takeGroup is where the events of one thread at one time take their
// stacks: the thread's stacks at that time are order[from:end] (order is
// by time, then thread), and kern and any pass over them once, to the
// next one with a kernel part and to the next one, not taken yet. Many
// events at one time cost each a step, not a scan of the others.
type takeGroup struct {
	kern, any, end int
}

// groupKey is a thread at the time of the groups (and its processor,
// for thread 0).
type groupKey struct {
	tid uint32
	cpu uint16
}

// group returns the take group of thread tid at ts (from s.cur on),
// made when its first event comes.
func (s *Joiner) group(ts int64, tid uint32, cpu uint16) *takeGroup {
	if ts != s.groupsTS || s.groupAt == nil {
		if s.groupAt == nil || len(s.groupAt) > 16 {
			s.groupAt = make(map[groupKey]int) // not clear: a large map's buckets would be walked at every time
		}
		clear(s.groupAt)
		s.groups = s.groups[:0]
		s.groupsTS = ts
	}
	k := groupKey{tid: tid}
	if tid == 0 {
		k.cpu = cpu
	}
	if i, ok := s.groupAt[k]; ok {
		return &s.groups[i]
	}
	rest := s.order[s.cur:]
	at := func(i uint64) int {
		return s.cur + sort.Search(len(rest), func(j int) bool {
			o := rest[j]
			return o.ts > ts || o.ts == ts && o.i >= i
		})
	}
	from := at(uint64(tid) << 32)
	s.groupAt[k] = len(s.groups)
	s.groups = append(s.groups, takeGroup{kern: from, any: from, end: at(uint64(tid)<<32 + 1<<32)})
	return &s.groups[len(s.groups)-1]
}

// next returns the index in order of the stack the group's next event
// takes, -1 for none.
func (g *takeGroup) next(s *Joiner, tid uint32, cpu uint16) int {
	mine := func(j int) *preStack {
		e := &s.pres[uint32(s.order[j].i)]
		if e.taken || tid == 0 && e.cpu != cpu {
			return nil
		}
		return e
	}
	for ; g.kern < g.end; g.kern++ {
		if e := mine(g.kern); e != nil && e.kern.ok {
			return g.kern
		}
	}
	for ; g.any < g.end; g.any++ {
		if mine(g.any) != nil {
			return g.any
		}
	}
	return -1
}

// partFrames returns the frames of a collected part.
func (s *Joiner) partFrames(pt part, kernelSide bool) ([]uint64, bool) {
	if !pt.isRef {
		return s.frames(pt), true
	}
	return s.KeyFrames(pt.key, kernelSide, pt.ts)
}

// Leftover counts the assembled stacks no event took, and lets go of
// them: those of a record in the trace (iotrace does not decode it, or
// keeps no stack of it), those with a kernel part of no record of their
// time and thread (their event was lost: a problem) and user parts
// alone, whose event is not looked for (walked when the thread returned
// to user mode, maybe on another processor, any number of records
// later).
func (s *Joiner) Leftover() {
	var other, orphan, user uint64
	for i := range s.pres {
		e := &s.pres[i]
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
		s.t.Add(StatNoEvent, event.CountInfo, other)
	}
	if orphan > 0 {
		s.t.Add(StatOrphan, event.CountLost, orphan)
	}
	if user > 0 {
		s.t.Add(StatUserAlone, event.CountInfo, user)
	}
	s.pres, s.order, s.arena, s.defs = nil, nil, nil, nil
}
