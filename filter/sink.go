package filter

import (
	"github.com/iotrace/iotrace/event"
)

// Sink forwards to its next sink the header, every fact, the trailer and
// the events that match its filter. It learns the OS from the header and
// the process tree from process facts (for FollowChildren), and adds to
// the trailer an informational count of the events it left out.
type Sink struct {
	f       *Filter
	next    event.Sink
	dropped uint64
}

// FilteredOut is the name of the informational counter the sink adds to
// the trailer.
const FilteredOut = "events left out by the filter"

// Sink returns a sink that forwards matching events to next. When the
// filter selects everything it returns next itself.
func (f *Filter) Sink(next event.Sink) event.Sink {
	if f.opts.IsZero() {
		return next
	}
	return &Sink{f: f, next: next}
}

// Begin implements event.Sink.
// The header's layers traced lose those the filter leaves out: their
// events are gone, as if not traced.
func (s *Sink) Begin(h *event.Header) error {
	s.f.SetOS(h.OS)
	if n := narrow(h.Layers, s.f.keptLayers()); n != h.Layers {
		hh := *h
		hh.Layers = n
		return s.next.Begin(&hh)
	}
	return s.next.Begin(h)
}

// Event implements event.Sink.
func (s *Sink) Event(e *event.Event) error {
	if !s.f.Match(e) {
		s.dropped++
		return nil
	}
	return s.next.Event(e)
}

// Fact implements event.Sink.
func (s *Sink) Fact(ft *event.Fact) error {
	s.f.Observe(ft)
	return s.next.Fact(ft)
}

// End implements event.Sink.
func (s *Sink) End(t *event.Trailer) error {
	if s.dropped > 0 {
		t.Stats.Add(event.CountInfo, FilteredOut, s.dropped)
	}
	t.Layers = narrow(t.Layers, s.f.keptLayers())
	return s.next.End(t)
}

// narrow keeps of the layers said traced those kept; none kept is said as
// event.LayersNone, not 0 (which says nothing).
func narrow(said, kept event.Layers) event.Layers {
	if said == 0 {
		return 0
	}
	if n := said & kept; n != 0 {
		return n
	}
	return event.LayersNone
}
