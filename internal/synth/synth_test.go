package synth

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/resolve"
)

var oses = []string{"linux", "windows"}

func TestDeterministic(t *testing.T) {
	for _, os := range oses {
		a := Trace(Options{OS: os, Seed: 7, Events: 3000})
		b := Trace(Options{OS: os, Seed: 7, Events: 3000})
		if err := Compare(a, b); err != nil {
			t.Fatalf("%s: same options, different traces:\n%v", os, err)
		}
		c := Trace(Options{OS: os, Seed: 8, Events: 3000})
		if Compare(a, c) == nil {
			t.Errorf("%s: seeds 7 and 8 gave the same trace", os)
		}
	}
}

func TestExactEventCount(t *testing.T) {
	for _, os := range oses {
		for _, n := range []int{1, 2, 3, 5, 17, MinEvents - 1, MinEvents, 999, 4000} {
			for seed := uint64(0); seed < 3; seed++ {
				r := Trace(Options{OS: os, Seed: seed, Events: n})
				if len(r.Events) != n {
					t.Fatalf("%s seed %d: asked %d events, got %d", os, seed, n, len(r.Events))
				}
				checkInvariants(t, os, r)
			}
		}
	}
	if r := Trace(Options{}); len(r.Events) != DefaultEvents || r.Header.OS != "linux" {
		t.Errorf("defaults: %d events, OS %q", len(r.Events), r.Header.OS)
	}
}

func TestBadOptions(t *testing.T) {
	if err := Generate(Options{OS: "plan9"}, NewRecorder()); err == nil || !strings.Contains(err.Error(), "plan9") {
		t.Errorf("unknown OS: %v", err)
	}
	if err := Generate(Options{Events: -1}, NewRecorder()); err == nil {
		t.Error("negative count accepted")
	}
}

// checkInvariants checks what every trace must satisfy.
func checkInvariants(t *testing.T, os string, r *Recorded) {
	t.Helper()
	if !r.Began || !r.Ended {
		t.Fatalf("began %v ended %v", r.Began, r.Ended)
	}
	// Time order of the whole stream, and unique IDs.
	last := int64(-1 << 62)
	ids := map[uint64]*event.Event{}
	for i, it := range r.Order {
		var ts int64
		if it.Kind == ItemEvent {
			e := &r.Events[it.Index]
			ts = e.Time
			if ids[e.ID] != nil {
				t.Fatalf("event %d: duplicate ID %d", it.Index, e.ID)
			}
			if e.ID == 0 {
				t.Fatalf("event %d: ID 0", it.Index)
			}
			ids[e.ID] = e
			if e.Layer != e.Op.Layer() {
				t.Fatalf("event %d: op %s on layer %s", it.Index, e.Op, e.Layer)
			}
			if e.Time+e.Duration > r.Trailer.End {
				t.Fatalf("event %d ends at %d after the trailer's end %d", it.Index, e.Time+e.Duration, r.Trailer.End)
			}
		} else {
			ts = r.Facts[it.Index].Time
		}
		if ts < last {
			t.Fatalf("stream item %d at %d comes after %d", i, ts, last)
		}
		last = ts
	}
	// Causes point back to earlier file events whose counts add up.
	ios := map[uint64]uint32{}
	bytes := map[uint64]uint64{}
	for i := range r.Events {
		e := &r.Events[i]
		if e.Cause == 0 {
			continue
		}
		c := ids[e.Cause]
		if c == nil {
			t.Fatalf("event %d: cause %d not in the trace", i, e.Cause)
		}
		if c.Layer != event.LayerFile || e.Layer != event.LayerBlock || c.Time > e.Time {
			t.Fatalf("event %d: bad cause link from %s to %s", i, e.Op, c.Op)
		}
		ios[e.Cause]++
		bytes[e.Cause] += e.Size
	}
	for id, e := range ids {
		if e.CausedIOs != ios[id] || e.CausedBytes != bytes[id] {
			t.Fatalf("event %d (%s): CausedIOs %d/%d bytes, linked blocks %d/%d", id, e.Op, e.CausedIOs, e.CausedBytes, ios[id], bytes[id])
		}
	}
	for i := range r.Events {
		e := &r.Events[i]
		if !utf8.ValidString(e.Path) {
			t.Fatalf("event %d: invalid UTF-8 path %q", i, e.Path)
		}
		if os == "windows" && e.FD != -1 || os == "linux" && (e.FileObject != 0 || e.FileKey != 0) {
			t.Fatalf("event %d: handle of the wrong OS: %+v", i, e)
		}
	}
	if got := r.Trailer.Stats.Get(event.CountInfo, "events generated"); got != uint64(len(r.Events)) {
		t.Fatalf("trailer counts %d events, trace has %d", got, len(r.Events))
	}
}

