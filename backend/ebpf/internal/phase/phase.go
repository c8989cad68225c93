// Package phase times the phases of the eBPF backend's start-up and stop
// (the system-call side's and the block tracer's), each shown as a
// counter of the trace named prefix+phase, in µs, so that a slow phase
// shows.
package phase

import (
	"sync"
	"time"

	"github.com/iotrace/iotrace/event"
)

// Timer records phases: consecutive ones (Begin, Done) and ones that ran
// beside the others (Since, Add). It is safe for concurrent use.
type Timer struct {
	prefix string
	mu     sync.Mutex
	last   time.Time
	names  []string
	took   []time.Duration
}

// New returns a timer whose first consecutive phase begins now.
func New(prefix string) *Timer { return &Timer{prefix: prefix, last: time.Now()} }

// Begin starts the next consecutive phase now.
func (t *Timer) Begin() {
	t.mu.Lock()
	t.last = time.Now()
	t.mu.Unlock()
}

// Done ends the consecutive phase name now; the next begins.
func (t *Timer) Done(name string) {
	now := time.Now()
	t.mu.Lock()
	t.record(name, now.Sub(t.last))
	t.last = now
	t.mu.Unlock()
}

// Since records phase name as having run from begin until now.
func (t *Timer) Since(name string, begin time.Time) { t.Add(name, time.Since(begin)) }

// Add records phase name as having taken d.
func (t *Timer) Add(name string, d time.Duration) {
	t.mu.Lock()
	t.record(name, d)
	t.mu.Unlock()
}

func (t *Timer) record(name string, d time.Duration) {
	t.names = append(t.names, name)
	t.took = append(t.took, d)
}

// AddTo sets one CountInfo counter per phase in s.
func (t *Timer) AddTo(s *event.Stats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, name := range t.names {
		s.Set(event.CountInfo, t.prefix+name, uint64(t.took[i].Microseconds()))
	}
}
