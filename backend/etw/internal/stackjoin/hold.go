package stackjoin

import (
	"github.com/iotrace/iotrace/backend/etw/internal/tally"
	"github.com/iotrace/iotrace/event"
)

// Live sessions hold an event whose stack waits for its user part at
// most this long (trace time) and this many per thread; ExpireEvery is
// how many records may pass between calls to Expire.
const (
	maxHoldTime   = 2_000_000_000
	maxHeldPerTid = 64
	ExpireEvery   = 256
)

// Held is an event complete but for the user part of its stack.
type Held struct {
	Event event.Event
	Parts Parts
	File  bool // a file request (else a disk I/O)
}

// Holder holds a live session's complete events whose stacks wait for
// their user part, by thread, until it comes (GiveUser), the thread ends
// (ThreadEnded) or they waited too long (Expire). The events it lets go
// are Released, in order, for the caller to emit.
type Holder struct {
	t    *tally.Tally
	held map[uint32][]Held
	n    int
	out  []Held
}

// NewHolder returns a Holder that counts into t.
func NewHolder(t *tally.Tally) *Holder { return &Holder{t: t} }

// Len returns the number of events held.
func (h *Holder) Len() int { return h.n }

// Holds reports whether events of thread tid are held.
func (h *Holder) Holds(tid uint32) bool { return len(h.held[tid]) > 0 }

// Hold holds e, whose stack sp waits for its user part; the oldest event
// of its thread goes, flagged user-lost, when the thread has too many.
func (h *Holder) Hold(e *event.Event, sp *Parts, file bool) {
	if h.held == nil {
		h.held = make(map[uint32][]Held)
	}
	list := h.held[sp.Tid]
	if len(list) >= maxHeldPerTid {
		h.releaseNoUser(&list[0])
		list = append(list[:0], list[1:]...)
		h.n--
	}
	h.held[sp.Tid] = append(list, Held{Event: *e, Parts: *sp, File: file})
	h.n++
}

// GiveUser gives the user part of thread tid of process pid (lost: its
// FactUserLost flag) to the events of the thread held, and lets them go;
// an event of another process had its thread end first (UserGone). It
// reports whether any took it.
func (h *Holder) GiveUser(tid, pid uint32, user []uint64, lost event.FactFlags) (joined bool) {
	held := h.held[tid]
	for i := range held {
		x := &held[i]
		if x.Parts.Pid != pid {
			x.Parts.UserGone(h.t)
		} else {
			x.Parts.User, x.Parts.Waiting = user, false
			x.Parts.Lost |= lost
			joined = true
		}
		h.out = append(h.out, *x)
	}
	if held != nil {
		h.n -= len(held)
		delete(h.held, tid)
	}
	return joined
}

// ThreadEnded lets go of the events of thread tid of process pid, their
// user part lost.
func (h *Holder) ThreadEnded(pid, tid uint32) {
	list, ok := h.held[tid]
	if !ok {
		return
	}
	n := 0
	for i := range list {
		if list[i].Parts.Pid != pid {
			list[n] = list[i]
			n++
			continue
		}
		list[i].Parts.UserGone(h.t)
		h.out = append(h.out, list[i])
	}
	h.n -= len(list) - n
	if n == 0 {
		delete(h.held, tid)
	} else {
		h.held[tid] = list[:n]
	}
}

// Expire lets go of the events that ended more than maxHoldTime before
// now (all of them: at the end), their user part lost.
func (h *Holder) Expire(all bool, now int64) {
	for tid, list := range h.held {
		n := 0
		for i := range list {
			if all || now-list[i].Event.End() > maxHoldTime {
				h.releaseNoUser(&list[i])
				continue
			}
			list[n] = list[i]
			n++
		}
		h.n -= len(list) - n
		if n == 0 {
			delete(h.held, tid)
		} else {
			h.held[tid] = list[:n]
		}
	}
}

// releaseNoUser lets go of a held event whose user part never came.
func (h *Holder) releaseNoUser(x *Held) {
	x.Parts.Waiting = false
	x.Parts.Lost |= event.FactUserLost
	h.t.Add(StatUserNever, event.CountDropped, 1)
	h.out = append(h.out, *x)
}

// Released returns the events let go since the last call, in order: the
// caller emits them before it calls the Holder again.
func (h *Holder) Released() []Held {
	out := h.out
	h.out = h.out[:0]
	return out
}
