package backendtest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/iotrace/iotrace/event"
)

// Rules relax the checks for what a source legitimately does.
type Rules struct {
	// IdleFileEvents allows file-layer events on an idle thread (pid 0,
	// tid 0).
	IdleFileEvents bool
	// IdleSubmitter allows block events whose submitter is an idle
	// thread (pid 0, tid 0) even when their start was seen.
	IdleSubmitter bool
}

// Checker is an event.Sink that validates a stream against the Sink
// contract and the event model's invariants and keeps what it saw. It
// never fails the stream; call Err at the end.
type Checker struct {
	Rules Rules

	Header  event.Header
	Trailer event.Trailer
	Begins  int
	Ends    int
	Events  int
	Facts   int
	// PerLayer counts events per layer, PerPid the events other than
	// markers per pid.
	PerLayer map[event.Layer]int
	PerPid   map[uint32]int
	// PartialCauses accepts block events whose cause is not in the
	// stream: the stream was cut short or filtered.
	PartialCauses bool
	// Unpaired counts events flagged no-completion or no-start.
	Unpaired int

	maxEnd   int64 // latest event end, and the event
	maxEndID uint64
	ids      map[uint64]bool
	causes   map[uint64]uint64 // cause id → first block event id citing it
	errs     []string
	more     int
}

// NewChecker returns an empty checker.
func NewChecker(r Rules) *Checker {
	return &Checker{
		Rules:    r,
		PerLayer: make(map[event.Layer]int),
		PerPid:   make(map[uint32]int),
		ids:      make(map[uint64]bool),
		causes:   make(map[uint64]uint64),
	}
}

func (c *Checker) errorf(format string, args ...any) {
	if len(c.errs) >= 30 {
		c.more++
		return
	}
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *Checker) order(call string) {
	if c.Begins == 0 {
		c.errorf("%s before Begin", call)
	}
	if c.Ends > 0 {
		c.errorf("%s after End", call)
	}
}

// Begin implements event.Sink.
func (c *Checker) Begin(h *event.Header) error {
	c.Begins++
	if c.Begins > 1 {
		c.errorf("Begin called %d times", c.Begins)
	}
	if c.Events+c.Facts+c.Ends > 0 {
		c.errorf("Begin after events, facts or End")
	}
	c.Header = *h
	switch {
	case h.Source == event.SourceUnknown || strings.HasPrefix(h.Source.String(), "source("):
		c.errorf("header: source %v", h.Source)
	case h.OS != "linux" && h.OS != "windows":
		c.errorf("header: OS %q, want linux or windows", h.OS)
	case h.CPUs == 0:
		c.errorf("header: CPUs 0")
	case h.StartWall <= 0:
		c.errorf("header: no wall-clock anchor (StartWall %d)", h.StartWall)
	case h.Clock.Kind == event.ClockUnknown:
		c.errorf("header: clock kind unknown")
	}
	return nil
}

// Event implements event.Sink.
func (c *Checker) Event(e *event.Event) error {
	c.order("Event")
	c.Events++
	c.PerLayer[e.Layer]++
	if e.Layer != event.LayerMarker {
		c.PerPid[e.Pid]++
	}
	where := fmt.Sprintf("event #%d (%s %s at %d)", e.ID, e.Op, e.Native, e.Time)
	if e.ID == 0 {
		c.errorf("%s: ID 0", where)
	} else if c.ids[e.ID] {
		c.errorf("%s: duplicate ID", where)
	}
	c.ids[e.ID] = true
	if e.Source == event.SourceUnknown {
		c.errorf("%s: source unknown", where)
	}
	if e.Op == event.OpUnknown || int(e.Op) >= event.NumOps {
		c.errorf("%s: op %v", where, e.Op)
	} else if e.Layer != e.Op.Layer() {
		c.errorf("%s: layer %v, but op %v belongs to layer %v", where, e.Layer, e.Op, e.Op.Layer())
	}
	if strings.HasPrefix(e.Status.String(), "status(") {
		c.errorf("%s: status %v", where, e.Status)
	}
	if e.Duration < 0 {
		c.errorf("%s: negative duration %d", where, e.Duration)
	}
	if e.Wait < 0 || e.Wait > max(e.Duration, 0) {
		c.errorf("%s: wait %d outside [0, duration %d]", where, e.Wait, e.Duration)
	}
	if e.Time < 0 && e.Flags&event.FlagNoStart == 0 {
		c.errorf("%s: negative time without no-start flag", where)
	}
	if e.Flags&(event.FlagNoCompletion|event.FlagNoStart) != 0 {
		c.Unpaired++
	}
	if end := e.End(); end > c.maxEnd {
		c.maxEnd, c.maxEndID = end, e.ID
	}
	idle := e.Pid == 0 && e.Tid == 0
	if e.Tid == 0 && e.Pid != 0 {
		c.errorf("%s: tid 0 in pid %d (tid 0 is only the per-CPU idle thread)", where, e.Pid)
	}
	switch e.Layer {
	case event.LayerFile:
		if idle && !c.Rules.IdleFileEvents {
			c.errorf("%s: file event attributed to the idle thread of cpu %d", where, e.CPU)
		}
		if e.Cause != 0 {
			c.errorf("%s: file event with a cause", where)
		}
	case event.LayerBlock:
		if e.Request == 0 {
			c.errorf("%s: block event without request id", where)
		}
		if idle && e.Flags&event.FlagNoStart == 0 && !c.Rules.IdleSubmitter {
			c.errorf("%s: block event without a submitter (idle thread of cpu %d; the submitter, not the completing thread, must be named)", where, e.CPU)
		}
		if e.Cause != 0 {
			if _, ok := c.causes[e.Cause]; !ok {
				c.causes[e.Cause] = e.ID
			}
		}
	}
	return nil
}

