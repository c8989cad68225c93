package resolve

import (
	"testing"

	"github.com/iotrace/iotrace/event"
)

func TestHistoryLifetime(t *testing.T) {
	h := NewHistory[uint64]()
	h.Bind(1, 10, "/a")
	h.Unbind(1, 20)
	h.Bind(1, 30, "/b")
	cases := []struct {
		t    int64
		want string
		ok   bool
	}{
		{5, "", false}, {10, "/a", true}, {15, "/a", true},
		{20, "/a", true}, // the closing event itself still resolves
		{25, "", false}, {30, "/b", true}, {1 << 40, "/b", true},
	}
	for _, c := range cases {
		got, ok := h.Lookup(1, c.t)
		if got != c.want || ok != c.ok {
			t.Errorf("Lookup(1, %d) = %q, %v; want %q, %v", c.t, got, ok, c.want, c.ok)
		}
	}
}

func TestHistoryRebindAtSameTime(t *testing.T) {
	h := NewHistory[int]()
	h.Bind(7, 10, "/old")
	h.Bind(7, 20, "/new") // implicit end of /old at 20
	if got, _ := h.Lookup(7, 19); got != "/old" {
		t.Errorf("at 19: %q", got)
	}
	if got, _ := h.Lookup(7, 20); got != "/new" {
		t.Errorf("at 20: %q, want the later binding", got)
	}
}

// TestHistoryRebindSameInstant: a key bound again and again at one time
// (a file renamed back and forth within one timestamp) keeps one
// binding, the last, and lookups find what they found before: the last
// name from that time on, the earlier binding before it.
func TestHistoryRebindSameInstant(t *testing.T) {
	h := NewHistory[int]()
	h.Bind(7, 10, "/old")
	for i := 0; i < 1000; i++ {
		h.Bind(7, 20, []string{"/a", "/b"}[i%2])
	}
	if n := len(h.Spans(7)); n != 2 {
		t.Errorf("%d bindings kept, want 2: %+v", n, h.Spans(7))
	}
	for _, c := range []struct {
		t    int64
		want string
	}{{10, "/old"}, {19, "/old"}, {20, "/b"}, {1 << 40, "/b"}} {
		if got, _ := h.Lookup(7, c.t); got != c.want {
			t.Errorf("at %d: %q, want %q", c.t, got, c.want)
		}
	}
}

// TestHistoryBindUnbindSameInstant: a key bound and unbound again and
// again at one time (a file created and closed, named and deleted within
// one timestamp) keeps the bindings lookups can find, not one per fact.
func TestHistoryBindUnbindSameInstant(t *testing.T) {
	h := NewHistory[int]()
	for i := 0; i < 1000; i++ {
		h.Bind(1, 20, "/a") // created and closed at 20
		h.Unbind(1, 20)
		h.BindRundown(2, 20, "/b") // named and deleted at 20
		h.Unbind(2, 20)
	}
	if n1, n2 := len(h.Spans(1)), len(h.Spans(2)); n1 != 1 || n2 != 1 {
		t.Errorf("bindings kept: %d and %d, want 1 each: %+v %+v", n1, n2, h.Spans(1), h.Spans(2))
	}
	for _, c := range []struct {
		k    int
		t    int64
		want string
		ok   bool
	}{{1, 19, "", false}, {1, 20, "/a", true}, {1, 21, "", false}, {2, 0, "/b", true}, {2, 20, "/b", true}, {2, 21, "", false}} {
		if got, ok := h.Lookup(c.k, c.t); got != c.want || ok != c.ok {
			t.Errorf("key %d at %d: %q %v, want %q %v", c.k, c.t, got, ok, c.want, c.ok)
		}
	}
}

