package live

import (
	"sync"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// liveSink sits between the pipeline and the user's sink: it begins the
// trace once (the pipeline or a marker may begin it), sends the facts
// captured before the session (volumes, running processes) right after
// Begin, writes markers, and keeps only the traced processes' events when
// a command or pids are traced, never iotrace's own.
type liveSink struct {
	sink     event.Sink
	hdr      *event.Header
	facts    []event.Fact
	begun    bool
	filter   *pidFilter
	markers  uint64
	filtered uint64
	self     uint64 // events of iotrace's own process
}

func newLiveSink(s event.Sink, hdr *event.Header, facts []event.Fact, f *pidFilter) *liveSink {
	return &liveSink{sink: s, hdr: hdr, facts: facts, filter: f}
}

func (l *liveSink) Begin(h *event.Header) error {
	if l.begun {
		return nil
	}
	l.begun = true
	if err := l.sink.Begin(h); err != nil {
		return err
	}
	for i := range l.facts {
		if err := l.Fact(&l.facts[i]); err != nil {
			return err
		}
	}
	l.facts = nil
	return nil
}

func (l *liveSink) Event(e *event.Event) error {
	if e.Pid == l.filter.self && e.Pid != 0 {
		l.self++
		return nil
	}
	if !l.filter.keep(e.Pid) {
		l.filtered++
		return nil
	}
	return l.sink.Event(e)
}

func (l *liveSink) Fact(f *event.Fact) error {
	if f.Kind == event.FactProcess && !f.End {
		l.filter.fork(f.Pid, f.PPid, f.Name)
	}
	return l.sink.Fact(f)
}

func (l *liveSink) End(t *event.Trailer) error { return l.sink.End(t) }

// marker writes a marker event (from `iotrace mark`) in stream order, with
// the ID id from the pipeline's sequence (compact, and unique among the
// pipeline's events).
func (l *liveSink) marker(r *record.Record, id uint64) error {
	if err := l.Begin(l.hdr); err != nil {
		return err
	}
	l.markers++
	e := event.Event{
		ID:     id,
		Source: event.SourceETWLive,
		Layer:  event.LayerMarker,
		Op:     event.OpMarker,
		Native: "iotrace/mark",
		Time:   l.hdr.Clock.ToNanos(r.Timestamp),
		CPU:    uint32(r.CPU),
		Pid:    r.ProcessID,
		Tid:    r.ThreadID,
		FD:     -1,
		Offset: -1,
		Bytes:  -1,
		Note:   ownprovider.DecodeMarker(r.UserData),
	}
	return l.sink.Event(&e) // markers are never filtered
}

func (l *liveSink) stats(s *event.Stats) {
	if l.markers > 0 {
		s.Add(event.CountInfo, StatMarkers, l.markers)
	}
	if l.filtered > 0 {
		s.Add(event.CountInfo, StatFilteredByProcess, l.filtered)
	}
	if l.self > 0 {
		s.Add(event.CountInfo, StatSelf, l.self)
	}
}

// pidFilter keeps the events of the traced processes: opts.Pids, the
// traced command, and (for a command, or with FollowChildren) their
// descendants as Process start facts reveal them; opts.Comms by name. No
// filter keeps everything but the events of iotrace itself (self): a
// system-wide trace would hold its own writes of the trace (and, printed
// to a console, trace its own printing of them, and so on).
type pidFilter struct {
	mu     sync.Mutex
	self   uint32
	active bool
	follow bool
	pids   map[uint32]bool
	comms  map[string]bool
}

func newPidFilter(opts *backend.Options, self uint32) *pidFilter {
	f := &pidFilter{self: self, pids: map[uint32]bool{}, comms: map[string]bool{}, follow: opts.FollowChildren || len(opts.Command) > 0}
	for _, p := range opts.Pids {
		f.pids[p] = true
		f.active = true
	}
	for _, c := range opts.Comms {
		f.comms[c] = true
		f.active = true
	}
	if len(opts.Command) > 0 {
		f.active = true
	}
	return f
}

func (f *pidFilter) addRoot(pid uint32) {
	f.mu.Lock()
	f.pids[pid] = true
	f.mu.Unlock()
}

func (f *pidFilter) fork(pid, ppid uint32, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.follow && f.pids[ppid] || f.comms[name] {
		f.pids[pid] = true
	}
}

func (f *pidFilter) keep(pid uint32) bool {
	if !f.active {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pids[pid]
}