// Fact implements event.Sink.
func (c *Checker) Fact(f *event.Fact) error {
	c.order("Fact")
	c.Facts++
	if f.Kind == event.FactUnknown || strings.HasPrefix(f.Kind.String(), "fact(") {
		c.errorf("fact at %d: kind %v", f.Time, f.Kind)
	}
	if f.Kind == event.FactName && (f.Space == event.SpaceNone || strings.HasPrefix(f.Space.String(), "space(")) {
		c.errorf("name fact at %d: handle space %v", f.Time, f.Space)
	}
	return nil
}

// End implements event.Sink.
func (c *Checker) End(t *event.Trailer) error {
	if c.Begins == 0 {
		c.errorf("End before Begin")
	}
	c.Ends++
	if c.Ends > 1 {
		c.errorf("End called %d times", c.Ends)
	}
	c.Trailer = event.Trailer{End: t.End, Stats: event.Stats{Counters: append([]event.Counter(nil), t.Stats.Counters...)}}
	return nil
}

// Err returns every violation found, or nil. It also checks what needs
// the whole stream: End seen, event times within the trailer's end,
// causes that name events of the trace, stats present, unpaired events
// counted.
func (c *Checker) Err() error {
	errs := append([]string(nil), c.errs...)
	if c.Begins == 0 {
		errs = append(errs, "no Begin")
	}
	if c.Ends == 0 {
		errs = append(errs, "no End")
	} else {
		if len(c.Trailer.Stats.Counters) == 0 {
			errs = append(errs, "trailer has no stats counters (at least the events received must be counted)")
		}
		if c.maxEnd > c.Trailer.End {
			errs = append(errs, fmt.Sprintf("event #%d ends at %d, after the trailer's end %d", c.maxEndID, c.maxEnd, c.Trailer.End))
		}
		// An event without its other half is counted unpaired, or lost
		// when the kernel never delivered that half (a block completion
		// no program could see).
		unpaired, lost := c.Trailer.Stats.Total(event.CountUnpaired), c.Trailer.Stats.Total(event.CountLost)
		if unpaired+lost < uint64(c.Unpaired) {
			errs = append(errs, fmt.Sprintf("%d events flagged no-completion/no-start but the trailer counts %d unpaired and %d lost", c.Unpaired, unpaired, lost))
		}
	}
	// A cause may be missing only when the trailer counts lost events
	// (its record was among them: the loss is shown, not silent).
	lost := c.Trailer.Stats.Total(event.CountLost)
	for cause, id := range c.causes {
		if !c.ids[cause] && !c.PartialCauses && lost == 0 {
			errs = append(errs, fmt.Sprintf("block event #%d links to cause #%d, which is not in the trace (and no event is counted lost)", id, cause))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	s := strings.Join(errs, "\n")
	if c.more > 0 {
		s += fmt.Sprintf("\n... and %d more", c.more)
	}
	return errors.New(s)
}
