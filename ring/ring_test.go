package ring

import (
	"github.com/iotrace/iotrace/internal/testenv"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/tracefile"
)

// memSink collects a saved trace.
type memSink struct {
	hdr     *event.Header
	events  []event.Event
	facts   []event.Fact
	trailer *event.Trailer
}

func (m *memSink) Begin(h *event.Header) error { hc := *h; m.hdr = &hc; return nil }
func (m *memSink) Event(e *event.Event) error  { m.events = append(m.events, *e); return nil }
func (m *memSink) Fact(f *event.Fact) error    { m.facts = append(m.facts, *f); return nil }
func (m *memSink) End(t *event.Trailer) error  { tc := *t; m.trailer = &tc; return nil }

func ev(id uint64, fd int32) *event.Event {
	e := event.New()
	e.ID, e.Time, e.Pid, e.Tid, e.FD, e.Op = id, int64(id)*10, 100, 100, fd, event.OpRead
	return &e
}

func name(pid uint32, fd uint64, path string, end bool) *event.Fact {
	return &event.Fact{Kind: event.FactName, Space: event.SpaceFD, Pid: pid, Handle: fd, Name: path, End: end}
}

func TestEvictionBySize(t *testing.T) {
	per := Cost(ev(1, 3))
	r, err := New(10 * per)
	if err != nil {
		t.Fatal(err)
	}
	r.Begin(&event.Header{OS: "linux"})
	for i := uint64(1); i <= 25; i++ {
		r.Event(ev(i, 3))
	}
	var m memSink
	st, err := r.Save(&m)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kept != 10 || st.Overwritten != 15 || st.Seen != 25 || st.Bytes > st.Limit {
		t.Errorf("stats %+v", st)
	}
	if len(m.events) != 10 || m.events[0].ID != 16 || m.events[9].ID != 25 {
		t.Fatalf("kept %d events, first %d", len(m.events), m.events[0].ID)
	}
	if got := m.trailer.Stats.Get(event.CountLost, OverwrittenCounter); got != 15 {
		t.Errorf("overwritten counter %d, want 15", got)
	}
	if got := m.trailer.Stats.Get(event.CountInfo, KeptCounter); got != 10 {
		t.Errorf("kept counter %d", got)
	}
	// A bigger event pushes out as many as its cost needs.
	big := ev(26, 3)
	big.Path = string(make([]byte, 3*per))
	r.Event(big)
	if st := r.Stats(); st.Kept != 7 || st.Bytes > st.Limit {
		t.Errorf("after a big event: %+v", st)
	}
	// An event larger than the whole budget is still kept (alone).
	huge := ev(27, 3)
	huge.Path = string(make([]byte, 20*per))
	r.Event(huge)
	if st := r.Stats(); st.Kept != 1 || st.Overwritten != 26 {
		t.Errorf("after a huge event: %+v", st)
	}
}

func TestFactsOfKeptEventsRetained(t *testing.T) {
	per := Cost(ev(1, 3))
	r, _ := New(5 * per)
	r.Begin(&event.Header{})
	r.Fact(&event.Fact{Kind: event.FactProcess, Pid: 100, Name: "db"})
	r.Fact(&event.Fact{Kind: event.FactProcess, Pid: 200, Name: "gone"})
	r.Fact(name(100, 3, "/data/long-open", false)) // opened long before the window
	r.Event(ev(1, 3))
	r.Fact(name(100, 4, "/tmp/closed", false)) // opened and closed before the window
	r.Event(ev(2, 4))
	r.Fact(name(100, 4, "", true))
	r.Fact(&event.Fact{Kind: event.FactProcess, Pid: 200, End: true})
	r.Fact(name(100, 5, "/tmp/old-name", false))
	r.Fact(name(100, 5, "/tmp/new-name", false)) // fd 5 reused: the latest wins
	for i := uint64(3); i <= 20; i++ {
		r.Event(ev(i, 3))
	}
	r.Fact(name(100, 6, "/in/window", false))
	r.Event(ev(21, 6))
	var m memSink
	if _, err := r.Save(&m); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range m.facts {
		got[f.Kind.String()+":"+f.Name] = true
	}
	for _, want := range []string{"process:db", "name:/data/long-open", "name:/tmp/new-name", "name:/in/window"} {
		if !got[want] {
			t.Errorf("fact %s missing from the save: %v", want, got)
		}
	}
	for _, gone := range []string{"process:gone", "name:/tmp/closed", "name:/tmp/old-name"} {
		if got[gone] {
			t.Errorf("fact %s no longer live but saved", gone)
		}
	}
	// The window's own fact comes after the live ones and before the event
	// that needs it.
	if last := m.facts[len(m.facts)-1]; last.Name != "/in/window" {
		t.Errorf("last fact %q", last.Name)
	}
	if len(m.events) != 5 || m.events[4].ID != 21 {
		t.Errorf("events %d", len(m.events))
	}
	// Saving twice gives the same trace: a save does not consume the ring.
	var m2 memSink
	r.Save(&m2)
	if len(m2.facts) != len(m.facts) || len(m2.events) != len(m.events) {
		t.Errorf("second save: %d facts %d events, first %d %d", len(m2.facts), len(m2.events), len(m.facts), len(m.events))
	}
}

