package timeorder

import (
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
)

// collect keeps what reaches it.
type collect struct {
	times   []int64
	facts   int
	trailer event.Trailer
}

func (c *collect) Begin(*event.Header) error  { return nil }
func (c *collect) Event(e *event.Event) error { c.times = append(c.times, e.Time); return nil }
func (c *collect) Fact(f *event.Fact) error {
	c.facts++
	c.times = append(c.times, -1000-f.Time)
	return nil
}
func (c *collect) End(t *event.Trailer) error { c.trailer = *t; return nil }

func ms(n int64) int64 { return n * int64(time.Millisecond) }

// TestOrderWithinWindow: records up to the window apart come out in time
// order; one later than the window goes out at once and is counted.
func TestOrderWithinWindow(t *testing.T) {
	c := &collect{}
	s := New(c, Options{Window: 100 * time.Millisecond, Tick: -1})
	if err := s.Begin(&event.Header{}); err != nil {
		t.Fatal(err)
	}
	for _, tm := range []int64{ms(10), ms(5), ms(50), ms(20), ms(300), ms(250), ms(30), ms(400)} {
		if err := s.Event(&event.Event{Time: tm}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.End(&event.Trailer{End: ms(400)}); err != nil {
		t.Fatal(err)
	}
	// 30 ms arrives after 50 ms went out (released when 300 ms came).
	want := []int64{ms(5), ms(10), ms(20), ms(50), ms(30), ms(250), ms(300), ms(400)}
	if len(c.times) != len(want) {
		t.Fatalf("got %v, want %v", c.times, want)
	}
	for i := range want {
		if c.times[i] != want[i] {
			t.Fatalf("got %v, want %v", c.times, want)
		}
	}
	if n := c.trailer.Stats.Get(event.CountInfo, StatLate); n != 1 {
		t.Errorf("late: %d, want 1", n)
	}
}

// TestFactsInOrder: a fact goes out among the events by its time.
func TestFactsInOrder(t *testing.T) {
	c := &collect{}
	s := New(c, Options{Window: time.Second, Tick: -1})
	_ = s.Begin(&event.Header{})
	_ = s.Event(&event.Event{Time: 20})
	_ = s.Fact(&event.Fact{Time: 10})
	_ = s.Event(&event.Event{Time: 5})
	_ = s.End(&event.Trailer{})
	want := []int64{5, -1010, 20}
	for i := range want {
		if i >= len(c.times) || c.times[i] != want[i] {
			t.Fatalf("got %v, want %v", c.times, want)
		}
	}
	if n := c.trailer.Stats.Get(event.CountInfo, StatLate); n != 0 {
		t.Errorf("late: %d", n)
	}
}

// TestLimit: beyond the limit the oldest go out early, counted.
func TestLimit(t *testing.T) {
	c := &collect{}
	s := New(c, Options{Window: time.Hour, Limit: 2, Tick: -1})
	_ = s.Begin(&event.Header{})
	for _, tm := range []int64{3, 1, 2, 4} {
		_ = s.Event(&event.Event{Time: tm})
	}
	if len(c.times) != 2 || c.times[0] != 1 || c.times[1] != 2 {
		t.Errorf("passed on early: %v, want [1 2]", c.times)
	}
	_ = s.End(&event.Trailer{})
	if n := c.trailer.Stats.Get(event.CountInfo, StatForced); n != 2 {
		t.Errorf("forced: %d, want 2", n)
	}
}

// TestIdleTraceReleases: with the wall clock past an event's time by the
// window, the ticker passes it on without waiting for more events.
func TestIdleTraceReleases(t *testing.T) {
	c := &collect{}
	start := time.Now()
	s := New(c, Options{Window: 50 * time.Millisecond, Tick: 5 * time.Millisecond})
	_ = s.Begin(&event.Header{StartWall: start.UnixNano()})
	_ = s.Event(&event.Event{Time: 1})
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n := len(c.times)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an idle trace's event was not passed on by the ticker")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = s.End(&event.Trailer{})
}

type discard struct{}

func (discard) Begin(*event.Header) error { return nil }
func (discard) Event(*event.Event) error  { return nil }
func (discard) Fact(*event.Fact) error    { return nil }
func (discard) End(*event.Trailer) error  { return nil }

// BenchmarkSink: the cost per event of holding and reordering, events
// arriving up to 1 ms out of order with 10 µs between them.
func BenchmarkSink(b *testing.B) {
	s := New(discard{}, Options{Window: 10 * time.Millisecond, Tick: -1})
	_ = s.Begin(&event.Header{})
	e := event.Event{Path: "/var/lib/data", Size: 4096}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.Time = int64(i)*10_000 - int64(i%100)*10_000
		_ = s.Event(&e)
	}
	_ = s.End(&event.Trailer{})
}