func TestCoverage(t *testing.T) {
	for _, os := range oses {
		for seed := uint64(0); seed < 5; seed++ {
			r := Trace(Options{OS: os, Seed: seed, Events: MinEvents})
			checkCoverage(t, os, r)
		}
	}
	// Every op appears in one OS or the other.
	all := map[event.Op]bool{}
	for _, os := range oses {
		for _, op := range Ops(os) {
			all[op] = true
		}
	}
	for op := event.Op(1); int(op) < event.NumOps; op++ {
		if !all[op] {
			t.Errorf("op %s is in no OS's trace", op)
		}
	}
}

func checkCoverage(t *testing.T, os string, r *Recorded) {
	t.Helper()
	win := os == "windows"
	ops := map[event.Op]int{}
	layers := map[event.Layer]bool{}
	var flags event.Flags
	statuses := map[event.Status]bool{}
	idleCPUs := map[uint32]bool{}
	var cacheHit, causedRead, writebackInode, marker, unicode, long, failedCode, handles bool
	for i := range r.Events {
		e := &r.Events[i]
		ops[e.Op]++
		layers[e.Layer] = true
		flags |= e.Flags
		statuses[e.Status] = true
		if e.Layer == event.LayerBlock && e.Tid == 0 && e.Pid == 0 {
			idleCPUs[e.CPU] = true
		}
		if e.Op == event.OpRead && e.Flags&event.FlagCacheHit != 0 && e.CausedIOs == 0 {
			cacheHit = true
		}
		if e.Op == event.OpRead && e.CausedIOs > 0 {
			causedRead = true
		}
		if e.Flags&event.FlagWriteback != 0 && (win || e.Inode != 0) {
			writebackInode = true
		}
		if e.Op == event.OpMarker && e.Note != "" {
			marker = true
		}
		for _, p := range []string{e.Path, e.Path2} {
			if utf8.RuneCountInString(p) != len(p) {
				unicode = true
			}
			if len(p) > 600 {
				long = true
			}
		}
		if e.Failed() && e.Code != 0 {
			failedCode = true
		}
		if win && e.FileObject != 0 && e.FileKey != 0 || !win && e.FD >= 3 {
			handles = true
		}
	}
	for _, op := range Ops(os) {
		if ops[op] == 0 {
			t.Errorf("%s: no %s event", os, op)
		}
	}
	for op := range ops {
		found := false
		for _, o := range Ops(os) {
			found = found || o == op
		}
		if !found {
			t.Errorf("%s: op %s is not in Ops(%s)", os, op, os)
		}
	}
	for _, l := range []event.Layer{event.LayerFile, event.LayerBlock, event.LayerMarker} {
		if !layers[l] {
			t.Errorf("%s: no %s layer", os, l)
		}
	}
	want := event.FlagDirect | event.FlagSync | event.FlagPreflush | event.FlagReadahead |
		event.FlagWriteback | event.FlagPaging | event.FlagNoCompletion | event.FlagNoStart |
		event.FlagCacheHit | event.FlagAppend | event.FlagCreated
	if !win {
		want |= event.FlagFUA | event.FlagMeta | event.FlagTruncated | event.FlagDiscard
	}
	if missing := want &^ flags; missing != 0 {
		t.Errorf("%s: flags never set: %s", os, missing)
	}
	for _, s := range []event.Status{event.StatusOK, event.StatusUnknown, event.StatusNotFound, event.StatusNoSpace, event.StatusExists} {
		if !statuses[s] {
			t.Errorf("%s: no event with status %s", os, s)
		}
	}
	if win && !statuses[event.StatusEOF] || !win && !statuses[event.StatusIOError] {
		t.Errorf("%s: statuses %v", os, statuses)
	}
	if len(idleCPUs) < 2 {
		t.Errorf("%s: idle-thread block completions on %d CPUs, want 2", os, len(idleCPUs))
	}
	for name, ok := range map[string]bool{
		"cache-hit read": cacheHit, "read with caused block I/O": causedRead,
		"writeback": writebackInode, "marker with note": marker, "unicode path": unicode,
		"long path": long, "failure with raw code": failedCode, "handles": handles,
	} {
		if !ok {
			t.Errorf("%s: no %s", os, name)
		}
	}

	kinds := map[event.FactKind]bool{}
	spaces := map[event.HandleSpace]bool{}
	var rundown, unbind, ppid bool
	starts := map[uint32]map[int64]bool{}
	for _, f := range r.Facts {
		kinds[f.Kind] = true
		if f.Kind == event.FactName {
			spaces[f.Space] = true
		}
		rundown = rundown || f.Rundown
		unbind = unbind || f.Kind == event.FactName && f.End
		if f.Kind == event.FactProcess && !f.End {
			ppid = ppid || f.PPid != 0 && f.Image != "" && f.Detail != ""
			if starts[f.Pid] == nil {
				starts[f.Pid] = map[int64]bool{}
			}
			starts[f.Pid][f.ProcStart] = true
		}
	}
	wantKinds := []event.FactKind{event.FactName, event.FactProcess, event.FactThread, event.FactDevice}
	wantSpaces := []event.HandleSpace{event.SpaceFD, event.SpaceCwd}
	if win {
		wantKinds = append(wantKinds, event.FactVolume)
		wantSpaces = []event.HandleSpace{event.SpaceFileObject, event.SpaceFileKey}
	}
	for _, k := range wantKinds {
		if !kinds[k] {
			t.Errorf("%s: no %s fact", os, k)
		}
	}
	for _, s := range wantSpaces {
		if !spaces[s] {
			t.Errorf("%s: no %s name fact", os, s)
		}
	}
	reused := false
	for _, s := range starts {
		reused = reused || len(s) > 1
	}
	if !rundown || !unbind || !ppid || !reused {
		t.Errorf("%s: rundown %v, unbind %v, process with ppid/image/cmdline %v, pid reuse %v", os, rundown, unbind, ppid, reused)
	}
	for _, k := range []event.CounterKind{event.CountLost, event.CountUnpaired, event.CountUnresolved, event.CountDropped} {
		if r.Trailer.Stats.Total(k) == 0 {
			t.Errorf("%s: trailer has no %s count: %+v", os, k, r.Trailer.Stats)
		}
	}
}

