package ring

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
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

// window checks a saved window: contiguous event IDs ending at last, the
// counts adding up to seen, the window within the budget and within four
// chunks of full.
func window(t *testing.T, r *Ring, m *memSink, st Stats, last uint64) {
	t.Helper()
	if len(m.events) == 0 || m.events[len(m.events)-1].ID != last {
		t.Fatalf("saved %d events, want the last one #%d", len(m.events), last)
	}
	for i := 1; i < len(m.events); i++ {
		if m.events[i].ID != m.events[i-1].ID+1 {
			t.Fatalf("saved events not contiguous: #%d after #%d", m.events[i].ID, m.events[i-1].ID)
		}
	}
	if st.Kept != uint64(len(m.events)) || st.Kept+st.Overwritten+st.Unsaved != st.Seen || st.Seen != last {
		t.Errorf("stats %+v for %d events saved of %d", st, len(m.events), last)
	}
	if st.Bytes > st.Limit || (st.Overwritten > 0 && st.Bytes < st.Limit-4*st.Chunk) {
		t.Errorf("window of %d bytes: want at most %d and within four chunks (%d) of it", st.Bytes, st.Limit, st.Chunk)
	}
	if got := m.trailer.Stats.Get(event.CountLost, OverwrittenCounter); got != st.Overwritten {
		t.Errorf("overwritten counter %d, want %d", got, st.Overwritten)
	}
	if got := m.trailer.Stats.Get(event.CountInfo, KeptCounter); got != st.Kept {
		t.Errorf("kept counter %d, want %d", got, st.Kept)
	}
}

func TestEvictionBySize(t *testing.T) {
	r, err := New(16 << 10)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Begin(&event.Header{OS: "linux"})
	for i := uint64(1); i <= 5000; i++ {
		e := ev(i, 3)
		e.Path = fmt.Sprintf("/data/file-%d", i%13)
		r.Event(e)
	}
	var m memSink
	st, err := r.Save(&m)
	if err != nil {
		t.Fatal(err)
	}
	if st.Overwritten == 0 {
		t.Fatalf("nothing overwritten: %+v", st)
	}
	window(t, r, &m, st, 5000)
	// An event larger than the whole ring is overwritten at once, never
	// kept in part; the window then starts after it.
	huge := ev(5001, 3)
	huge.Path = string(make([]byte, 20<<10))
	r.Event(huge)
	r.Event(ev(5002, 3))
	m = memSink{}
	st, _ = r.Save(&m)
	if len(m.events) != 1 || m.events[0].ID != 5002 || st.Seen != 5002 || st.Kept+st.Overwritten != 5002 {
		t.Errorf("after a huge event: %d events saved, %+v", len(m.events), st)
	}
}

// TestWindowWithinBudget: the window's memory is the budget, outside the
// Go heap: feeding a ring far more than it holds grows neither the Go
// heap nor (on Linux) the process's resident memory beyond the budget and
// a small constant. The earlier ring kept events as Go structs and grew
// the heap to several times its budget.
func TestWindowWithinBudget(t *testing.T) {
	const limit = 32 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rss0 := residentBytes()
	r, err := New(limit)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Begin(&event.Header{})
	e := ev(1, 3)
	e.Comm, e.Native = "postgres", "pread64"
	const n = 3_000_000
	for i := uint64(1); i <= n; i++ {
		e.ID, e.Time, e.Offset, e.FD = i, int64(i)*1000, int64(i)*4096, int32(i%200)
		e.Path = paths[i%uint64(len(paths))]
		r.Event(e)
	}
	st := r.Stats()
	runtime.GC()
	runtime.ReadMemStats(&after)
	rss := residentBytes() - rss0
	if st.Overwritten == 0 || st.Bytes > limit {
		t.Fatalf("%+v: the test did not fill the ring, or the window exceeds it", st)
	}
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d events, %d kept in %d bytes; Go heap grew %d KiB, resident memory %d KiB", n, st.Kept, st.Bytes, grown>>10, rss>>10)
	if grown > 8<<20 {
		t.Errorf("the Go heap grew by %d MiB for a %d MiB ring", grown>>20, limit>>20)
	}
	if rss0 > 0 && rss > limit+16<<20 {
		t.Errorf("resident memory grew by %d MiB for a %d MiB ring (want at most 16 MiB more)", rss>>20, limit>>20)
	}
	if a := testing.AllocsPerRun(1000, func() { e.ID++; r.Event(e) }); a > 0.01 {
		t.Errorf("%.2f allocations per event", a)
	}
}

