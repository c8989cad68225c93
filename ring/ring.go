// Package ring is iotrace's flight recorder: an event.Sink that keeps only
// the most recent events, up to a memory budget, and writes them out as a
// complete trace on request.
//
// The window is kept as the file will hold it: events and facts are
// encoded as they arrive into records chunks of the .iot format (package
// tracefile), and each chunk, once full, goes into an arena of the
// budget's size allocated once, outside the Go heap. When a chunk does not
// fit, the oldest chunks are dropped whole and their events counted as
// overwritten; their facts are folded into a table of the facts still
// live (an open fd, a running process: package factset), and facts that
// ended are dropped. A save writes the header, the live facts as a
// rundown at the window's start, the window's chunks as they are, and a
// trailer that counts the overwritten events as a loss, so a kept event
// whose fd was opened long before the window still resolves.
//
// Memory is the arena (backed ahead of the recording where the OS can:
// populate), the chunk being built, and the live facts (bounded by the
// traced system's state): nothing is allocated per event, and an event handed over never waits for more
// housekeeping than the encoding of one record and, once per chunk, the
// copy of the chunk and the folding of the facts of the chunk it
// replaces. A save copies the window out one chunk at a time, so the
// stream waits at most for one chunk's copy while a save is written.
//
// It is written by hand because it is this project's own: it needs the
// trace's fact semantics and file format, not a generic container.
package ring

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/factset"
	"github.com/iotrace/iotrace/tracefile"
)

// OverwrittenCounter is the name of the lost-events counter a save carries.
const OverwrittenCounter = "flight recorder: older events overwritten"

// KeptCounter is the name of the informational counter of events saved.
const KeptCounter = "flight recorder: events kept"

// UnsavedCounter counts the events of the window a save could not write:
// the recording overwrote them while the save was being written (the
// disk was slower than the ring turns over).
const UnsavedCounter = "flight recorder: newer events not saved (overwritten while the save was written)"

// SavePrefix starts the text of a marker that asks a running flight
// recorder to save (`iotrace mark --save`).
const SavePrefix = "[iotrace save]"

// MinSize is the smallest budget New accepts.
const MinSize = 4 << 10

// ChunkSize returns the size at which a ring of limit bytes seals a chunk:
// a 32nd of the budget, between 256 bytes and 256 KiB. The window is
// dropped a chunk at a time, and a chunk goes where it fits whole (the
// arena's end may stay unused until it wraps), so a full window holds
// between limit minus four chunks and limit bytes of encoded records.
func ChunkSize(limit int) int {
	return min(max(limit/32, 256), 256<<10)
}

// chunkRef places one sealed chunk in the arena.
type chunkRef struct {
	seq            uint64 // order of sealing
	off, n         int    // its bytes: arena[off : off+n]
	events, facts  int
	first, lastEnd int64 // its first event's time, its latest event end
}

// Ring keeps the most recent events of a stream. It is an event.Sink; Save
// may be called from another goroutine at any time after Begin.
type Ring struct {
	mu    sync.Mutex
	limit int
	chunk int // ChunkSize(limit)

	arena        []byte
	stopPopulate func()     // stops populate and waits for it
	refs         []chunkRef // a queue: refs[head:] are in the arena, oldest first
	head         int
	tail         int    // where the next chunk goes in the arena
	seq          uint64 // of the next chunk
	bytes        int    // of the chunks in the arena
	closed       bool

	enc     *tracefile.ChunkEncoder // the chunk being built
	pending chunkRef                // its events and times
	fold    tracefile.ChunkDecoder  // reads the facts of dropped chunks

	hdr     event.Header
	began   bool
	live    *factset.Set   // facts folded out of the window, still holding
	seen    uint64         // events received
	kept    uint64         // events in the window (arena and chunk being built)
	trailer *event.Trailer // the stream's, once it ended
}

// New returns a ring that keeps at most limit bytes of encoded records
// (as the .iot file holds them). Close releases its memory.
func New(limit int) (*Ring, error) {
	if limit < MinSize {
		return nil, fmt.Errorf("ring: size %d is smaller than the smallest ring (%d bytes)", limit, MinSize)
	}
	chunk := ChunkSize(limit)
	// The chunk being built counts against the budget too.
	arena, err := newArena(limit - chunk)
	if err != nil {
		return nil, fmt.Errorf("ring: allocate %d bytes: %w", limit-chunk, err)
	}
	return &Ring{limit: limit, chunk: chunk, arena: arena, stopPopulate: populate(arena), enc: tracefile.NewChunkEncoder(), live: factset.New()}, nil
}

