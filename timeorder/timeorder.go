// Package timeorder puts a live trace's events and facts back in time
// order within a bounded window, as an [event.Sink] in front of another.
//
// A live backend delivers records in the order its buffers hand them
// over, not in the order they happened: the eBPF backend emits a system
// call at its exit with the time of its enter, block events come from
// their own ring buffer and goroutine, and per-CPU buffers are read one
// after the other. A text trace then goes backwards by up to hundreds of
// milliseconds. The Sink holds every record until the trace's clock has
// passed its time by the window, then passes records on in time order
// (ties in arrival order). A record that arrives after a later one went
// out is passed on at once and counted ([StatLate]); when more than a
// bounded number are held, the oldest go out early (counted,
// [StatForced]). The counts are added to the trailer's statistics.
//
// The trace's clock is the latest record time seen and, live, so that an
// idle trace still prints, the wall clock since the header's start (held
// records are released by a ticker). Reading a file, it is the latest
// record time only. Written by hand: a heap and a timer
// are all it needs.
package timeorder

import (
	"container/heap"
	"sync"
	"time"

	"github.com/iotrace/iotrace/event"
)

// Counter names added to the trailer.
const (
	StatLate   = "events passed on out of time order: they arrived after the reorder window"
	StatForced = "events passed on before their reorder window ended (too many held)"
)

// Options configure a Sink.
type Options struct {
	// Window is how long a record is held (trace time); 0 means
	// DefaultWindow.
	Window time.Duration
	// Limit bounds the records held; 0 means DefaultLimit.
	Limit int
	// Tick is how often held records are checked against the wall clock;
	// 0 means Window/4. Negative means no wall clock (a trace read from a
	// file): records are released by later records and at End only.
	Tick time.Duration
	// Now returns the wall clock (tests); nil means time.Now.
	Now func() time.Time
}

// Defaults of [Options].
const (
	DefaultWindow = time.Second
	DefaultLimit  = 1 << 19
)

// Sink reorders what it receives before passing it to the next sink. Its
// methods may be called from several goroutines; the next sink is called
// from one at a time.
type Sink struct {
	next event.Sink
	opts Options

	mu       sync.Mutex
	h        recHeap
	spare    []*rec
	seq      uint64
	maxSeen  int64
	seen     bool
	last     int64 // time of the last record passed on
	released bool
	late     uint64
	forced   uint64
	start    time.Time // wall clock at trace time 0 (zero: unknown)
	err      error
	stop     chan struct{}
	done     chan struct{}
}

// New returns a Sink passing records on to next.
func New(next event.Sink, opts Options) *Sink {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultLimit
	}
	if opts.Tick == 0 {
		opts.Tick = opts.Window / 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Sink{next: next, opts: opts}
}

// rec is one held event or fact.
type rec struct {
	time   int64
	seq    uint64
	isFact bool
	ev     event.Event
	fact   event.Fact
}

// Begin passes the header on and starts the ticker.
func (s *Sink) Begin(h *event.Header) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.StartWall != 0 {
		s.start = time.Unix(0, h.StartWall)
	}
	if err := s.next.Begin(h); err != nil {
		s.err = err
		return err
	}
	if s.opts.Tick > 0 && !s.start.IsZero() {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.tick()
	}
	return nil
}

func (s *Sink) tick() {
	defer close(s.done)
	t := time.NewTicker(s.opts.Tick)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			if s.err == nil {
				s.err = s.release(false)
			}
			s.mu.Unlock()
		}
	}
}

// Event holds e (copied) or, when it comes too late, passes it on.
func (s *Sink) Event(e *event.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	r := s.get()
	r.isFact = false
	r.ev = *e
	r.time = e.Time
	s.err = s.hold(r)
	return s.err
}

// Fact holds f (copied) with the events, so that a name bound at a time
// still comes before the events after it.
func (s *Sink) Fact(f *event.Fact) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	r := s.get()
	r.isFact = true
	r.fact = *f
	r.time = f.Time
	s.err = s.hold(r)
	return s.err
}

// End passes every held record on, in order, then the trailer with the
// counts of records passed on out of order or early.
func (s *Sink) End(t *event.Trailer) error {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.err
	if err == nil {
		err = s.release(true)
	}
	tr := *t
	tr.Stats = event.Stats{Counters: append([]event.Counter(nil), t.Stats.Counters...)}
	if s.late > 0 {
		tr.Stats.Add(event.CountInfo, StatLate, s.late)
	}
	if s.forced > 0 {
		tr.Stats.Add(event.CountInfo, StatForced, s.forced)
	}
	if eerr := s.next.End(&tr); err == nil {
		err = eerr
	}
	return err
}

// Flush passes every held record on, in order, without ending the trace:
// for a reader that stopped early (damaged input) and never calls End,
// so that nothing already read is lost.
func (s *Sink) Flush() error {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.err = s.release(true)
	return s.err
}

func (s *Sink) get() *rec {
	if n := len(s.spare); n > 0 {
		r := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return r
	}
	return &rec{}
}

func (s *Sink) hold(r *rec) error {
	s.seq++
	r.seq = s.seq
	if !r.isFact && (!s.seen || r.time > s.maxSeen) {
		s.maxSeen, s.seen = r.time, true
	}
	if s.released && r.time < s.last {
		// Its place has gone by: pass it on now.
		if !r.isFact {
			s.late++
		}
		err := s.pass(r)
		s.spare = append(s.spare, r)
		return err
	}
	heap.Push(&s.h, r)
	return s.release(false)
}

// release passes on the records older than the clock minus the window
// (all of them when all is set) and the oldest beyond the limit.
func (s *Sink) release(all bool) error {
	now := s.maxSeen
	if s.opts.Tick > 0 && !s.start.IsZero() {
		if w := s.opts.Now().Sub(s.start).Nanoseconds(); w > now {
			now = w
		}
	}
	limit := now - s.opts.Window.Nanoseconds()
	for len(s.h) > 0 {
		r := s.h[0]
		if !all && r.time > limit {
			if len(s.h) <= s.opts.Limit {
				return nil
			}
			s.forced++
		}
		heap.Pop(&s.h)
		if !s.released || r.time > s.last {
			s.last = r.time
		}
		s.released = true
		err := s.pass(r)
		s.spare = append(s.spare, r)
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Sink) pass(r *rec) error {
	if r.isFact {
		return s.next.Fact(&r.fact)
	}
	return s.next.Event(&r.ev)
}

// recHeap orders records by time, then by arrival.
type recHeap []*rec

func (h recHeap) Len() int { return len(h) }
func (h recHeap) Less(i, j int) bool {
	if h[i].time != h[j].time {
		return h[i].time < h[j].time
	}
	return h[i].seq < h[j].seq
}
func (h recHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recHeap) Push(x any)   { *h = append(*h, x.(*rec)) }
func (h *recHeap) Pop() any {
	old := *h
	n := len(old)
	r := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return r
}
