package live

import (
	"context"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/ring"
)

// TestFlightRecorder: `record --ring` on Windows is the live session
// feeding a ring; `iotrace mark --save` reaches it as the session's marker
// and saves the most recent events with the facts they need and the count
// of those overwritten.
func TestFlightRecorder(t *testing.T) {
	const limit = ring.MinSize // about 100 events
	f := fakeWithFixture(t)
	f.ownTime = 5_000_000 // the request's time: amid the fixture's events
	f.procs = append(f.procs, Process{Pid: 500, Name: "iotrace.exe"})
	r, err := ring.New(limit)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	saved := make(chan *memSink, 4)
	full := &memSink{} // everything, for reference
	trig := &ring.Trigger{Sink: tee{full, r}, Delay: 20 * time.Millisecond, OnSave: func() {
		m := &memSink{}
		if _, err := r.Save(m); err != nil {
			t.Error(err)
		}
		saved <- m
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(Config{API: f}).Run(ctx, backend.Options{}, trig) }()
	var n int
	for i := 0; i < 400 && n == 0; i++ {
		time.Sleep(5 * time.Millisecond)
		if !f.takesOwn(SessionName(4242)) {
			continue // not yet enabled for iotrace's provider
		}
		n, err = SendMark(f, ring.SaveRequestText("the stall"))
	}
	if n != 1 || err != nil {
		t.Fatalf("SendMark: %d, %v", n, err)
	}
	var m *memSink
	select {
	case m = <-saved:
	case <-time.After(10 * time.Second):
		t.Fatal("no save")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The kept events are the trace's last ones (the marker last), as many
	// as fit.
	ev := m.events
	if len(ev) < 2 || !ring.IsSaveRequest(&ev[len(ev)-1]) {
		t.Fatalf("save has %d events, the last not the request", len(ev))
	}
	full.mu.Lock()
	defer full.mu.Unlock()
	var before []event.Event // the trace up to the request
	for _, e := range full.events {
		before = append(before, e)
		if ring.IsSaveRequest(&e) {
			break
		}
	}
	if len(before) < 80 {
		t.Fatalf("only %d events before the request", len(before))
	}
	if st := r.Stats(); st.Bytes > limit || len(ev) >= len(before) {
		t.Errorf("kept %d of %d events in %d bytes: want the window within %d bytes, older events overwritten", len(ev), len(before), st.Bytes, limit)
	}
	tail := before[len(before)-len(ev):]
	for i := range ev {
		if ev[i].ID != tail[i].ID || ev[i].Path != tail[i].Path {
			t.Fatalf("kept event %d is #%d %q, the trace's is #%d %q", i, ev[i].ID, ev[i].Path, tail[i].ID, tail[i].Path)
		}
	}
	over := m.trailer.Stats.Get(event.CountLost, ring.OverwrittenCounter)
	if want := uint64(len(before) - len(ev)); over != want {
		t.Errorf("overwritten %d, want %d", over, want)
	}
	// Every process of a kept event, and every file object named in the
	// whole trace that a kept event uses, has its fact in the save.
	facts := map[[2]uint64]bool{}
	procs := map[uint32]bool{}
	for _, f := range m.facts {
		switch f.Kind {
		case event.FactName:
			facts[[2]uint64{uint64(f.Space), f.Handle}] = true
		case event.FactProcess:
			procs[f.Pid] = true
		}
	}
	named := map[[2]uint64]bool{}
	hasProc := map[uint32]bool{}
	for _, f := range full.facts {
		switch f.Kind {
		case event.FactName:
			named[[2]uint64{uint64(f.Space), f.Handle}] = true
		case event.FactProcess:
			hasProc[f.Pid] = true
		}
	}
	checked := 0
	for _, e := range ev {
		for _, k := range [][2]uint64{{uint64(event.SpaceFileObject), e.FileObject}, {uint64(event.SpaceFileKey), e.FileKey}} {
			if k[1] != 0 && named[k] {
				checked++
				if !facts[k] {
					t.Errorf("event #%d: the name of %s %#x is not in the save", e.ID, event.HandleSpace(k[0]), k[1])
				}
			}
		}
		if hasProc[e.Pid] && !procs[e.Pid] {
			t.Errorf("event #%d: process %d not in the save", e.ID, e.Pid)
		}
	}
	if checked == 0 {
		t.Error("no kept event uses a named file object: the test checks nothing")
	}
	t.Logf("kept %d of %d events, %d facts, %d file objects checked", len(ev), len(before), len(m.facts), checked)
}

// tee delivers a stream to two sinks.
type tee [2]event.Sink

func (t tee) Begin(h *event.Header) error {
	t[0].Begin(h)
	return t[1].Begin(h)
}
func (t tee) Event(e *event.Event) error { t[0].Event(e); return t[1].Event(e) }
func (t tee) Fact(f *event.Fact) error   { t[0].Fact(f); return t[1].Fact(f) }
func (t tee) End(tr *event.Trailer) error {
	t[0].End(tr)
	return t[1].End(tr)
}
