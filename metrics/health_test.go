package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
)

// discard is a sink that keeps nothing.
type discard struct{}

func (discard) Begin(*event.Header) error { return nil }
func (discard) Event(*event.Event) error  { return nil }
func (discard) Fact(*event.Fact) error    { return nil }
func (discard) End(t *event.Trailer) error {
	t.Stats.Add(event.CountInfo, "added downstream", 1)
	return nil
}

// TestHealth: the backend's counters while it runs become the trailer
// metrics by kind and reason; events and facts are counted; tracing is
// reported from the first event or report until the end, whose trailer
// replaces the running counters (with what sinks after it added).
func TestHealth(t *testing.T) {
	h := NewHealth(time.Now().Add(-time.Second))
	if h.Tracing() || h.Startup() != 0 {
		t.Fatal("tracing before anything happened")
	}
	var s event.Stats
	s.Add(event.CountLost, "ring buffer full (cpu 0)", 7)
	s.Add(event.CountUnpaired, "exits without enter", 2)
	s.Add(event.CountInfo, "events", 100)
	h.Progress(s)
	if !h.Tracing() || h.Startup() < time.Second {
		t.Errorf("after a report: tracing %v, startup %v", h.Tracing(), h.Startup())
	}
	sink := h.Sink(discard{})
	feed(t, sink, &event.Header{}, []event.Fact{{Kind: event.FactProcess}}, fileEvent("x", event.OpRead, 1, 1))
	m := scrape(t, h)
	for k, v := range map[string]float64{
		`iotrace_trace_lost_total{reason=ring buffer full (cpu 0)}`: 7,
		`iotrace_trace_unpaired_total{reason=exits without enter}`:  2,
		`iotrace_trace_info{name=events}`:                           100,
		`iotrace_events_total{}`:                                    1,
		`iotrace_facts_total{}`:                                     1,
		`iotrace_tracing{}`:                                         1,
	} {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	var end event.Trailer
	end.Stats.Add(event.CountLost, "ring buffer full (cpu 0)", 9)
	if err := sink.End(&end); err != nil {
		t.Fatal(err)
	}
	m = scrape(t, h)
	if m[`iotrace_trace_lost_total{reason=ring buffer full (cpu 0)}`] != 9 || m[`iotrace_trace_info{name=added downstream}`] != 1 || m[`iotrace_tracing{}`] != 0 {
		t.Errorf("after the end: %v", m)
	}
}

// TestHealthBoundsReasons: at most maxReasons names of a kind, the rest
// summed under Other.
func TestHealthBoundsReasons(t *testing.T) {
	var cs []event.Counter
	for i := 0; i < maxReasons+10; i++ {
		cs = append(cs, event.Counter{Kind: event.CountLost, Name: fmt.Sprint("r", i), Value: 1})
	}
	out := boundReasons(cs)
	if len(out) != maxReasons+1 || out[len(out)-1].Name != Other || out[len(out)-1].Value != 10 {
		t.Errorf("%d counters, last %+v", len(out), out[len(out)-1])
	}
}