var paths = func() []string {
	var p []string
	for i := range 500 {
		p = append(p, fmt.Sprintf("/var/lib/postgresql/16/main/base/16384/%d", 2600+i))
	}
	return p
}()

func TestFactsOfKeptEventsRetained(t *testing.T) {
	r, _ := New(MinSize)
	defer r.Close()
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
	for i := uint64(3); i <= 2000; i++ {
		r.Event(ev(i, 3))
	}
	r.Fact(name(100, 6, "/in/window", false))
	r.Event(ev(2001, 6))
	var m memSink
	st, err := r.Save(&m)
	if err != nil {
		t.Fatal(err)
	}
	if st.Overwritten == 0 {
		t.Fatalf("nothing overwritten: %+v", st)
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
	if m.events[len(m.events)-1].ID != 2001 {
		t.Errorf("last event #%d", m.events[len(m.events)-1].ID)
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
	defer r.Close()
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
	for _, n := range []int{0, -1, 10, MinSize - 1} {
		if r, err := New(n); err == nil {
			r.Close()
			t.Errorf("New(%d) accepted", n)
		}
	}
}

func TestWindowKeepsOrder(t *testing.T) {
	r, _ := New(64 << 10)
	defer r.Close()
	r.Begin(&event.Header{})
	const n = 300000
	for i := uint64(1); i <= n; i++ {
		r.Event(ev(i, 3))
	}
	var m memSink
	st, _ := r.Save(&m)
	window(t, r, &m, st, n)
	if len(r.refs) > 4096 {
		t.Errorf("chunk queue not compacted: %d entries", len(r.refs))
	}
}

// TestSaveToWriterAsDecoded: a save to a .iot writer (chunks written as
// they are) reads back as the same trace as a save decoded into a sink.
func TestSaveToWriterAsDecoded(t *testing.T) {
	tr := synth.Trace(synth.Options{Seed: 9, Events: 20000})
	r, _ := New(256 << 10)
	defer r.Close()
	if err := tr.Replay(r); err != nil {
		t.Fatal(err)
	}
	direct := synth.NewRecorder()
	if _, err := r.Save(direct); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := tracefile.NewWriter(&buf, tracefile.WriterOptions{})
	st, err := r.Save(w)
	if err != nil || w.Close() != nil {
		t.Fatal(err)
	}
	rd, err := tracefile.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	back := synth.NewRecorder()
	if err := rd.Run(context.Background(), back); err != nil {
		t.Fatal(err)
	}
	if err := synth.Compare(direct.Trace(), back.Trace()); err != nil {
		t.Error(err)
	}
	if st.Overwritten == 0 || len(back.Trace().Events) != int(st.Kept) {
		t.Errorf("%+v, file has %d events", st, len(back.Trace().Events))
	}
}

// TestSaveWhileRecording: saves run while events keep coming (from
// another goroutine); each saved window is contiguous and ends with an
// event received before the save returned.
func TestSaveWhileRecording(t *testing.T) {
	r, _ := New(64 << 10)
	defer r.Close()
	r.Begin(&event.Header{})
	var sent atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sent.Store(i) // before: a save may see it as soon as Event stores it
			r.Event(ev(i, 3))
		}
	}()
	for range 50 {
		var m memSink
		st, err := r.Save(&m)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.events) == 0 {
			continue
		}
		for i := 1; i < len(m.events); i++ {
			if m.events[i].ID != m.events[i-1].ID+1 {
				t.Fatalf("saved events not contiguous: #%d after #%d", m.events[i].ID, m.events[i-1].ID)
			}
		}
		if last := m.events[len(m.events)-1].ID; last > sent.Load() || st.Kept != uint64(len(m.events)) {
			t.Fatalf("saved up to #%d, %d sent; stats %+v for %d events", last, sent.Load(), st, len(m.events))
		}
	}
	close(stop)
	<-done
}