func TestHistoryRundownRetroactive(t *testing.T) {
	h := NewHistory[int]()
	// A rundown at the end of the trace names a key never seen before:
	// it applies to the whole trace.
	h.BindRundown(1, 1000, "/rundown")
	if got, ok := h.Lookup(1, 5); !ok || got != "/rundown" {
		t.Errorf("retroactive rundown: %q %v", got, ok)
	}
	// A key bound during the trace keeps its name.
	h.Bind(2, 10, "/created")
	h.BindRundown(2, 1000, "/other")
	if got, _ := h.Lookup(2, 500); got != "/created" {
		t.Errorf("rundown overrode a live binding: %q", got)
	}
	if got, ok := h.Lookup(2, 5); ok {
		t.Errorf("before its creation key 2 resolved to %q", got)
	}
	// A key whose binding ended is named from that end on.
	h.Bind(3, 10, "/deleted")
	h.Unbind(3, 20)
	h.BindRundown(3, 1000, "/reused")
	if got, _ := h.Lookup(3, 15); got != "/deleted" {
		t.Errorf("at 15: %q", got)
	}
	if got, _ := h.Lookup(3, 50); got != "/reused" {
		t.Errorf("at 50: %q", got)
	}
}

func TestResolverFillsPathsAtReadTime(t *testing.T) {
	tb := NewTables()
	for _, f := range []event.Fact{
		{Kind: event.FactName, Space: event.SpaceCwd, Pid: 7, Name: "/src", Rundown: true},
		{Kind: event.FactName, Space: event.SpaceFD, Pid: 7, Handle: 3, Name: "/src/a.c", Time: 10},
		{Kind: event.FactName, Space: event.SpaceFD, Pid: 7, Handle: 3, Time: 20, End: true},
		{Kind: event.FactVolume, Name: `\Device\HarddiskVolume2`, Image: `C:`},
		{Kind: event.FactName, Space: event.SpaceFileKey, Handle: 0xfa, Name: `\Device\HarddiskVolume2\Windows\a.dll`, Time: 1000, Rundown: true},
		{Kind: event.FactProcess, Pid: 7, Name: "cc", Time: 0, Rundown: true},
	} {
		tb.Apply(&f)
	}
	r := &Resolver{next: nopSink{}, Tables: tb}
	cases := []struct {
		e         event.Event
		path      string
		unresolve uint64
	}{
		{event.Event{Layer: event.LayerFile, Pid: 7, FD: 3, Time: 15}, "/src/a.c", 0},
		{event.Event{Layer: event.LayerFile, Pid: 7, FD: 3, Time: 20}, "/src/a.c", 0}, // the close itself
		{event.Event{Layer: event.LayerFile, Pid: 7, FD: 3, Time: 21}, "", 1},
		{event.Event{Layer: event.LayerFile, Pid: 7, FD: -1, Path: "b/c.h", Time: 5}, "b/c.h", 1}, // a path the source set is kept
		{event.Event{Layer: event.LayerBlock, FD: -1, FileKey: 0xfa, Time: 5}, `C:\Windows\a.dll`, 1},
	}
	for i, c := range cases {
		e := c.e
		r.Resolve(&e)
		if e.Path != c.path || r.Unresolved != c.unresolve {
			t.Errorf("case %d: path %q unresolved %d; want %q, %d", i, e.Path, r.Unresolved, c.path, c.unresolve)
		}
	}
	var tr event.Trailer
	tr.Stats.Set(event.CountUnresolved, UnresolvedCounter, 99) // left by an earlier read
	if err := r.End(&tr); err != nil {
		t.Fatal(err)
	}
	if n := tr.Stats.Get(event.CountUnresolved, UnresolvedCounter); n != 1 {
		t.Errorf("unresolved counted %d times, want 1 (stale count replaced)", n)
	}
}

type nopSink struct{}

func (nopSink) Begin(*event.Header) error { return nil }
func (nopSink) Event(*event.Event) error  { return nil }
func (nopSink) Fact(*event.Fact) error    { return nil }
func (nopSink) End(*event.Trailer) error  { return nil }
