package synth

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/iotrace/iotrace/event"
)

// ItemKind says whether an entry of [Recorded.Order] is an event or a fact.
type ItemKind uint8

// Item kinds.
const (
	ItemEvent ItemKind = iota + 1
	ItemFact
)

// Item is one entry of the recorded stream: Events[Index] or
// Facts[Index].
type Item struct {
	Kind  ItemKind
	Index int
}

// Recorded is a whole trace held in memory.
type Recorded struct {
	Header  event.Header
	Events  []event.Event
	Facts   []event.Fact
	Trailer event.Trailer
	// Order is the interleaving of events and facts as they were
	// delivered (facts and events keep their relative order).
	Order []Item
	// Began and Ended report whether Begin and End were received.
	Began, Ended bool
}

// Replay delivers r to sink: Begin (when r began), every event and fact in
// recorded order, then End (when r ended). The pointers passed point to
// copies, so a sink may modify them.
func (r *Recorded) Replay(sink event.Sink) error {
	if r.Began {
		h := r.Header
		if err := sink.Begin(&h); err != nil {
			return err
		}
	}
	// One copy each, reused: a sink may change what it is given, and
	// must not keep the pointer.
	var e event.Event
	var f event.Fact
	for _, it := range r.order() {
		switch it.Kind {
		case ItemEvent:
			e = r.Events[it.Index]
			if err := sink.Event(&e); err != nil {
				return err
			}
		case ItemFact:
			f = r.Facts[it.Index]
			if err := sink.Fact(&f); err != nil {
				return err
			}
		}
	}
	if r.Ended {
		t := CopyTrailer(&r.Trailer)
		return sink.End(&t)
	}
	return nil
}

// order returns Order, or (for a Recorded built by hand without Order)
// the facts followed by the events.
func (r *Recorded) order() []Item {
	if len(r.Order) == len(r.Events)+len(r.Facts) {
		return r.Order
	}
	out := make([]Item, 0, len(r.Events)+len(r.Facts))
	for i := range r.Facts {
		out = append(out, Item{ItemFact, i})
	}
	for i := range r.Events {
		out = append(out, Item{ItemEvent, i})
	}
	return out
}

// CopyTrailer returns a deep copy of t (its counters are copied).
func CopyTrailer(t *event.Trailer) event.Trailer {
	c := *t
	if t.Stats.Counters != nil {
		c.Stats.Counters = append([]event.Counter(nil), t.Stats.Counters...)
	}
	return c
}

