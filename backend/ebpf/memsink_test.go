package ebpf

import (
	"sync"

	"github.com/iotrace/iotrace/event"
)

// memSink keeps a copy of everything it receives; onFact, when set, sees
// each fact as it arrives.
type memSink struct {
	mu      sync.Mutex
	header  event.Header
	events  []event.Event
	facts   []event.Fact
	trailer *event.Trailer
	onFact  func(f *event.Fact)
}

func (m *memSink) Begin(h *event.Header) error { m.header = *h; return nil }

func (m *memSink) Event(e *event.Event) error {
	m.mu.Lock()
	m.events = append(m.events, *e)
	m.mu.Unlock()
	return nil
}

func (m *memSink) Fact(f *event.Fact) error {
	m.mu.Lock()
	m.facts = append(m.facts, *f)
	m.mu.Unlock()
	if m.onFact != nil {
		m.onFact(f)
	}
	return nil
}

func (m *memSink) End(t *event.Trailer) error { m.trailer = t; return nil }
