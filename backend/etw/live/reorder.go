package live

import "container/heap"

// Putting a real-time session's events back in time order.
//
// A kernel session logs into one buffer per processor and delivers a
// buffer when it is full or when the flush timer fires, so a real-time
// consumer receives each processor's events in order but the processors'
// buffers one after the other: a disk completion logged on CPU 3 can
// arrive a second before the DiskIo Init and the file request logged on
// CPU 0 that caused it. The offline reader merges the per-CPU streams by
// timestamp before the pipeline sees them (pairing by IRP and linking disk
// I/O to file requests depend on it); the live backend does the same with
// a time window: every event is held until the session's clock has passed
// its timestamp by the window (the flush timer plus a margin), then
// released in timestamp order. An event that still arrives later than
// that goes out as soon as it comes (counted, StatReorderLate); when more
// than a bounded number of events are held, the oldest go out early
// (counted, StatReorderForced).

// reorderer holds queue items and releases them in timestamp order.
type reorderer struct {
	h        itemHeap
	spare    []*item // items to hand back to the queue for those held
	window   int64   // in session clock ticks
	limit    int     // most items held
	seq      uint64
	last     int64 // timestamp of the last item released
	released bool
	late     uint64 // items that came after later ones had gone out
	forced   uint64 // items released before their window (limit reached)
	// awaiting are the items held for an answer (an image's identity) by
	// arrival number; gaveUp counts those released without it.
	awaiting map[uint64]*item
	gaveUp   uint64
}

// defaultReorderLimit bounds the events held for reordering (about
// 5 s of a busy machine's file and disk I/O).
const defaultReorderLimit = 1 << 19

func newReorderer(window int64, limit int) *reorderer {
	if limit <= 0 {
		limit = defaultReorderLimit
	}
	return &reorderer{window: window, limit: limit}
}

// swap takes it from the queue and returns the item to give the queue
// back in its place, so that holding items never starves the ETW thread.
func (r *reorderer) swap(it *item) *item {
	var back *item
	if n := len(r.spare); n > 0 {
		back = r.spare[n-1]
		r.spare[n-1] = nil
		r.spare = r.spare[:n-1]
	} else {
		back = &item{}
	}
	r.add(it)
	return back
}

// add holds it, an item that is not the queue's (one the backend made).
func (r *reorderer) add(it *item) {
	r.seq++
	it.seq = r.seq
	if r.released && it.rec.Timestamp < r.last {
		r.late++
	}
	heap.Push(&r.h, it)
}

// release calls fn, in timestamp order, for every held item logged at
// or before now minus the window, and for the oldest ones beyond the
// limit. fn must not keep the item.
//
// An item awaiting an answer (await) is held for one more window, and
// every later one with it, unless the limit is reached.
func (r *reorderer) release(now int64, fn func(*item)) {
	for len(r.h) > 0 {
		it := r.h[0]
		if it.rec.Timestamp > now-r.window || it.await && it.rec.Timestamp > now-2*r.window {
			if len(r.h) <= r.limit {
				return
			}
			r.forced++
		}
		r.pop(fn)
	}
}

// hold marks the held item it (swapped in already) as awaiting an answer.
func (r *reorderer) hold(it *item) {
	if r.awaiting == nil {
		r.awaiting = make(map[uint64]*item)
	}
	it.await = true
	r.awaiting[it.seq] = it
}

// answered releases the hold on the item of arrival number seq, if it is
// still held.
func (r *reorderer) answered(seq uint64) {
	if it, ok := r.awaiting[seq]; ok {
		it.await = false
		delete(r.awaiting, seq)
	}
}

// releaseAll calls fn for every held item, in timestamp order.
func (r *reorderer) releaseAll(fn func(*item)) {
	for len(r.h) > 0 {
		r.pop(fn)
	}
}

func (r *reorderer) pop(fn func(*item)) {
	it := heap.Pop(&r.h).(*item)
	if it.await {
		it.await = false
		delete(r.awaiting, it.seq)
		r.gaveUp++
	}
	if !r.released || it.rec.Timestamp > r.last {
		r.last = it.rec.Timestamp
	}
	r.released = true
	fn(it)
	r.spare = append(r.spare, it)
}

// held returns the number of items held.
func (r *reorderer) held() int { return len(r.h) }

// itemHeap orders items by timestamp, then by arrival.
type itemHeap []*item

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.rec.Timestamp != b.rec.Timestamp {
		return a.rec.Timestamp < b.rec.Timestamp
	}
	return a.seq < b.seq
}
func (h itemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)   { *h = append(*h, x.(*item)) }
func (h *itemHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}