// lapSink delivers a save, and feeds the ring more than it holds when the
// save's first event arrives: the recording overtakes the save.
type lapSink struct {
	memSink
	r    *Ring
	next uint64
	done bool
}

func (l *lapSink) Event(e *event.Event) error {
	if !l.done {
		l.done = true
		for i := 0; i < 50000; i++ {
			l.next++
			l.r.Event(ev(l.next, 3))
		}
	}
	return l.memSink.Event(e)
}

// TestSaveOvertaken: a save the recording overtakes (a slow disk) stops
// at the first chunk dropped meanwhile: what it wrote is the oldest part
// of the window, contiguous, and the events it could not write are
// counted as not saved.
func TestSaveOvertaken(t *testing.T) {
	r, _ := New(16 << 10)
	defer r.Close()
	r.Begin(&event.Header{})
	const n = 5000
	for i := uint64(1); i <= n; i++ {
		r.Event(ev(i, 3))
	}
	l := &lapSink{r: r, next: n}
	st, err := r.Save(l)
	if err != nil {
		t.Fatal(err)
	}
	if st.Unsaved == 0 || st.Kept != uint64(len(l.events)) || st.Kept+st.Overwritten+st.Unsaved != n {
		t.Fatalf("stats %+v, %d events saved", st, len(l.events))
	}
	if got := l.trailer.Stats.Get(event.CountLost, UnsavedCounter); got != st.Unsaved {
		t.Errorf("unsaved counter %d, want %d", got, st.Unsaved)
	}
	for i := 1; i < len(l.events); i++ {
		if l.events[i].ID != l.events[i-1].ID+1 {
			t.Fatalf("saved events not contiguous: #%d after #%d", l.events[i].ID, l.events[i-1].ID)
		}
	}
}

// BenchmarkRingEvent and BenchmarkWriterEvent compare the flight
// recorder's cost per event with record's .iot writer's (to io.Discard).
func BenchmarkRingEvent(b *testing.B) {
	r, _ := New(64 << 20)
	defer r.Close()
	r.Begin(&event.Header{})
	e := ev(1, 3)
	e.Path, e.Comm, e.Native = "/var/lib/data/file", "postgres", "pread64"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.ID, e.Time = uint64(i), int64(i)
		r.Event(e)
	}
}

// BenchmarkRingEventFull is BenchmarkRingEvent on a ring already full
// (every chunk sealed replaces one, its facts folded; no new page of the
// arena is touched).
func BenchmarkRingEventFull(b *testing.B) {
	r, _ := New(64 << 20)
	defer r.Close()
	r.Begin(&event.Header{})
	e := ev(1, 3)
	e.Path, e.Comm, e.Native = "/var/lib/data/file", "postgres", "pread64"
	for i := 0; r.Stats().Overwritten == 0; i++ {
		e.ID, e.Time = uint64(i), int64(i)
		r.Event(e)
	}
	b.ReportAllocs()
	b.ResetTimer()
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
	// Requests a second apart (the rate limit is not under test here; a
	// coarse clock, as Windows' under wine, gives two requests one time).
	clock := time.Unix(0, 0)
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	trig := &Trigger{Sink: r, Interval: time.Nanosecond, Now: tick, OnSave: func() {
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