func TestTrailerAtExitKeepsStreamCounters(t *testing.T) {
	r, _ := New(1 << 20)
	var m memSink
	if _, err := r.Save(&m); err != ErrNotBegun {
		t.Errorf("save before Begin: %v", err)
	}
	r.Begin(&event.Header{})
	r.Event(ev(1, 3))
	tr := event.Trailer{End: 500}
	tr.Stats.Add(event.CountLost, "ringbuf reserve failed", 7)
	r.End(&tr)
	if _, err := r.Save(&m); err != nil {
		t.Fatal(err)
	}
	if m.trailer.End != 500 || m.trailer.Stats.Get(event.CountLost, "ringbuf reserve failed") != 7 ||
		m.trailer.Stats.Get(event.CountLost, OverwrittenCounter) != 0 {
		t.Errorf("trailer %+v", m.trailer)
	}
}

func TestNewRejectsBadSizes(t *testing.T) {
	for _, n := range []int{0, -1, 10} {
		if _, err := New(n); err == nil {
			t.Errorf("New(%d) accepted", n)
		}
	}
}

func TestCompactionKeepsOrder(t *testing.T) {
	per := Cost(ev(1, 3))
	r, _ := New(100 * per)
	r.Begin(&event.Header{})
	for i := uint64(1); i <= 10000; i++ {
		r.Event(ev(i, 3))
	}
	var m memSink
	r.Save(&m)
	for i, e := range m.events {
		if e.ID != uint64(9901+i) {
			t.Fatalf("event %d has id %d", i, e.ID)
		}
	}
	if len(r.items) > 4096 {
		t.Errorf("queue not compacted: %d items", len(r.items))
	}
}

// BenchmarkRingEvent and BenchmarkWriterEvent compare the flight
// recorder's cost per event with record's .iot writer's (to io.Discard).
func BenchmarkRingEvent(b *testing.B) {
	r, _ := New(1 << 20)
	r.Begin(&event.Header{})
	e := ev(1, 3)
	e.Path, e.Comm, e.Native = "/var/lib/data/file", "postgres", "pread64"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.ID, e.Time = uint64(i), int64(i)
		r.Event(e)
	}
}

func BenchmarkWriterEvent(b *testing.B) {
	w := tracefile.NewWriter(io.Discard, tracefile.WriterOptions{})
	w.Begin(&event.Header{})
	e := ev(1, 3)
	e.Path, e.Comm, e.Native = "/var/lib/data/file", "postgres", "pread64"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.ID, e.Time = uint64(i), int64(i)
		w.Event(e)
	}
}

