package ebpf

import (
	"sync"
	"time"

	"github.com/iotrace/iotrace/event"
)

// startupPrefix names the counters of the start-up phases.
const startupPrefix = "startup µs: "

// startupPhases times the phases of start-up (some run side by side),
// each shown as a counter of the trace, so that a slow phase shows.
type startupPhases struct {
	mu   sync.Mutex
	took []phaseTime
}

type phaseTime struct {
	name string
	d    time.Duration
}

// since records phase name as having run from begin until now.
func (s *startupPhases) since(name string, begin time.Time) {
	d := time.Since(begin)
	s.mu.Lock()
	s.took = append(s.took, phaseTime{name, d})
	s.mu.Unlock()
}

// addTo sets one counter per phase in st.
func (s *startupPhases) addTo(st *event.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.took {
		st.Set(event.CountInfo, startupPrefix+p.name, uint64(p.d.Microseconds()))
	}
}