// errClosed is returned by a closed ring.
var errClosed = errors.New("ring: closed")

// Close releases the ring's memory; a closed ring accepts and saves
// nothing.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.stopPopulate()
	err := freeArena(r.arena)
	r.arena = nil
	return err
}

// Begin implements event.Sink.
func (r *Ring) Begin(h *event.Header) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hdr, r.began = *h, true
	return nil
}

// Event implements event.Sink: it encodes e into the window, dropping the
// oldest chunks beyond the budget.
func (r *Ring) Event(e *event.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	r.seen++
	r.kept++
	r.enc.Event(e)
	if r.pending.events == 0 {
		r.pending.first = e.Time
	}
	r.pending.events++
	r.pending.lastEnd = max(r.pending.lastEnd, e.End())
	if r.enc.Size() >= r.chunk {
		r.seal()
	}
	return nil
}

// Fact implements event.Sink.
func (r *Ring) Fact(f *event.Fact) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	r.enc.Fact(f)
	if r.enc.Size() >= r.chunk {
		r.seal()
	}
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

// seal moves the chunk being built into the arena, dropping the oldest
// chunks to make room.
func (r *Ring) seal() {
	if ev, fa := r.enc.Len(); ev+fa == 0 {
		return
	}
	b, ev, fa := r.enc.Seal()
	ref := r.pending
	r.pending = chunkRef{}
	off, ok := r.place(len(b))
	if !ok {
		// Larger than the whole arena (a tiny ring, huge records): its
		// events are overwritten at once, and the older ones before
		// them (the window has no gap).
		for r.head < len(r.refs) {
			r.drop()
		}
		r.foldFacts(b)
		r.kept -= uint64(ev)
		return
	}
	copy(r.arena[off:], b)
	ref.seq, ref.off, ref.n, ref.events, ref.facts = r.seq, off, len(b), ev, fa
	r.refs = append(r.refs, ref)
	r.seq++
	r.tail = off + len(b)
	r.bytes += len(b)
}

// place returns where n bytes go in the arena, dropping the oldest chunks
// until they fit contiguously after the newest one (or, wrapping, at the
// arena's start); false when n is larger than the arena.
func (r *Ring) place(n int) (int, bool) {
	if n > len(r.arena) {
		return 0, false
	}
	for {
		if r.head == len(r.refs) {
			return 0, true
		}
		h := r.refs[r.head].off
		switch {
		case h < r.tail && len(r.arena)-r.tail >= n: // after the newest
			return r.tail, true
		case h < r.tail && h >= n: // wrapping to the start
			return 0, true
		case h >= r.tail && h-r.tail >= n: // wrapped: between newest and oldest
			return r.tail, true
		}
		r.drop()
	}
}

// drop removes the oldest chunk from the window, folding its facts into
// the live table.
func (r *Ring) drop() {
	ref := r.refs[r.head]
	r.foldFacts(r.arena[ref.off : ref.off+ref.n])
	r.kept -= uint64(ref.events)
	r.bytes -= ref.n
	r.head++
	switch {
	case r.head == len(r.refs):
		r.refs, r.head = r.refs[:0], 0
	case r.head > 1024 && r.head*2 > len(r.refs):
		n := copy(r.refs, r.refs[r.head:])
		r.refs, r.head = r.refs[:n], 0
	}
}

// foldFacts applies the facts of a chunk leaving the window to the live
// table (package factset): an ending fact removes its subject (a
// process's end its descriptors too), any other replaces it.
func (r *Ring) foldFacts(chunk []byte) {
	// The chunk was sealed by this ring: it decodes.
	_ = r.fold.Decode(chunk, factFolder{r.live}, true)
}

// factFolder applies the facts it receives to a Set.
type factFolder struct{ s *factset.Set }

func (factFolder) Begin(*event.Header) error  { return nil }
func (factFolder) Event(*event.Event) error   { return nil }
func (f factFolder) Fact(x *event.Fact) error { f.s.Apply(x); return nil }
func (factFolder) End(*event.Trailer) error   { return nil }

// liveAt copies the live facts, as a rundown at time t.
func (r *Ring) liveAt(t int64) []event.Fact {
	var out []event.Fact
	r.live.Snapshot(t, func(f *event.Fact) error { out = append(out, *f); return nil })
	return out
}

