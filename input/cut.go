package input

import "github.com/iotrace/iotrace/event"

// cutSink cuts the events and facts of a reader that does not cut them at
// decode (package etw's, whose stacks join several records) to the limits
// of the trace's OS (event.Cutter: paths, strings, event.MaxStackFrames),
// counting what it cut in the trailer. What it passes on is a copy when it
// cuts: the reader's own is left as it is.
type cutSink struct {
	event.Sink
	cut  *event.Cutter
	ev   event.Event
	fact event.Fact
}

func newCutSink(sink event.Sink) *cutSink { return &cutSink{Sink: sink, cut: event.NewCutter("")} }

func (c *cutSink) Begin(h *event.Header) error {
	c.cut = event.NewCutter(h.OS)
	return c.Sink.Begin(h)
}

func (c *cutSink) Event(e *event.Event) error {
	if !c.cut.EventOver(e) {
		return c.Sink.Event(e)
	}
	c.ev = *e
	c.cut.Event(&c.ev)
	return c.Sink.Event(&c.ev)
}

func (c *cutSink) Fact(f *event.Fact) error {
	if !c.cut.FactOver(f) {
		return c.Sink.Fact(f)
	}
	c.fact = *f
	c.cut.Fact(&c.fact)
	return c.Sink.Fact(&c.fact)
}

func (c *cutSink) End(t *event.Trailer) error {
	c.cut.AddTo(&t.Stats)
	return c.Sink.End(t)
}
