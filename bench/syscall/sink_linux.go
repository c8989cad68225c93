package main

import (
	"sync/atomic"

	"github.com/iotrace/iotrace/event"
)

// trailerSink discards a stream but counts its events and hands over the
// trailer.
type trailerSink struct {
	events atomic.Uint64
	end    func(t *event.Trailer)
}

func (s *trailerSink) Begin(*event.Header) error { return nil }
func (s *trailerSink) Event(*event.Event) error  { s.events.Add(1); return nil }
func (s *trailerSink) Fact(*event.Fact) error    { return nil }
func (s *trailerSink) End(t *event.Trailer) error {
	s.end(t)
	return nil
}