// resolveAll applies every fact first (two passes, as an offline reader
// does), then names every handle-based event.
func resolveAll(r *Recorded) (*resolve.Tables, func(e *event.Event) (string, bool)) {
	tab := resolve.NewTables()
	for i := range r.Facts {
		tab.Apply(&r.Facts[i])
	}
	return tab, func(e *event.Event) (string, bool) { return tab.FilePath(e) }
}

// TestFactsResolveEveryNamedHandle checks that the facts are complete and
// consistent: resolving the raw trace gives exactly what the Resolved
// trace carries, and exactly the unresolved count of the trailer fails.
func TestFactsResolveEveryNamedHandle(t *testing.T) {
	for _, os := range oses {
		for seed := uint64(0); seed < 3; seed++ {
			o := Options{OS: os, Seed: seed, Events: 5000}
			raw := Trace(o)
			o.Resolved = true
			res := Trace(o)
			if len(raw.Events) != len(res.Events) {
				t.Fatal("resolved trace has another length")
			}
			_, lookup := resolveAll(raw)
			var unresolved uint64
			for i := range raw.Events {
				e, want := &raw.Events[i], &res.Events[i]
				resolvable := e.Path == "" && e.HasHandle() && e.Layer == event.LayerFile
				if !resolvable {
					continue
				}
				got, ok := lookup(e)
				if !ok {
					unresolved++
					if want.Path != "" {
						t.Fatalf("%s seed %d event %d (%s %s): unresolved, resolved trace says %q", os, seed, i, e.Op, e.Native, want.Path)
					}
					continue
				}
				if got != want.Path {
					t.Fatalf("%s seed %d event %d (%s %s fd %d fo %#x key %#x): resolved %q, want %q", os, seed, i, e.Op, e.Native, e.FD, e.FileObject, e.FileKey, got, want.Path)
				}
			}
			if c := raw.Trailer.Stats.Total(event.CountUnresolved); c != unresolved {
				t.Errorf("%s seed %d: %d events unresolved, trailer says %d", os, seed, unresolved, c)
			}
			// Comm: Linux events carry it; Windows events get it from
			// process facts.
			tab, _ := resolveAll(raw)
			for i := range raw.Events {
				e := &raw.Events[i]
				if e.Pid == 0 {
					continue
				}
				if os == "linux" && e.Comm == "" {
					t.Fatalf("linux event %d without comm", i)
				}
				if os == "windows" {
					name, ok := tab.ProcessName(e.Pid, e.Time)
					if !ok || name != res.Events[i].Comm {
						t.Fatalf("windows event %d pid %d: process name %q %v, want %q", i, e.Pid, name, ok, res.Events[i].Comm)
					}
				}
			}
		}
	}
}

