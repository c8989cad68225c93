package ebpf

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/iotrace/iotrace/event"
)

// blockQueue is the capacity of the queue that hands block events from
// the block tracer's goroutine to the syscall reader's.
const blockQueue = 8192

// maxWaiting bounds the block events waiting for their process's records.
const maxWaiting = 1 << 16

// statBlockOverflow counts the block events that could not wait for their
// process's records: they have no process start time.
const statBlockOverflow = "block events sent without their process start time (hand-over queue full)"

// blockHandover hands block events from the block tracer's goroutine to
// the reader's, which alone may touch the process table that gives them
// their process's start time and name. The reader takes them whenever the
// queue is half full, and at least every 4096 records: an event of a
// process the table knows goes on at once; one of a process it does not
// know yet (its fork still unread in the ring buffer) waits until the
// records that were in the ring buffer when it was taken are read. The
// reader never waits for an empty ring buffer, which under load never
// comes (the queue then overflowed).
type blockHandover struct {
	q        chan event.Event
	overflow atomic.Uint64 // events that found the queue full
	waiting  []event.Event // the reader's: events of processes not known yet

	// noWaitUntil: after a wait for room that timed out, offer does not
	// wait again until then (the block tracer's own buffer must not fill
	// while the reader is stalled).
	noWaitUntil time.Time
}

// offerWait is how long offer waits for room in a full queue: a reader
// stalled for a moment (a write the page cache throttles) catches up.
const offerWait = 100 * time.Millisecond

func newBlockHandover() *blockHandover {
	return &blockHandover{q: make(chan event.Event, blockQueue)}
}

// offer queues e (the block tracer's goroutine), waiting up to offerWait
// for room; when the queue stays full, e goes to sink as it is, counted.
func (h *blockHandover) offer(e *event.Event, sink *lockedSink) {
	select {
	case h.q <- *e:
		return
	default:
	}
	if now := time.Now(); now.After(h.noWaitUntil) {
		t := time.NewTimer(offerWait)
		defer t.Stop()
		select {
		case h.q <- *e:
			return
		case <-t.C:
			h.noWaitUntil = time.Now().Add(time.Second)
		}
	}
	h.overflow.Add(1)
	_ = sink.Event(e)
}

// halfFull reports whether the reader should take the queue now.
func (h *blockHandover) halfFull() bool { return h != nil && len(h.q) >= blockQueue/2 }

// take moves the queued events on: those of processes tr knows to it, the
// others to h.waiting (beyond maxWaiting, to tr all the same, counted).
func (h *blockHandover) take(tr *tracker) {
	if h == nil {
		return
	}
	for n := len(h.q); n > 0; n-- {
		e := <-h.q
		if known(tr, &e) {
			tr.blockEvent(&e)
			continue
		}
		if len(h.waiting) >= maxWaiting {
			h.overflow.Add(1)
			tr.blockEvent(&e)
			continue
		}
		h.waiting = append(h.waiting, e)
	}
}

// release passes the first n waiting events to tr.
func (h *blockHandover) release(tr *tracker, n int) {
	for i := range n {
		tr.blockEvent(&h.waiting[i])
	}
	k := copy(h.waiting, h.waiting[n:])
	clear(h.waiting[k:])
	h.waiting = h.waiting[:k]
}

// finish hands over everything once the syscall records are all read:
// what waited, then what the block tracer still delivers while it drains
// (until done), then the rest.
func (h *blockHandover) finish(tr *tracker, done <-chan error) error {
	h.release(tr, len(h.waiting))
	var err error
	for running := true; running; {
		select {
		case err = <-done:
			running = false
		case e := <-h.q:
			tr.blockEvent(&e)
		}
	}
	for n := len(h.q); n > 0; n-- {
		e := <-h.q
		tr.blockEvent(&e)
	}
	return err
}

// known reports whether e's process is known to tr's table (or has none),
// so that the records still unread cannot change its identity.
func known(tr *tracker, e *event.Event) bool {
	if e.Pid == 0 || e.Flags&event.FlagNoStart != 0 || tr.table.Lookup(e.Pid) != nil {
		return true
	}
	_, gone := tr.gone[e.Pid]
	return gone
}

// flushBlocks hands the queued block events to the tracker: those of
// known processes at once, the others after the records in the ring
// buffer now are read (they include the fork and exec records of every
// process that queued one of these bios, so the table knows it, and its
// start time, as its syscall events do).
func (r *run) flushBlocks() error {
	r.blocks.take(r.tr)
	if r.blocks == nil || len(r.blocks.waiting) == 0 {
		return nil
	}
	n := len(r.blocks.waiting)
	// With per-CPU slots, the records held for their order are handed
	// over too: the process facts the waiting events need may be among
	// them.
	read := r.readAvailable
	if r.in != nil {
		read = func() error { return sinkNil(r.pump(true)) }
	}
	if err := read(); err != nil {
		return err
	}
	r.blocks.release(r.tr, n)
	return nil
}

// readAvailable reads the records in the ring buffer now, not those that
// arrive meanwhile (a reader behind a busy machine would never find it
// empty), taking the block events queued meanwhile.
func (r *run) readAvailable() error {
	var rec ringbuf.Record
	rd := r.pr.rd
	rd.SetDeadline(time.Now())
	for left, n := rd.AvailableBytes(), 0; left > 0; n++ {
		err := rd.ReadInto(&rec)
		switch {
		case err == nil:
			if herr := r.ingest(rec.RawSample); herr != nil {
				return nil
			}
			left -= 8 + (len(rec.RawSample)+7)&^7 // header and padded sample
			if n&255 == 0 && r.blocks.halfFull() {
				r.blocks.take(r.tr)
			}
		case woken(err):
			return nil
		default:
			return fmt.Errorf("ebpf: read ring buffer: %w", err)
		}
	}
	return nil
}
