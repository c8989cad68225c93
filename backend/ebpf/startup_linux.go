package ebpf

import (
	"sync"
	"time"

	"github.com/iotrace/iotrace/event"
)

// startupPrefix and stopPrefix name the counters of the start-up and
// stop phases.
const (
	startupPrefix = "startup µs: "
	stopPrefix    = "stop µs: "
)

// phaseTimer times the phases of start-up or stop (some run side by
// side), each shown as a counter of the trace named prefix+phase, so that
// a slow phase shows.
type phaseTimer struct {
	prefix string
	mu     sync.Mutex
	took   []phaseTime
}

type phaseTime struct {
	name string
	d    time.Duration
}

// since records phase name as having run from begin until now.
func (s *phaseTimer) since(name string, begin time.Time) {
	s.add(name, time.Since(begin))
}

// add records phase name as having taken d.
func (s *phaseTimer) add(name string, d time.Duration) {
	s.mu.Lock()
	s.took = append(s.took, phaseTime{name, d})
	s.mu.Unlock()
}

// addTo sets one counter per phase in st.
func (s *phaseTimer) addTo(st *event.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.took {
		st.Set(event.CountInfo, s.prefix+p.name, uint64(p.d.Microseconds()))
	}
}

// asyncWanted reports whether ops (none: all) take the asynchronous
// requests' programs (io_uring, AIO, iomap's direct I/O): reads and
// writes are made by them too.
func asyncWanted(ops []event.Op) bool {
	if len(ops) == 0 {
		return true
	}
	for _, o := range ops {
		if o == event.OpAsync || o == event.OpRead || o == event.OpWrite {
			return true
		}
	}
	return false
}
