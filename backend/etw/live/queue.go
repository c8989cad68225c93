package live

import (
	"sync"
	"sync/atomic"
)

// queue hands events from the ETW callback thread to the goroutine that
// decodes them. The callback never blocks and never allocates once the
// items have grown to the events' sizes: it takes a free item, copies the
// event into it and passes it on; when no item is free the event is
// dropped and counted (the decoder is behind).
type queue struct {
	free     chan *item
	work     chan *item
	overflow atomic.Uint64
	lostRT   atomic.Uint64 // RT_LostEvent events received
	received atomic.Uint64
	late     atomic.Uint64 // events the callback delivered after the queue closed
	// closeMu orders the callback's send against closeWork: a consumer
	// that did not stop in time may still call Event after the queue was
	// closed (a send on a closed channel would panic).
	closeMu sync.RWMutex
	closed  bool
}

func newQueue(n int) *queue {
	if n <= 0 {
		n = defaultQueueSize
	}
	q := &queue{free: make(chan *item, n), work: make(chan *item, n)}
	for i := 0; i < n; i++ {
		q.free <- &item{}
	}
	return q
}

// defaultQueueSize is the number of events in flight between the ETW
// thread and the decoder.
const defaultQueueSize = 1 << 16

// Event implements Consumer: it runs on the ProcessTrace thread.
func (q *queue) Event(er *EventRecord) {
	q.received.Add(1)
	if er.EventHeader.ProviderID == lostEventGUID {
		// RT_LostEvent (32), RT_LostBuffer (33), RT_LostFile (34): the
		// session dropped events before they reached us.
		q.lostRT.Add(1)
		return
	}
	q.closeMu.RLock()
	defer q.closeMu.RUnlock()
	if q.closed {
		q.late.Add(1)
		return
	}
	select {
	case it := <-q.free:
		Convert(er, &it.rec, &it.data, &it.ext)
		q.work <- it // never blocks: work has room for every item
	default:
		q.overflow.Add(1)
	}
}

// done returns an item to the free list once its record is processed.
func (q *queue) done(it *item) { q.free <- it }

// closeWork ends the work channel once no producer is left.
func (q *queue) closeWork() {
	q.closeMu.Lock()
	defer q.closeMu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.work)
	}
}
