// Package reorder merges records from several sources, each read in time
// order, into one stream in time order: the eBPF backend reads its BPF
// ring buffer and its per-CPU record slots (package slots) apart, and the
// tracker must see a thread's calls, its process's fork, exec and exit
// and a descriptor's close before the next open of the same number in the
// order they happened.
//
// The caller takes the time T, reads every source, and releases what was
// written before T less a hold-back: a program reads the clock before it
// writes its record, so one still being written at T was timed shortly
// before. A record that comes after a later one was released (a writer
// stalled longer than the hold-back) is released at once and counted as
// late, never dropped. Records stay where their source keeps them until
// released (a slot is not freed before): nothing is copied but what the
// caller queues itself (Queue).
//
// Written here: a k-way merge over byte records with a watermark is a
// few lines, and none at hand leaves the records in place.
package reorder

// Source is a sequence of records read in time order.
type Source interface {
	// Peek returns the next record, valid until Pop (false: none now).
	Peek() ([]byte, bool)
	// Pop drops the record Peek returned.
	Pop()
}

// Merger releases the records of its sources in time order. Not safe for
// concurrent use; sources may be written meanwhile (what a source gets
// during a Release waits for the next).
type Merger struct {
	srcs     []Source
	time     func([]byte) uint64
	heads    []head
	released uint64 // time of the last record released
	late     uint64
}

// head is a source's next record, its time no earlier than the record's
// before it in that source (a source's own small disorder is kept as it
// came).
type head struct {
	rec  []byte
	time uint64
	ok   bool
	last uint64
}

// New returns a merger of srcs; time gives a record's time. Records of
// equal time go lowest source first.
func New(time func([]byte) uint64, srcs ...Source) *Merger {
	return &Merger{srcs: srcs, time: time, heads: make([]head, len(srcs))}
}

// Late returns the records released after a record with a later time.
func (m *Merger) Late() uint64 { return m.late }

func (m *Merger) peek(i int) {
	h := &m.heads[i]
	h.rec, h.ok = m.srcs[i].Peek()
	if h.ok {
		h.time = max(m.time(h.rec), h.last)
	}
}

// Release passes to emit, in time order, every record with a time at or
// before upTo, popping it from its source when emit returns. An error
// from emit stops the release and is returned (that record is popped).
func (m *Merger) Release(upTo uint64, emit func([]byte) error) error {
	for i := range m.srcs {
		m.peek(i)
	}
	for {
		best := -1
		for i := range m.heads {
			h := &m.heads[i]
			if h.ok && h.time <= upTo && (best < 0 || h.time < m.heads[best].time) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		h := &m.heads[best]
		if h.time < m.released {
			m.late++
		} else {
			m.released = h.time
		}
		h.last = h.time
		err := emit(h.rec)
		m.srcs[best].Pop()
		if err != nil {
			return err
		}
		m.peek(best)
	}
}

// Queue is a Source of records copied in: the ring buffer's, whose reader
// reuses its buffer.
type Queue struct {
	buf  []byte
	ends []int // end of each record in buf
	next int   // first record not popped
}

// Add copies rec to the end of the queue.
func (q *Queue) Add(rec []byte) {
	q.buf = append(q.buf, rec...)
	q.ends = append(q.ends, len(q.buf))
}

// Len returns the records queued.
func (q *Queue) Len() int { return len(q.ends) - q.next }

// Peek returns the first record queued.
func (q *Queue) Peek() ([]byte, bool) {
	if q.next == len(q.ends) {
		return nil, false
	}
	start := 0
	if q.next > 0 {
		start = q.ends[q.next-1]
	}
	return q.buf[start:q.ends[q.next]], true
}

// Pop drops the first record; an emptied queue starts again at the front
// of its memory, and one mostly popped moves the rest down.
func (q *Queue) Pop() {
	q.next++
	switch {
	case q.next == len(q.ends):
		q.buf, q.ends, q.next = q.buf[:0], q.ends[:0], 0
	case q.next >= 1024 && q.next >= len(q.ends)-q.next:
		base := q.ends[q.next-1]
		n := copy(q.ends, q.ends[q.next:])
		q.ends = q.ends[:n]
		for i := range q.ends {
			q.ends[i] -= base
		}
		q.buf = q.buf[:copy(q.buf, q.buf[base:])]
		q.next = 0
	}
}
