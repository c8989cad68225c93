package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/iotrace/iotrace/event"
)

// maxReasons bounds the counter names exported from a trace's Stats; the
// rest are summed under Other.
const maxReasons = 256

// Health is the tracer's own state as metrics: the events and facts the
// backend delivered, the counters a trace carries in its trailer (what was
// lost, unpaired, unresolved and dropped, by reason, and the
// informational ones) as the backend reports them while it runs
// (backend.Options.Progress) and at the end, how long tracing took to
// start, and whether it is tracing.
//
// Its Sink goes first in the stream (before any filter). Every method is
// safe for concurrent use.
type Health struct {
	start   time.Time
	events  atomic.Uint64
	facts   atomic.Uint64
	tracing atomic.Bool
	ended   atomic.Bool

	mu      sync.Mutex
	stats   event.Stats
	startup time.Duration // 0 until tracing starts
}

// NewHealth returns a Health whose start-up time counts from start (the
// process's start, or the command's).
func NewHealth(start time.Time) *Health {
	return &Health{start: start}
}

// Progress takes the backend's counters so far (backend.Options.Progress)
// and marks the trace as running.
func (h *Health) Progress(s event.Stats) {
	h.mu.Lock()
	h.stats = s
	h.mu.Unlock()
	h.started()
}

// started marks the trace as running, once.
func (h *Health) started() {
	if h.tracing.Load() || h.ended.Load() {
		return
	}
	h.mu.Lock()
	if h.startup == 0 {
		h.startup = max(time.Since(h.start), time.Nanosecond)
	}
	h.mu.Unlock()
	h.tracing.Store(true)
}

// Tracing reports whether the trace has started and not ended.
func (h *Health) Tracing() bool { return h.tracing.Load() && !h.ended.Load() }

// Startup returns how long tracing took to start, 0 before it has.
func (h *Health) Startup() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.startup
}

// Sink returns a sink that counts what passes to next and takes the
// trailer's counters at the end.
func (h *Health) Sink(next event.Sink) event.Sink { return &healthSink{h: h, next: next} }

type healthSink struct {
	h    *Health
	next event.Sink
}

func (s *healthSink) Begin(hd *event.Header) error { return s.next.Begin(hd) }

func (s *healthSink) Event(e *event.Event) error {
	if s.h.events.Add(1) == 1 {
		s.h.started()
	}
	return s.next.Event(e)
}

func (s *healthSink) Fact(f *event.Fact) error {
	s.h.facts.Add(1)
	return s.next.Fact(f)
}

func (s *healthSink) End(t *event.Trailer) error {
	err := s.next.End(t) // the sinks after it add their counters (the filter's)
	s.h.mu.Lock()
	s.h.stats = event.Stats{Counters: append([]event.Counter(nil), t.Stats.Counters...)}
	s.h.mu.Unlock()
	s.h.ended.Store(true)
	return err
}

var (
	eventsDesc = prometheus.NewDesc("iotrace_events_total",
		"Events the tracing backend delivered (before the filter flags).", nil, nil)
	factsDesc = prometheus.NewDesc("iotrace_facts_total",
		"Facts (names of files, processes, devices) the tracing backend delivered.", nil, nil)
	tracingDesc = prometheus.NewDesc("iotrace_tracing",
		"1 while the trace runs, 0 before it has started and once it has ended.", nil, nil)
	startupDesc = prometheus.NewDesc("iotrace_startup_seconds",
		"Time from iotrace's start to its first traced event or backend report (probes loaded and attached, open files named).", nil, nil)
	problemDesc = map[event.CounterKind]*prometheus.Desc{
		event.CountLost: prometheus.NewDesc("iotrace_trace_lost_total",
			"Events lost before iotrace saw them, by reason (the trace's trailer counters).", []string{"reason"}, nil),
		event.CountUnpaired: prometheus.NewDesc("iotrace_trace_unpaired_total",
			"Starts without their end and ends without their start, by reason (the trace's trailer counters).", []string{"reason"}, nil),
		event.CountUnresolved: prometheus.NewDesc("iotrace_trace_unresolved_total",
			"Events whose names could not be resolved, by reason (the trace's trailer counters).", []string{"reason"}, nil),
		event.CountDropped: prometheus.NewDesc("iotrace_trace_dropped_total",
			"Events iotrace dropped on purpose, by reason (the trace's trailer counters).", []string{"reason"}, nil),
	}
	infoDesc = prometheus.NewDesc("iotrace_trace_info",
		"The trace's informational trailer counters by name (events received, processes in the rundown, ...).", []string{"name"}, nil)
)

// Describe implements prometheus.Collector.
func (h *Health) Describe(ch chan<- *prometheus.Desc) {
	ch <- eventsDesc
	ch <- factsDesc
	ch <- tracingDesc
	ch <- startupDesc
	for _, d := range problemDesc {
		ch <- d
	}
	ch <- infoDesc
}

// Collect implements prometheus.Collector.
func (h *Health) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(h.events.Load()))
	ch <- prometheus.MustNewConstMetric(factsDesc, prometheus.CounterValue, float64(h.facts.Load()))
	tracing := 0.0
	if h.Tracing() {
		tracing = 1
	}
	ch <- prometheus.MustNewConstMetric(tracingDesc, prometheus.GaugeValue, tracing)
	if d := h.Startup(); d > 0 {
		ch <- prometheus.MustNewConstMetric(startupDesc, prometheus.GaugeValue, d.Seconds())
	}
	h.mu.Lock()
	counters := boundReasons(h.stats.Counters)
	h.mu.Unlock()
	for _, c := range counters {
		if d := problemDesc[c.Kind]; d != nil {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(c.Value), c.Name)
		} else {
			ch <- prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, float64(c.Value), c.Name)
		}
	}
}

// boundReasons returns the counters with label-safe names, at most
// maxReasons of each kind; the rest of a kind are summed under Other.
// Counters whose names meet once made label-safe are summed.
func boundReasons(cs []event.Counter) []event.Counter {
	type key struct {
		kind event.CounterKind
		name string
	}
	idx := make(map[key]int, len(cs))
	perKind := map[event.CounterKind]int{}
	var out []event.Counter
	for _, c := range cs {
		name := labelValue(c.Name)
		if c.Kind > event.CountDropped {
			c.Kind = event.CountInfo
		}
		k := key{c.Kind, name}
		if _, ok := idx[k]; !ok {
			if perKind[c.Kind] >= maxReasons {
				k.name = Other
			} else {
				perKind[c.Kind]++
			}
		}
		if i, ok := idx[k]; ok {
			out[i].Value += c.Value
			continue
		}
		idx[k] = len(out)
		out = append(out, event.Counter{Kind: k.kind, Name: k.name, Value: c.Value})
	}
	return out
}
