package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

func ev(mod func(e *event.Event)) *event.Event {
	e := event.New()
	e.Layer, e.Op, e.Pid, e.Tid, e.Comm, e.Path = event.LayerFile, event.OpRead, 10, 11, "make", "/src/a/b/main.c"
	e.Status, e.Duration = event.StatusOK, 1000
	if mod != nil {
		mod(&e)
	}
	return &e
}

func TestMatch(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		e    *event.Event
		want bool
	}{
		{"zero", Options{}, ev(nil), true},
		{"pid", Options{Pids: []uint32{10}}, ev(nil), true},
		{"pid other", Options{Pids: []uint32{12}}, ev(nil), false},
		{"comm glob", Options{Comms: []string{"ma*"}}, ev(nil), true},
		{"comm exact only", Options{Comms: []string{"mak"}}, ev(nil), false},
		{"op", Options{Ops: []event.Op{event.OpWrite, event.OpRead}}, ev(nil), true},
		{"op other", Options{Ops: []event.Op{event.OpWrite}}, ev(nil), false},
		{"layer", Options{Layers: []event.Layer{event.LayerBlock}}, ev(nil), false},
		{"latency", Options{MinLatency: time.Microsecond}, ev(nil), true},
		{"latency short", Options{MinLatency: 2 * time.Microsecond}, ev(nil), false},
		{"failed", Options{Failed: true}, ev(nil), false},
		{"failed yes", Options{Failed: true}, ev(func(e *event.Event) { e.Status = event.StatusDenied }), true},
		{"eof is not failure", Options{Failed: true}, ev(func(e *event.Event) { e.Status = event.StatusEOF }), false},
		{"basename glob", Options{PathGlobs: []string{"*.c"}}, ev(nil), true},
		{"basename glob no", Options{PathGlobs: []string{"*.h"}}, ev(nil), false},
		{"anchored", Options{PathGlobs: []string{"/src/*/*/main.c"}}, ev(nil), true},
		{"anchored too short", Options{PathGlobs: []string{"/src/*/main.c"}}, ev(nil), false},
		{"doublestar", Options{PathGlobs: []string{"/src/**/main.c"}}, ev(nil), true},
		{"doublestar zero elems", Options{PathGlobs: []string{"/src/a/b/**/main.c"}}, ev(nil), true},
		{"doublestar tail", Options{PathGlobs: []string{"/src/**"}}, ev(nil), true},
		{"doublestar lead", Options{PathGlobs: []string{"**/b/*.c"}}, ev(nil), true},
		{"doublestar no", Options{PathGlobs: []string{"/usr/**"}}, ev(nil), false},
		{"rename target", Options{PathGlobs: []string{"*.bak"}}, ev(func(e *event.Event) { e.Path2 = "/src/x.bak" }), true},
		{"no path", Options{PathGlobs: []string{"**"}}, ev(func(e *event.Event) { e.Path = "" }), false},
		{"alternatives", Options{PathGlobs: []string{"/src/{x,a}/**/*.{h,c}"}}, ev(nil), true},
		{"alternatives basename", Options{PathGlobs: []string{"*.{h,c}"}}, ev(nil), true},
		{"alternatives no", Options{PathGlobs: []string{"/src/{x,y}/**"}}, ev(nil), false},
		{"comm alternatives", Options{Comms: []string{"{cc,ma*}"}}, ev(nil), true},
		{"star within element", Options{PathGlobs: []string{"/src/*/main.c"}}, ev(nil), false},
		{"marker passes pid", Options{Pids: []uint32{99}}, ev(func(e *event.Event) { e.Layer, e.Op = event.LayerMarker, event.OpMarker }), true},
		{"marker dropped by op", Options{Ops: []event.Op{event.OpRead}}, ev(func(e *event.Event) { e.Layer, e.Op = event.LayerMarker, event.OpMarker }), false},
		{"all", Options{Pids: []uint32{10}, Comms: []string{"make"}, PathGlobs: []string{"*.c"}, Ops: []event.Op{event.OpRead}, Layers: []event.Layer{event.LayerFile}}, ev(nil), true},
	}
	for _, c := range cases {
		f, err := New(c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := f.Match(c.e); got != c.want {
			t.Errorf("%s: Match = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestWindowsPathsFoldCase(t *testing.T) {
	f, err := New(Options{PathGlobs: []string{`c:\windows\**\*.DLL`}, Comms: []string{"explorer.exe"}})
	if err != nil {
		t.Fatal(err)
	}
	e := ev(func(e *event.Event) { e.Path, e.Comm = `C:\Windows\System32\KERNEL32.dll`, "Explorer.EXE" })
	if f.Match(e) {
		t.Error("matched case-insensitively before SetOS(windows)")
	}
	f.SetOS("windows")
	if !f.Match(e) {
		t.Error("Windows path and name did not match case-insensitively")
	}
}

func TestValidation(t *testing.T) {
	for _, o := range []Options{
		{PathGlobs: []string{"[a"}},
		{PathGlobs: []string{"/a/b**"}},
		{PathGlobs: []string{"/a/[!]"}},
		{PathGlobs: []string{"/a/{b,c"}},
		{Comms: []string{"{cc,ld"}},
		{Comms: []string{"[x"}},
		{FollowChildren: true},
		{MinLatency: -1},
		{Ops: []event.Op{event.OpUnknown}},
		{Layers: []event.Layer{event.Layer(77)}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted bad options", o)
		}
	}
}

func TestFlags(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	AddFlags(fs, &o)
	err := fs.Parse([]string{"--pid", "1,2", "--pid=3", "--follow-children", "--comm", "a,b", "--path", "/x/**",
		"--path", "*.c", "--op", "read,write", "--op", "fsync", "--layer", "block", "--min-latency", "1ms", "--failed"})
	if err != nil {
		t.Fatal(err)
	}
	want := "--pid 1,2,3 --follow-children --comm a --comm b --path /x/** --path *.c --op read --op write --op flush --layer block --min-latency 1ms --failed"
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.String(); got != want {
		t.Errorf("flags parsed to\n %s\nwant\n %s", got, want)
	}
	fs = pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	AddFlags(fs, &Options{})
	err = fs.Parse([]string{"--op", "frobnicate"})
	if err == nil || !strings.Contains(err.Error(), "unknown op \"frobnicate\"") || !strings.Contains(err.Error(), "open, read, write") {
		t.Errorf("bad op: %v", err)
	}
	err = fs.Parse([]string{"--pid", "x"})
	if err == nil || !strings.Contains(err.Error(), `pid "x" is not a number`) {
		t.Errorf("bad pid: %v", err)
	}
}

func TestPushDown(t *testing.T) {
	o := Options{Pids: []uint32{5}, FollowChildren: true, Comms: []string{"a", "b"}, Ops: []event.Op{event.OpBlockRead, event.OpRead}, PathGlobs: []string{"*.c"}}
	var b backend.Options
	o.PushDown(&b)
	if len(b.Pids) != 1 || !b.FollowChildren || len(b.Comms) != 2 || len(b.Ops) != 2 || len(b.Layers) != 2 {
		t.Errorf("pushed down %+v", b)
	}
	o.Comms = []string{"a", "b*"}
	o.PushDown(&b)
	if b.Comms != nil {
		t.Errorf("a glob comm was pushed down: %v", b.Comms)
	}
}

// collect records what reaches the end of a sink chain.
type collect struct {
	events  []uint32
	facts   int
	trailer event.Trailer
	header  event.Header
}

func (c *collect) Begin(h *event.Header) error { c.header = *h; return nil }
func (c *collect) Event(e *event.Event) error  { c.events = append(c.events, e.Pid); return nil }
func (c *collect) Fact(*event.Fact) error      { c.facts++; return nil }
func (c *collect) End(t *event.Trailer) error  { c.trailer = *t; return nil }

// TestSinkNarrowsLayers: the layers a trace says it traced lose those the
// filter leaves out (--layer, or --op of one layer), in the header and in
// a trailer that narrows it; a trace that does not say stays silent.
func TestSinkNarrowsLayers(t *testing.T) {
	file, both := event.LayersOf(event.LayerFile), event.LayersOf(event.LayerFile, event.LayerBlock)
	block := event.LayersOf(event.LayerBlock)
	for _, c := range []struct {
		opts                    Options
		header, trailer         event.Layers
		wantHeader, wantTrailer event.Layers
	}{
		{Options{Layers: []event.Layer{event.LayerFile}}, both, 0, file, 0},
		{Options{Ops: []event.Op{event.OpRead}}, both, both, file, file},
		{Options{Ops: []event.Op{event.OpRead, event.OpBlockRead}}, both, 0, both, 0},
		{Options{Layers: []event.Layer{event.LayerFile}}, 0, 0, 0, 0},
		{Options{Pids: []uint32{1}}, both, file, both, file},
		// All said traced filtered out: none, not "not said"; a trailer
		// narrowing to a layer filtered out says none too.
		{Options{Layers: []event.Layer{event.LayerBlock}}, file, 0, event.LayersNone, 0},
		{Options{Layers: []event.Layer{event.LayerBlock}}, both, file, block, event.LayersNone},
	} {
		f, err := New(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		var col collect
		s := f.Sink(&col)
		if err := s.Begin(&event.Header{OS: "linux", Layers: c.header}); err != nil {
			t.Fatal(err)
		}
		if err := s.End(&event.Trailer{Layers: c.trailer}); err != nil {
			t.Fatal(err)
		}
		if col.header.Layers != c.wantHeader || col.trailer.Layers != c.wantTrailer {
			t.Errorf("%+v, header %q, trailer %q: got %q and %q, want %q and %q", c.opts, c.header, c.trailer,
				col.header.Layers, col.trailer.Layers, c.wantHeader, c.wantTrailer)
		}
	}
}

func TestSinkFollowsChildrenThroughFacts(t *testing.T) {
	f, err := New(Options{Pids: []uint32{100}, FollowChildren: true})
	if err != nil {
		t.Fatal(err)
	}
	var c collect
	s := f.Sink(&c)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Begin(&event.Header{OS: "linux"}))
	emit := func(pid uint32) { must(s.Event(ev(func(e *event.Event) { e.Pid = pid }))) }
	proc := func(pid, ppid uint32) {
		must(s.Fact(&event.Fact{Kind: event.FactProcess, Pid: pid, PPid: ppid}))
	}
	// A grandchild known from a rundown listed before its parent.
	proc(102, 101)
	emit(100)
	emit(101) // not yet known as a child
	proc(101, 100)
	emit(101)
	emit(102)
	emit(200)
	proc(300, 300) // a loop must not hang
	emit(300)
	must(s.End(&event.Trailer{}))
	want := []uint32{100, 101, 102}
	if len(c.events) != len(want) {
		t.Fatalf("events from pids %v, want %v", c.events, want)
	}
	for i := range want {
		if c.events[i] != want[i] {
			t.Fatalf("events from pids %v, want %v", c.events, want)
		}
	}
	if c.facts != 3 {
		t.Errorf("%d facts forwarded, want 3", c.facts)
	}
	if got := c.trailer.Stats.Get(event.CountInfo, FilteredOut); got != 3 {
		t.Errorf("filtered-out counter %d, want 3", got)
	}
}

func TestZeroFilterIsTransparent(t *testing.T) {
	f, _ := New(Options{})
	var c collect
	if f.Sink(&c) != event.Sink(&c) {
		t.Error("a filter that selects everything should not wrap the sink")
	}
}

func BenchmarkMatch(b *testing.B) {
	f, err := New(Options{Pids: []uint32{10, 20}, PathGlobs: []string{"/src/**/*.c"}, Ops: []event.Op{event.OpRead}, MinLatency: 500})
	if err != nil {
		b.Fatal(err)
	}
	e := ev(nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !f.Match(e) {
			b.Fatal("no match")
		}
	}
}
