package backendtest

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

func goodHeader() *event.Header {
	return &event.Header{Source: event.SourceEBPF, OS: "linux", CPUs: 2, StartWall: 1, Clock: event.Clock{Kind: event.ClockBoottime, Freq: 1e9}}
}

func fileEvent(id uint64) *event.Event {
	e := event.New()
	e.ID, e.Source, e.Layer, e.Op, e.Pid, e.Tid, e.Time, e.Duration = id, event.SourceEBPF, event.LayerFile, event.OpRead, 10, 11, 100, 50
	e.Status = event.StatusOK
	return &e
}

func blockEvent(id, cause uint64) *event.Event {
	e := event.New()
	e.ID, e.Source, e.Layer, e.Op, e.Pid, e.Tid, e.Time, e.Duration, e.Wait = id, event.SourceEBPF, event.LayerBlock, event.OpBlockRead, 10, 11, 120, 20, 5
	e.Request, e.Cause, e.Status = 0xffff0000, cause, event.StatusOK
	return &e
}

func trailer(end int64) *event.Trailer {
	t := &event.Trailer{End: end}
	t.Stats.Add(event.CountInfo, "events received", 2)
	return t
}

func TestCheckerAcceptsAGoodStream(t *testing.T) {
	c := NewChecker(Rules{})
	c.Begin(goodHeader())
	c.Fact(&event.Fact{Kind: event.FactName, Space: event.SpaceFD, Handle: 3, Name: "/x"})
	c.Event(blockEvent(2, 1)) // a block event may come before its cause
	c.Event(fileEvent(1))
	c.End(trailer(1000))
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckerFindsViolations(t *testing.T) {
	cases := []struct {
		name string
		feed func(c *Checker)
		want string
	}{
		{"no begin", func(c *Checker) { c.Event(fileEvent(1)); c.End(trailer(1000)) }, "Event before Begin"},
		{"no end", func(c *Checker) { c.Begin(goodHeader()) }, "no End"},
		{"two ends", func(c *Checker) { c.Begin(goodHeader()); c.End(trailer(1)); c.End(trailer(1)) }, "End called 2 times"},
		{"event after end", func(c *Checker) { c.Begin(goodHeader()); c.End(trailer(1000)); c.Event(fileEvent(1)) }, "Event after End"},
		{"bad header", func(c *Checker) { h := goodHeader(); h.StartWall = 0; c.Begin(h); c.End(trailer(1)) }, "wall-clock"},
		{"layer/op", func(c *Checker) {
			c.Begin(goodHeader())
			e := fileEvent(1)
			e.Op = event.OpBlockWrite
			c.Event(e)
			c.End(trailer(1000))
		}, "belongs to layer block"},
		{"negative duration", func(c *Checker) {
			c.Begin(goodHeader())
			e := fileEvent(1)
			e.Duration = -1
			c.Event(e)
			c.End(trailer(1000))
		}, "negative duration"},
		{"duplicate id", func(c *Checker) {
			c.Begin(goodHeader())
			c.Event(fileEvent(1))
			c.Event(fileEvent(1))
			c.End(trailer(1000))
		}, "duplicate ID"},
		{"after trailer end", func(c *Checker) { c.Begin(goodHeader()); c.Event(fileEvent(1)); c.End(trailer(120)) }, "after the trailer's end"},
		{"tid 0 in a process", func(c *Checker) {
			c.Begin(goodHeader())
			e := fileEvent(1)
			e.Tid = 0
			c.Event(e)
			c.End(trailer(1000))
		}, "tid 0 in pid 10"},
		{"idle file event", func(c *Checker) {
			c.Begin(goodHeader())
			e := fileEvent(1)
			e.Pid, e.Tid = 0, 0
			c.Event(e)
			c.End(trailer(1000))
		}, "idle thread"},
		{"block without request", func(c *Checker) {
			c.Begin(goodHeader())
			e := blockEvent(1, 0)
			e.Request = 0
			c.Event(e)
			c.End(trailer(1000))
		}, "without request id"},
		{"block attributed to completion on idle", func(c *Checker) {
			c.Begin(goodHeader())
			e := blockEvent(1, 0)
			e.Pid, e.Tid = 0, 0
			c.Event(e)
			c.End(trailer(1000))
		}, "without a submitter"},
		{"wait above duration", func(c *Checker) {
			c.Begin(goodHeader())
			e := blockEvent(1, 0)
			e.Wait = 100
			c.Event(e)
			c.End(trailer(1000))
		}, "wait 100 outside"},
		{"dangling cause", func(c *Checker) { c.Begin(goodHeader()); c.Event(blockEvent(2, 9)); c.End(trailer(1000)) }, "cause #9"},
		{"no stats", func(c *Checker) { c.Begin(goodHeader()); c.End(&event.Trailer{End: 1}) }, "no stats"},
		{"unpaired not counted", func(c *Checker) {
			c.Begin(goodHeader())
			e := fileEvent(1)
			e.Flags |= event.FlagNoCompletion
			c.Event(e)
			c.End(trailer(1000))
		}, "1 events flagged no-completion/no-start but the trailer counts 0 unpaired and 0 lost"},
	}
	for _, tc := range cases {
		c := NewChecker(Rules{})
		tc.feed(c)
		err := c.Err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Err() = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

// TestUnpairedCountedLost: an event whose completion the kernel never
// delivered may be counted lost rather than unpaired (blockio's
// "completions not seen").
func TestUnpairedCountedLost(t *testing.T) {
	c := NewChecker(Rules{})
	c.Begin(goodHeader())
	e := fileEvent(1)
	e.Flags |= event.FlagNoCompletion
	c.Event(e)
	tr := trailer(1000)
	tr.Stats.Add(event.CountLost, "block completions not seen (events without completion)", 1)
	c.End(tr)
	if err := c.Err(); err != nil {
		t.Error(err)
	}
}
