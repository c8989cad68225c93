package stackjoin

import "context"

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

// MaxWaitUser bounds the events of one thread waiting for a user part
// (the threads of the System process never return to user mode).
const MaxWaitUser = 256

// Assemble ends a file's first pass: it builds the stacks of events from
// the stack records, in time order, and sorts them by event (the second
// pass meets the events in time order) and the key definitions by key.
// It returns the number of stacks, or ctx's error when ctx is done
// first: it checks ctx at least every checkEvery records and between the
// passes of its sorts.
func (s *Joiner) Assemble(ctx context.Context) (int, error) {
	// Sort small (time, thread and index) keys: the stacks stay where
	// assemble put them (no stack can outnumber the records it reused
	// the buffer of).
	order, err := s.assemble(ctx)
	if err != nil {
		return 0, err
	}
	for i := range s.pres {
		order = append(order, tsIndex{ts: s.pres[i].ts, i: uint64(s.pres[i].tid)<<32 | uint64(i)})
	}
	if err := sortTS(ctx, order); err != nil {
		return 0, err
	}
	s.order = order
	s.cur = 0
	if err := s.sortDefsOnce(ctx); err != nil {
		return 0, err
	}
	s.waitUser = nil
	return len(s.pres), nil
}

// checkEvery is how many records the first pass's assembly loops handle
// between checks of their context (a few milliseconds' work).
const checkEvery = 1 << 16

// assemble builds the stacks of events from the stack records, in time
// order. It returns its sort buffer, emptied, for Assemble.
func (s *Joiner) assemble(ctx context.Context) ([]tsIndex, error) {
	if err := s.markNoTid(ctx); err != nil {
		return nil, err
	}
	order := make([]tsIndex, 0, s.nraw)
	for c, chunk := range s.raw {
		for i := range chunk {
			order = append(order, tsIndex{ts: chunk[i].recTS, i: uint64(c*rawChunk + i)})
		}
	}
	if err := sortTS(ctx, order); err != nil {
		return nil, err
	}
	s.waitUser = make(map[uint32][]int32)
	s.pres = make([]preStack, 0, s.nraw)
	for k, o := range order {
		if k%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
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
	return order[:0], nil
}

// addKernel collects the kernel part of the stack of the event of stack
// record r: the event then waits for its thread's next user part.
func (s *Joiner) addKernel(r *rawStack, k part) {
	tid := r.tid
	s.pres = append(s.pres, preStack{ts: r.ts, pid: r.pid, tid: tid, cpu: r.cpu, nrec: 1, kern: k, seen: r.seen})
	list := s.waitUser[tid]
	if len(list) >= MaxWaitUser {
		list = append(list[:0], list[1:]...)
	}
	s.waitUser[tid] = append(list, int32(len(s.pres)-1))
}

// addUser collects a user part: the event's own, and that of every kernel
// event of the thread still waiting for one. A waiting event of another
// process had its thread end before it returned to user mode, the
// thread's ID then reused: it gets none (userGone).
func (s *Joiner) addUser(r *rawStack, u part) {
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

// threadEnd gives up the user parts the stacks of thread tid of process
// pid wait for: it ended before returning to user mode.
func (s *Joiner) threadEnd(pid, tid uint32) {
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
