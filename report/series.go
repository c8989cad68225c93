package report

import (
	"github.com/iotrace/iotrace/event"
)

// Series reports on several traces read one after another. The traces of
// one timeline — the same host and the same clock of the same boot, as
// the files of a rotated recording (record --rotate) or several
// recordings of one boot — go into one report, their times moved onto the first one's: a process
// (pid and start time) and a file are one row each, with exact totals,
// not a row per file with "≥" bounds. Traces of other hosts, other boots
// (the wall-clock time of the clock's zero differs) or clocks that cannot
// be lined up get reports of their own, merged as [Merge] does. Two
// recordings of one period on one host (say, with different filters) are
// one timeline: an event both hold is counted twice, as in a merge.
type Series struct {
	opts   Options
	groups []*seriesGroup
}

type seriesGroup struct {
	host  string
	clock event.Clock
	boot  int64 // wall time of the clock's zero (ns): the boot
	rep   *Report
}

// bootSlack is how far the wall-clock anchors of two recordings of one
// boot may disagree (the wall clock is read apart from the trace clock,
// and NTP slews it).
const bootSlack = 2_000_000_000

// bootWall returns the wall time of clock zero of a trace with header h.
func bootWall(h *event.Header) int64 {
	zero := event.Clock{Kind: h.Clock.Kind, Freq: h.Clock.Freq}
	return h.StartWall - zero.ToNanos(h.Clock.Origin)
}

// NewSeries returns an empty series; opts configure each report.
func NewSeries(opts Options) *Series { return &Series{opts: opts} }

// Trace returns the sink for the next trace. wrap, when not nil, is put in
// front of the report (a filter).
func (s *Series) Trace(wrap func(event.Sink) event.Sink) event.Sink {
	return &seriesTrace{s: s, wrap: wrap}
}

// Reports returns the number of reports the traces went into (one per
// timeline).
func (s *Series) Reports() int { return len(s.groups) }

// Result returns the report of the whole series: one timeline's, or the
// timelines' merged.
func (s *Series) Result(top int) (*Result, error) {
	if len(s.groups) == 1 {
		return s.groups[0].rep.Result(), nil
	}
	parts := make([]*Result, len(s.groups))
	for i, g := range s.groups {
		parts[i] = g.rep.Result()
	}
	return Merge(parts, top)
}

// timeline returns the group of a trace with header h and how far its
// time 0 lies after the group's (ns).
func (s *Series) timeline(h *event.Header) (*seriesGroup, int64) {
	boot := bootWall(h)
	if h.Hostname != "" && lineable(h.Clock) {
		for _, g := range s.groups {
			if g.host != h.Hostname || g.clock.Kind != h.Clock.Kind || g.clock.Freq != h.Clock.Freq ||
				absDiff(g.boot, boot) > bootSlack {
				continue
			}
			return g, g.clock.ToNanos(h.Clock.Origin)
		}
	}
	g := &seriesGroup{host: h.Hostname, clock: h.Clock, boot: boot, rep: New(s.opts)}
	s.groups = append(s.groups, g)
	return g, 0
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// lineable reports whether traces of clock c can be put on one time line:
// a machine-wide clock with a known frequency. (Wall-clock FILETIME
// origins would line up too, but a series of one host is recorded with one
// clock kind.)
func lineable(c event.Clock) bool {
	switch c.Kind {
	case event.ClockMonotonic, event.ClockBoottime, event.ClockQPC:
		return c.Freq > 0
	}
	return false
}

// seriesTrace is the sink of one trace of a series: Begin chooses its
// timeline.
type seriesTrace struct {
	s    *Series
	wrap func(event.Sink) event.Sink
	next event.Sink
}

func (t *seriesTrace) Begin(h *event.Header) error {
	g, delta := t.s.timeline(h)
	t.next = &shiftSink{rep: g.rep, delta: delta}
	if t.wrap != nil {
		t.next = t.wrap(t.next)
	}
	return t.next.Begin(h)
}

func (t *seriesTrace) Event(e *event.Event) error {
	if t.next == nil {
		return errNoBegin
	}
	return t.next.Event(e)
}

func (t *seriesTrace) Fact(f *event.Fact) error {
	if t.next == nil {
		return errNoBegin
	}
	return t.next.Fact(f)
}

func (t *seriesTrace) End(tr *event.Trailer) error {
	if t.next == nil {
		return errNoBegin
	}
	return t.next.End(tr)
}

type seriesError string

func (e seriesError) Error() string { return string(e) }

const errNoBegin = seriesError("report: a trace sent events before its header")

// shiftSink moves a trace's times by delta into a timeline's report; the
// report keeps its first trace's header.
type shiftSink struct {
	rep   *Report
	delta int64
}

func (s *shiftSink) Begin(h *event.Header) error {
	if s.rep.Began() {
		return nil
	}
	return s.rep.Begin(h)
}

func (s *shiftSink) Event(e *event.Event) error {
	if s.delta != 0 {
		e.Time += s.delta
		if e.ProcStart != 0 {
			e.ProcStart += s.delta
		}
	}
	return s.rep.Event(e)
}

func (s *shiftSink) Fact(f *event.Fact) error {
	if s.delta != 0 {
		f.Time += s.delta
		if f.ProcStart != 0 {
			f.ProcStart += s.delta
		}
	}
	return s.rep.Fact(f)
}

func (s *shiftSink) End(t *event.Trailer) error {
	t.End += s.delta
	return s.rep.End(t)
}