func TestTriggerSavesAfterTheRequest(t *testing.T) {
	r, _ := New(1 << 20)
	var m memSink
	var saves atomic.Int32
	var mu sync.Mutex
	trig := &Trigger{Sink: r, Interval: time.Nanosecond, OnSave: func() {
		mu.Lock()
		defer mu.Unlock()
		saves.Add(1)
		m = memSink{}
		if _, err := r.Save(&m); err != nil {
			t.Error(err)
		}
	}}
	trig.Begin(&event.Header{})
	trig.Event(ev(1, 3))
	mark := event.New()
	mark.Op, mark.Layer, mark.Note = event.OpMarker, event.LayerMarker, "phase 2"
	trig.Event(&mark)
	if saves.Load() != 0 {
		t.Fatal("a plain marker saved")
	}
	mark.Note = SaveRequestText("the stall")
	mark.Time = 100
	trig.Event(&mark)
	if saves.Load() != 0 {
		t.Fatal("saved before the stream passed the request")
	}
	late := ev(2, 3) // started before the marker, arrived after it
	late.Time = 90
	trig.Event(late)
	if saves.Load() != 0 {
		t.Fatal("saved on an event older than the request")
	}
	trig.Event(ev(20, 3)) // Time 200: the stream passed the request
	if saves.Load() != 1 || len(m.events) != 4 || m.events[3].ID != 2 {
		mu.Lock()
		t.Errorf("saves %d, events %d", saves.Load(), len(m.events))
		mu.Unlock()
	}
	// With no later event, the save comes after Delay.
	trig.Delay = 10 * time.Millisecond
	mark.Time = 1000
	trig.Event(&mark)
	for deadline := time.Now().Add(5 * time.Second); saves.Load() < 2 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	if saves.Load() != 2 {
		t.Errorf("no save after the delay: %d", saves.Load())
	}
	// A pending request is saved at the end at the latest.
	trig.Delay = time.Hour
	trig.Event(&mark)
	trig.End(&event.Trailer{})
	if saves.Load() != 3 {
		t.Errorf("no save at the end: %d", saves.Load())
	}
}

func TestRecorderNumberedFiles(t *testing.T) {
	dir := testenv.TempDir(t)
	r, _ := New(1 << 20)
	r.Begin(&event.Header{})
	r.Event(ev(1, 3))
	path := filepath.Join(dir, "t.iot")
	// An existing file (or link) is never replaced: the next number is used.
	if err := os.WriteFile(filepath.Join(dir, "t.1.iot"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A symbolic link needs a privilege on Windows; wine's are not
	// reparse points Windows calls would see.
	linked := false
	if !testenv.UnderWine() {
		linked = os.Symlink("/etc/passwd", filepath.Join(dir, "t.2.iot")) == nil
	}
	wants := []string{"t.3.iot", "t.4.iot"}
	if !linked {
		wants = []string{"t.2.iot", "t.3.iot"}
	}
	rec := &Recorder{Ring: r, Path: path}
	for _, want := range wants {
		name, st, err := rec.SaveNext()
		if err != nil || filepath.Base(name) != want || st.Kept != 1 {
			t.Fatalf("SaveNext = %s, %+v, %v; want %s", name, st, err, want)
		}
		fi, err := os.Lstat(name)
		if err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v %v", name, fi.Mode(), err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "t.1.iot")); string(b) != "keep" {
		t.Error("an existing file was replaced")
	}
	if _, err := CreateOutput(filepath.Join(dir, "t.2.iot")); linked && err == nil {
		t.Error("CreateOutput went through a symlink")
	}
}

// TestTriggerRateLimit: save requests closer than the interval to the
// last one taken are refused and counted (issue 25, item 10: any local
// user could make root's recorder write a file per request); a clock
// stepped back does not block saves.
func TestTriggerRateLimit(t *testing.T) {
	var saves, refusals int
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	trig := &Trigger{OnSave: func() { saves++ }, OnRefused: func() { refusals++ }, Now: func() time.Time { return now }}
	var end memSink
	trig.Sink = &end
	trig.Begin(&event.Header{})
	req := event.New()
	req.Op, req.Layer, req.Note = event.OpMarker, event.LayerMarker, SaveRequestText("")
	ask := func(at int64) {
		req.Time = at
		trig.Event(&req)
		trig.Event(ev(uint64(at+1), 1)) // the stream passes the request
	}
	for i := range 5 { // five requests in four seconds: one save
		ask(int64(i) * 10)
		now = now.Add(time.Second)
	}
	now = now.Add(DefaultSaveInterval)
	ask(100) // ten seconds on: saved
	now = now.Add(-time.Hour)
	ask(200) // the clock stepped back: saved
	if saves != 3 || refusals != 4 || trig.Refused() != 4 {
		t.Errorf("%d saves, %d refusals (%d counted), want 3 and 4", saves, refusals, trig.Refused())
	}
	trig.End(&event.Trailer{})
	if got := end.trailer.Stats.Get(event.CountInfo, RefusedCounter); got != 4 {
		t.Errorf("trailer counts %d refusals", got)
	}
}
