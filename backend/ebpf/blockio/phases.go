package blockio

import (
	"time"

	"github.com/iotrace/iotrace/event"
)

// Prefixes of the counters that time the tracer's own phases of start-up
// (Attach) and stop (the end of Run), in µs, under the trace's
// "startup µs: " and "stop µs: " counters, so that a slow phase shows.
const (
	StartupPrefix = "startup µs: block tracer: "
	StopPrefix    = "stop µs: block tracer: "
)

// phases times consecutive phases, each from the end of the last.
type phases struct {
	prefix string
	last   time.Time
	names  []string
	took   []time.Duration
}

func newPhases(prefix string) *phases { return &phases{prefix: prefix, last: time.Now()} }

// begin starts the next phase now.
func (p *phases) begin() { p.last = time.Now() }

// done ends phase name now.
func (p *phases) done(name string) {
	now := time.Now()
	p.names = append(p.names, name)
	p.took = append(p.took, now.Sub(p.last))
	p.last = now
}

// add records phase name as having taken d (a phase run beside the
// others).
func (p *phases) add(name string, d time.Duration) {
	p.names = append(p.names, name)
	p.took = append(p.took, d)
}

// addTo sets one CountInfo counter per phase in s.
func (p *phases) addTo(s *event.Stats) {
	for i, name := range p.names {
		s.Set(event.CountInfo, p.prefix+name, uint64(p.took[i].Microseconds()))
	}
}
