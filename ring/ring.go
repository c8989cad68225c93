// Package ring is iotrace's flight recorder: an event.Sink that keeps only
// the most recent events, up to a memory budget, and writes them out as a
// complete trace on request.
//
// Events are kept in arrival order; when the budget is exceeded the oldest
// are overwritten and counted. Facts (processes, threads, fd and handle
// names, devices, volumes) are kept in arrival order alongside the events
// while they are inside the window; when the window moves past a fact it
// is folded into a table of the facts still live (an open fd, a running
// process), and facts that ended are dropped. A save writes the header,
// the live facts, then the window's facts and events in their order, and a
// trailer that counts the overwritten events as a loss, so a kept event
// whose fd was opened long before the window still resolves.
//
// It is written by hand because it is this project's own: it needs the
// trace's fact semantics, not a generic container.
package ring

import (
	"errors"
	"fmt"
	"github.com/iotrace/iotrace/factset"
	"sync"
	"unsafe"

	"github.com/iotrace/iotrace/event"
)

// OverwrittenCounter is the name of the lost-events counter a save carries.
const OverwrittenCounter = "flight recorder: older events overwritten"

// KeptCounter is the name of the informational counter of events saved.
const KeptCounter = "flight recorder: events kept"

// SavePrefix starts the text of a marker that asks a running flight
// recorder to save (`iotrace mark --save`).
const SavePrefix = "[iotrace save]"

// eventBase is the memory an event is charged besides its strings.
const eventBase = int(unsafe.Sizeof(item{}))

// Cost returns what an event is charged against the budget: the size of
// its slot in the ring plus its strings.
func Cost(e *event.Event) int {
	return eventBase + len(e.Native) + len(e.Comm) + len(e.Path) + len(e.Path2) + len(e.Note)
}

// item is one kept record: an event or a fact.
type item struct {
	ev   event.Event
	fact *event.Fact // set for a fact (facts are few next to events)
}

// Ring keeps the most recent events of a stream. It is an event.Sink; Save
// may be called from another goroutine at any time after Begin.
type Ring struct {
	mu     sync.Mutex
	limit  int
	hdr    event.Header
	began  bool
	items  []item // a queue: items[head:] are kept
	head   int
	cost   int // of the kept events
	events int // kept events

	live    *factset.Set   // facts folded out of the window, still holding
	seen    uint64         // events received
	trailer *event.Trailer // the stream's, once it ended
}

// New returns a ring that keeps events up to limit bytes (see Cost).
func New(limit int) (*Ring, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("ring: size %d: want a positive byte count", limit)
	}
	if limit < eventBase {
		return nil, fmt.Errorf("ring: size %d is smaller than one event (%d bytes)", limit, eventBase)
	}
	return &Ring{limit: limit, live: factset.New()}, nil
}

// Begin implements event.Sink.
func (r *Ring) Begin(h *event.Header) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hdr, r.began = *h, true
	return nil
}

// Event implements event.Sink: it keeps a copy of e and overwrites the
// oldest events beyond the budget.
func (r *Ring) Event(e *event.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen++
	r.items = append(r.items, item{ev: *e})
	r.cost += Cost(e)
	r.events++
	for r.cost > r.limit && r.events > 1 {
		r.evictOne()
	}
	r.compact()
	return nil
}

// Fact implements event.Sink.
func (r *Ring) Fact(f *event.Fact) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.events == 0 {
		r.fold(f) // no event in the window: nothing to interleave with
		return nil
	}
	fc := *f
	r.items = append(r.items, item{fact: &fc})
	return nil
}

// End implements event.Sink: it keeps the stream's trailer for the save at
// exit.
func (r *Ring) End(t *event.Trailer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	tc := *t
	tc.Stats.Counters = append([]event.Counter(nil), t.Stats.Counters...)
	r.trailer = &tc
	return nil
}

// evictOne drops the oldest event, folding the facts before it and after
// it up to the next event into the live table.
func (r *Ring) evictOne() {
	for r.head < len(r.items) && r.items[r.head].fact != nil {
		r.fold(r.items[r.head].fact)
		r.items[r.head] = item{}
		r.head++
	}
	if r.head < len(r.items) {
		r.cost -= Cost(&r.items[r.head].ev)
		r.events--
		r.items[r.head] = item{}
		r.head++
	}
	for r.head < len(r.items) && r.items[r.head].fact != nil {
		r.fold(r.items[r.head].fact)
		r.items[r.head] = item{}
		r.head++
	}
}

// compact moves the kept items to the front once half the slice is dead.
func (r *Ring) compact() {
	if r.head > 1024 && r.head*2 > len(r.items) {
		n := copy(r.items, r.items[r.head:])
		clear(r.items[n:])
		r.items = r.items[:n]
		r.head = 0
	}
}

// fold applies f to the live table (package factset): an ending fact
// removes its subject (a process's end its descriptors too), any other
// replaces it.
func (r *Ring) fold(f *event.Fact) { r.live.Apply(f) }

// Stats are a ring's counts.
type Stats struct {
	// Seen is the number of events received; Kept the number in the
	// window; Overwritten = Seen - Kept.
	Seen, Kept, Overwritten uint64
	// Bytes is the window's cost (see Cost); Limit the budget.
	Bytes, Limit int
	// LiveFacts is the number of facts kept from before the window.
	LiveFacts int
}

// Stats returns the ring's counts now.
func (r *Ring) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats()
}

func (r *Ring) stats() Stats {
	return Stats{Seen: r.seen, Kept: uint64(r.events), Overwritten: r.seen - uint64(r.events),
		Bytes: r.cost, Limit: r.limit, LiveFacts: r.live.Len()}
}

// ErrNotBegun is returned by Save before the stream began.
var ErrNotBegun = errors.New("ring: nothing recorded yet (the trace has not started)")

// Save writes the kept trace to sink: the header, the facts still live
// from before the window, the window's facts and events in arrival order,
// and a trailer. The trailer carries the stream's own counters once it
// ended (until then the backend's counts are not known) plus the
// overwritten events as a loss and the kept events as information. The
// ring is left as it was. Events received meanwhile wait for the save.
func (r *Ring) Save(sink event.Sink) (Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stats()
	if !r.began {
		return st, ErrNotBegun
	}
	h := r.hdr
	if err := sink.Begin(&h); err != nil {
		return st, err
	}
	// The facts that held before the window, as a rundown at its start.
	start := int64(0)
	for i := r.head; i < len(r.items); i++ {
		if it := &r.items[i]; it.fact == nil {
			start = it.ev.Time
			break
		}
	}
	if err := r.live.Snapshot(start, sink.Fact); err != nil {
		return st, err
	}
	var f event.Fact
	var e event.Event
	var last int64
	for i := r.head; i < len(r.items); i++ {
		it := &r.items[i]
		if it.fact != nil {
			f = *it.fact
			if err := sink.Fact(&f); err != nil {
				return st, err
			}
			continue
		}
		e = it.ev
		if end := e.End(); end > last {
			last = end
		}
		if err := sink.Event(&e); err != nil {
			return st, err
		}
	}
	t := event.Trailer{End: last}
	if r.trailer != nil {
		t.End = max(t.End, r.trailer.End)
		t.Stats.Counters = append(t.Stats.Counters, r.trailer.Stats.Counters...)
	}
	t.Stats.Set(event.CountLost, OverwrittenCounter, st.Overwritten)
	t.Stats.Set(event.CountInfo, KeptCounter, st.Kept)
	return st, sink.End(&t)
}