// Recorder is an event.Sink that keeps a deep copy of everything it
// receives. It returns an error when the stream breaks the Sink protocol
// (Begin twice, an event before Begin or after End, End twice).
type Recorder struct {
	Recorded
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Trace returns the recorded trace (the recorder's own storage).
func (r *Recorder) Trace() *Recorded { return &r.Recorded }

// Begin implements event.Sink.
func (r *Recorder) Begin(h *event.Header) error {
	if r.Began {
		return errors.New("synth.Recorder: Begin called twice")
	}
	r.Began = true
	r.Header = *h
	return nil
}

// Event implements event.Sink.
func (r *Recorder) Event(e *event.Event) error {
	if err := r.check("Event"); err != nil {
		return err
	}
	r.Order = append(r.Order, Item{ItemEvent, len(r.Events)})
	r.Events = append(r.Events, *e)
	return nil
}

// Fact implements event.Sink.
func (r *Recorder) Fact(f *event.Fact) error {
	if err := r.check("Fact"); err != nil {
		return err
	}
	r.Order = append(r.Order, Item{ItemFact, len(r.Facts)})
	r.Facts = append(r.Facts, *f)
	return nil
}

// End implements event.Sink.
func (r *Recorder) End(t *event.Trailer) error {
	if err := r.check("End"); err != nil {
		return err
	}
	r.Ended = true
	r.Trailer = CopyTrailer(t)
	return nil
}

func (r *Recorder) check(call string) error {
	if !r.Began {
		return fmt.Errorf("synth.Recorder: %s before Begin", call)
	}
	if r.Ended {
		return fmt.Errorf("synth.Recorder: %s after End", call)
	}
	return nil
}

// Compare reports how got differs from want: the header, the trailer, the
// number and order of events and facts, and every differing field of
// every event and fact (named, with both values). It returns nil when the
// traces are identical and lists at most 20 differences otherwise. A nil
// Stats.Counters slice equals an empty one.
func Compare(want, got *Recorded) error {
	var d differ
	if want.Began != got.Began || want.Ended != got.Ended {
		d.addf("began/ended: want %v/%v, got %v/%v", want.Began, want.Ended, got.Began, got.Ended)
	}
	d.fields("header", reflect.ValueOf(want.Header), reflect.ValueOf(got.Header))
	if want.Trailer.End != got.Trailer.End {
		d.addf("trailer.End: want %d, got %d", want.Trailer.End, got.Trailer.End)
	}
	if want.Trailer.Layers != got.Trailer.Layers {
		d.addf("trailer.Layers: want %v, got %v", want.Trailer.Layers, got.Trailer.Layers)
	}
	wc, gc := want.Trailer.Stats.Counters, got.Trailer.Stats.Counters
	if len(wc) != len(gc) {
		d.addf("trailer: want %d counters, got %d (want %v, got %v)", len(wc), len(gc), wc, gc)
	} else {
		for i := range wc {
			if wc[i] != gc[i] {
				d.addf("trailer counter %d: want %+v, got %+v", i, wc[i], gc[i])
			}
		}
	}
	if len(want.Events) != len(got.Events) {
		d.addf("want %d events, got %d", len(want.Events), len(got.Events))
	}
	if len(want.Facts) != len(got.Facts) {
		d.addf("want %d facts, got %d", len(want.Facts), len(got.Facts))
	}
	wo, gO := want.order(), got.order()
	for i := 0; i < len(wo) && i < len(gO); i++ {
		if wo[i] != gO[i] && len(d.msgs) < maxDiffs {
			d.addf("stream item %d: want %s, got %s", i, itemString(wo[i]), itemString(gO[i]))
			break
		}
	}
	for i := 0; i < len(want.Events) && i < len(got.Events); i++ {
		if want.Events[i] != got.Events[i] {
			d.fields(fmt.Sprintf("event %d", i), reflect.ValueOf(want.Events[i]), reflect.ValueOf(got.Events[i]))
		}
	}
	for i := 0; i < len(want.Facts) && i < len(got.Facts); i++ {
		if !reflect.DeepEqual(want.Facts[i], got.Facts[i]) {
			d.fields(fmt.Sprintf("fact %d", i), reflect.ValueOf(want.Facts[i]), reflect.ValueOf(got.Facts[i]))
		}
	}
	return d.err()
}

func itemString(it Item) string {
	if it.Kind == ItemFact {
		return fmt.Sprintf("fact %d", it.Index)
	}
	return fmt.Sprintf("event %d", it.Index)
}

type differ struct {
	msgs []string
	more int
}

const maxDiffs = 20

func (d *differ) addf(format string, args ...any) {
	if len(d.msgs) >= maxDiffs {
		d.more++
		return
	}
	d.msgs = append(d.msgs, fmt.Sprintf(format, args...))
}

// fields compares two structs of the same type field by field, recursing
// into nested structs.
func (d *differ) fields(where string, w, g reflect.Value) {
	t := w.Type()
	for i := 0; i < t.NumField(); i++ {
		name := where + "." + t.Field(i).Name
		wf, gf := w.Field(i), g.Field(i)
		if wf.Kind() == reflect.Struct {
			d.fields(name, wf, gf)
			continue
		}
		if !reflect.DeepEqual(wf.Interface(), gf.Interface()) {
			d.addf("%s: want %#v, got %#v", name, wf.Interface(), gf.Interface())
		}
	}
}

func (d *differ) err() error {
	if len(d.msgs) == 0 {
		return nil
	}
	s := strings.Join(d.msgs, "\n")
	if d.more > 0 {
		s += fmt.Sprintf("\n... and %d more differences", d.more)
	}
	return errors.New(s)
}