func TestRecorderReplayCompare(t *testing.T) {
	for _, os := range oses {
		want := Trace(Options{OS: os, Events: 500, Seed: 3})
		rec := NewRecorder()
		if err := want.Replay(rec); err != nil {
			t.Fatal(err)
		}
		if err := Compare(want, rec.Trace()); err != nil {
			t.Fatalf("replay differs:\n%v", err)
		}
		// A changed field is named.
		rec.Events[10].Offset++
		rec.Trailer.Stats.Counters[0].Value++
		err := Compare(want, rec.Trace())
		if err == nil || !strings.Contains(err.Error(), "event 10.Offset") || !strings.Contains(err.Error(), "trailer counter 0") {
			t.Fatalf("Compare did not name the changes: %v", err)
		}
	}
	// The recorder copies: changing what it was given changes nothing.
	rec := NewRecorder()
	h := event.Header{OS: "linux"}
	_ = rec.Begin(&h)
	e := event.New()
	e.Path = "/a"
	_ = rec.Event(&e)
	e.Path = "/b"
	tr := event.Trailer{}
	tr.Stats.Add(event.CountLost, "x", 1)
	_ = rec.End(&tr)
	tr.Stats.Counters[0].Value = 99
	if rec.Events[0].Path != "/a" || rec.Trailer.Stats.Counters[0].Value != 1 {
		t.Error("recorder kept references")
	}
	// Protocol violations are errors.
	if err := rec.Event(&e); err == nil {
		t.Error("event after End accepted")
	}
	if err := NewRecorder().Fact(&event.Fact{}); err == nil {
		t.Error("fact before Begin accepted")
	}
}

type failingSink struct {
	Recorder
	after int
}

var errStop = errors.New("stop")

func (s *failingSink) Event(e *event.Event) error {
	if len(s.Events) == s.after {
		return errStop
	}
	return s.Recorder.Event(e)
}

func TestSinkErrorStops(t *testing.T) {
	s := &failingSink{after: 10}
	if err := Generate(Options{Events: 1000}, s); !errors.Is(err, errStop) {
		t.Fatalf("got %v", err)
	}
	if len(s.Events) != 10 || s.Ended {
		t.Errorf("kept going after the error: %d events, ended %v", len(s.Events), s.Ended)
	}
}