// Stats are a ring's counts.
type Stats struct {
	// Seen is the number of events received; Kept the number in the
	// window (or saved); Overwritten those dropped before; Unsaved those
	// a save could not write (see UnsavedCounter). Seen = Kept +
	// Overwritten + Unsaved.
	Seen, Kept, Overwritten, Unsaved uint64
	// Bytes is the window's encoded size; Limit the budget; Chunk the
	// size at which chunks are sealed (the granularity of the window).
	Bytes, Limit, Chunk int
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
	return Stats{Seen: r.seen, Kept: r.kept, Overwritten: r.seen - r.kept,
		Bytes: r.bytes + r.enc.Size(), Limit: r.limit, Chunk: r.chunk, LiveFacts: r.live.Len()}
}

// ErrNotBegun is returned by Save before the stream began.
var ErrNotBegun = errors.New("ring: nothing recorded yet (the trace has not started)")

// chunkWriter is a sink that takes sealed chunks as they are (the .iot
// writer): a save then writes the window without decoding it.
type chunkWriter interface {
	WriteChunk(chunk []byte, events, facts int) error
}

// Save writes the kept trace to sink: the header, the facts still live
// from before the window, the window's facts and events in arrival order,
// and a trailer. The trailer carries the stream's own counters once it
// ended (until then the backend's counts are not known) plus the
// overwritten events as a loss and the kept events as information. The
// ring is left as it was, and keeps taking events meanwhile: the window
// is copied out a chunk at a time. A sink that takes chunks (the .iot
// writer) gets them as they are; any other gets them decoded.
func (r *Ring) Save(sink event.Sink) (Stats, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Stats{}, errClosed
	}
	r.seal()
	st := r.stats()
	if !r.began {
		r.mu.Unlock()
		return st, ErrNotBegun
	}
	hdr := r.hdr
	refs := slices.Clone(r.refs[r.head:])
	// The facts that held before the window, as a rundown at its start.
	start := int64(0)
	for _, ref := range refs {
		if ref.events > 0 {
			start = ref.first
			break
		}
	}
	live := r.liveAt(start)
	var trailer *event.Trailer
	if r.trailer != nil {
		tc := *r.trailer
		tc.Stats.Counters = slices.Clone(r.trailer.Stats.Counters)
		trailer = &tc
	}
	r.mu.Unlock()

	if err := sink.Begin(&hdr); err != nil {
		return st, err
	}
	for i := range live {
		if err := sink.Fact(&live[i]); err != nil {
			return st, err
		}
	}
	saved, last, err := r.saveChunks(refs, sink)
	if err != nil {
		return st, err
	}
	st.Unsaved = st.Kept - saved
	st.Kept = saved
	t := event.Trailer{End: last}
	if trailer != nil {
		t.End = max(t.End, trailer.End)
		t.Stats.Counters = append(t.Stats.Counters, trailer.Stats.Counters...)
	}
	t.Stats.Set(event.CountLost, OverwrittenCounter, st.Overwritten)
	t.Stats.Set(event.CountInfo, KeptCounter, st.Kept)
	if st.Unsaved > 0 {
		t.Stats.Set(event.CountLost, UnsavedCounter, st.Unsaved)
	}
	return st, sink.End(&t)
}

// saveChunks writes the chunks refs to sink, oldest first, each copied out
// of the arena under the lock; it stops at the first one the recording
// has dropped meanwhile (the later ones would lack its facts). It returns
// the events written and the latest end among them.
func (r *Ring) saveChunks(refs []chunkRef, sink event.Sink) (events uint64, last int64, err error) {
	cw, raw := sink.(chunkWriter)
	var dec tracefile.ChunkDecoder
	var buf []byte
	for _, ref := range refs {
		r.mu.Lock()
		gone := r.closed || r.head == len(r.refs) || r.refs[r.head].seq > ref.seq
		if !gone {
			buf = append(buf[:0], r.arena[ref.off:ref.off+ref.n]...)
		}
		r.mu.Unlock()
		if gone {
			break
		}
		if raw {
			err = cw.WriteChunk(buf, ref.events, ref.facts)
		} else {
			err = dec.Decode(buf, sink, false)
		}
		if err != nil {
			return events, last, err
		}
		events += uint64(ref.events)
		last = max(last, ref.lastEnd)
	}
	return events, last, nil
}
