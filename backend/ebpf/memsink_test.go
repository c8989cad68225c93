package ebpf

import (
	"sync"
	"testing"

	"github.com/iotrace/iotrace/backend/ebpf/blockio"
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

// logUnseen logs the block completions the kernel did not deliver to the
// tracer (reported as events without completion, see docs/block.md), so a
// test passing with them says so.
func (m *memSink) logUnseen(t *testing.T) {
	t.Helper()
	if m.trailer == nil {
		return
	}
	if n := m.trailer.Stats.Get(event.CountLost, blockio.StatUnseen); n != 0 {
		t.Logf("%d block completions not seen by the tracer (events without completion)", n)
	}
}