func TestAllFields(t *testing.T) {
	evs := AllFields()
	if len(evs) != event.NumOps-1 {
		t.Fatalf("%d events, want %d", len(evs), event.NumOps-1)
	}
	for i, e := range evs {
		if u := without(unset(e, event.New()), stackFields); len(u) > 0 {
			t.Errorf("event %d (%s): fields left at their none value: %v", i, e.Op, u)
		}
		if e.Op != event.Op(i+1) {
			t.Errorf("event %d has op %s", i, e.Op)
		}
	}
	r := AllFieldsTrace()
	rec := NewRecorder()
	if err := r.Replay(rec); err != nil {
		t.Fatal(err)
	}
	if err := Compare(r, rec.Trace()); err != nil {
		t.Fatal(err)
	}
	for i, f := range r.Facts {
		if u := without(unset(f, event.Fact{}), stackFields); len(u) > 0 {
			t.Errorf("fact %d: fields left zero: %v", i, u)
		}
	}
	if u := unset(r.Header, event.Header{}); len(u) > 0 {
		t.Errorf("header: fields left zero: %v", u)
	}
	for _, c := range r.Trailer.Stats.Counters {
		if c.Name == "" || c.Value == 0 {
			t.Errorf("counter %+v", c)
		}
	}
}

// unset names the fields of struct v equal to those of none.
// stackFields are the fields of format version 3 (stacks and modules):
// AllFields leaves them out, so that every format version can hold it;
// StacksTrace sets them (TestStacksTrace).
var stackFields = map[string]bool{"Stack": true, "Size": true, "Offset": true, "Vaddr": true, "Flags": true, "Kernel": true, "User": true}

func without(names []string, drop map[string]bool) []string {
	var out []string
	for _, n := range names {
		if !drop[n] {
			out = append(out, n)
		}
	}
	return out
}

func TestStacksTrace(t *testing.T) {
	r := StacksTrace()
	set := map[string]bool{}
	for _, e := range r.Events {
		if e.Stack != 0 {
			set["Stack"] = true
		}
	}
	for _, f := range r.Facts {
		all := map[string]bool{}
		for _, n := range unset(f, event.Fact{}) {
			all[n] = true
		}
		for n := range stackFields {
			if n != "Stack" && !all[n] {
				set[n] = true
			}
		}
	}
	for n := range stackFields {
		if !set[n] {
			t.Errorf("StacksTrace sets %s nowhere", n)
		}
	}
	rec := NewRecorder()
	if err := r.Replay(rec); err != nil {
		t.Fatal(err)
	}
	if err := Compare(r, rec.Trace()); err != nil {
		t.Fatal(err)
	}
}

func unset(v, none any) []string {
	a, b := reflect.ValueOf(v), reflect.ValueOf(none)
	var out []string
	for i := 0; i < a.NumField(); i++ {
		if reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, a.Type().Field(i).Name)
		}
	}
	return out
}

func TestVariants(t *testing.T) {
	for _, os := range oses {
		for seed := uint64(0); seed < 4; seed++ {
			for _, p := range []int{1, 2, 9} {
				r := Trace(Options{OS: os, Seed: seed, Events: MinEvents, Processes: p, CPUs: 2})
				checkInvariants(t, os, r)
				checkCoverage(t, os, r)
				r = Trace(Options{OS: os, Seed: seed, Events: 2000, Processes: p, CPUs: 1, BlockPercent: 100, Resolved: true})
				checkInvariants(t, os, r)
			}
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, os := range oses {
		b.Run(os, func(b *testing.B) {
			var s nopSink
			for b.Loop() {
				if err := Generate(Options{OS: os, Events: 10_000}, &s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10_000), "ns/event")
		})
	}
}

type nopSink struct{}

func (nopSink) Begin(*event.Header) error { return nil }
func (nopSink) Event(*event.Event) error  { return nil }
func (nopSink) Fact(*event.Fact) error    { return nil }
func (nopSink) End(*event.Trailer) error  { return nil }
