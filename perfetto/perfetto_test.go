package perfetto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

type traceEvent struct {
	Ph   string         `json:"ph"`
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Pid  *int64         `json:"pid"`
	Tid  *int64         `json:"tid"`
	Ts   *float64       `json:"ts"`
	Dur  *float64       `json:"dur"`
	ID   uint64         `json:"id"`
	BP   string         `json:"bp"`
	Args map[string]any `json:"args"`
}

type document struct {
	DisplayTimeUnit string       `json:"displayTimeUnit"`
	TraceEvents     []traceEvent `json:"traceEvents"`
	Iotrace         struct {
		Complete bool `json:"complete"`
		Problems []struct {
			Kind  string `json:"kind"`
			Name  string `json:"name"`
			Value uint64 `json:"value"`
		} `json:"problems"`
	} `json:"iotrace"`
}

func ev(id uint64, layer event.Layer, op event.Op, pid, tid, cpu uint32, t, d int64) event.Event {
	e := event.New()
	e.ID, e.Layer, e.Op, e.Pid, e.Tid, e.CPU, e.Time, e.Duration = id, layer, op, pid, tid, cpu, t, d
	e.Status = event.StatusOK
	e.Comm = fmt.Sprintf("p%d", pid)
	return e
}

// sample: p10 reads (each causing two bios), an async pair of overlapping
// reads on one thread, file events on the idle threads of CPU 0 and 1, a
// reused pid, a bio delivered before its cause, a bio whose cause is
// missing, and a marker.
func sample() (facts []event.Fact, evs []event.Event) {
	facts = []event.Fact{
		{Kind: event.FactProcess, Pid: 10, Name: "reader"},
		{Kind: event.FactDevice, Dev: event.Device{Major: 8}, Name: "vda"},
	}
	id := uint64(100)
	next := func() uint64 { id++; return id }
	ts := int64(1_000)
	for i := 0; i < 5; i++ {
		r := ev(next(), event.LayerFile, event.OpRead, 10, 11, 0, ts, 50_000)
		r.Path, r.Bytes, r.Offset, r.FD, r.CausedIOs, r.CausedBytes = "/data/\"x\".bin", 8192, int64(i)*8192, 3, 2, 8192
		bios := []event.Event{}
		for j := 0; j < 2; j++ {
			b := ev(next(), event.LayerBlock, event.OpBlockRead, 10, 11, 0, ts+1000+int64(j)*500, 30_000)
			b.Dev, b.Sector, b.Bytes, b.Wait, b.Cause = event.Device{Major: 8}, uint64(i*16+j*8), 4096, 5000, r.ID
			bios = append(bios, b)
		}
		if i == 3 { // completion order: the bios before the syscall
			evs = append(evs, bios...)
			evs = append(evs, r)
		} else {
			evs = append(evs, r)
			evs = append(evs, bios...)
		}
		ts += 60_000
	}
	// Two overlapping (not nested) async reads on thread 12.
	a1 := ev(next(), event.LayerFile, event.OpRead, 10, 12, 1, 2_000, 10_000)
	a2 := ev(next(), event.LayerFile, event.OpRead, 10, 12, 1, 5_000, 10_000)
	evs = append(evs, a1, a2)
	// Idle threads of two CPUs.
	evs = append(evs, ev(next(), event.LayerFile, event.OpFlush, 0, 0, 0, 3_000, 100), ev(next(), event.LayerFile, event.OpFlush, 0, 0, 1, 3_000, 100))
	// pid 20 reused by a second process.
	p1 := ev(next(), event.LayerFile, event.OpOpen, 20, 20, 0, 4_000, 100)
	p2 := ev(next(), event.LayerFile, event.OpOpen, 20, 20, 0, 900_000, 100)
	p1.ProcStart, p2.ProcStart = 10, 800_000
	p2.Comm = "second"
	evs = append(evs, p1, p2)
	// A bio whose cause is not in the trace.
	orphan := ev(next(), event.LayerBlock, event.OpBlockWrite, 30, 30, 0, 500_000, 1000)
	orphan.Dev, orphan.Bytes, orphan.Cause = event.Device{Major: 8}, 4096, 99999
	evs = append(evs, orphan)
	m := ev(next(), event.LayerMarker, event.OpMarker, 10, 11, 0, 100, 0)
	m.Note = "start\nphase"
	// A marker from a process not seen before (its name is emitted first).
	m2 := ev(next(), event.LayerMarker, event.OpMarker, 77, 77, 0, 200, 0)
	evs = append([]event.Event{m2}, append(evs, m)...)
	return facts, evs
}

func write(t *testing.T, opts Options) (*Writer, document, string) {
	t.Helper()
	facts, evs := sample()
	var buf bytes.Buffer
	w := New(&buf, opts)
	if err := w.Begin(&event.Header{OS: "linux", Hostname: "box"}); err != nil {
		t.Fatal(err)
	}
	for i := range facts {
		w.Fact(&facts[i])
	}
	for i := range evs {
		if err := w.Event(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.End(&event.Trailer{End: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	var doc document
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
	}
	return w, doc, buf.String()
}

func TestValidates(t *testing.T) {
	w, doc, raw := write(t, Options{})
	if !doc.Iotrace.Complete || doc.DisplayTimeUnit != "ns" {
		t.Errorf("document: %+v", doc.Iotrace)
	}
	type key struct{ pid, tid int64 }
	slices := map[key][]traceEvent{}
	threadNames := map[key]string{}
	procNames := map[int64]string{}
	starts, finishes := map[uint64]traceEvent{}, map[uint64]traceEvent{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "X":
			if e.Ts == nil || e.Dur == nil || e.Pid == nil || e.Tid == nil {
				t.Fatalf("X without ts/dur/pid/tid: %+v", e)
			}
			if *e.Dur < 0 {
				t.Errorf("negative duration: %+v", e)
			}
			slices[key{*e.Pid, *e.Tid}] = append(slices[key{*e.Pid, *e.Tid}], e)
		case "M":
			if e.Name == "thread_name" {
				threadNames[key{*e.Pid, *e.Tid}] = e.Args["name"].(string)
			} else if e.Name == "process_name" {
				procNames[*e.Pid] = e.Args["name"].(string)
			}
		case "s":
			if _, dup := starts[e.ID]; dup {
				t.Errorf("flow id %d starts twice", e.ID)
			}
			starts[e.ID] = e
		case "f":
			if e.BP != "e" {
				t.Errorf("flow end without bp=e: %+v", e)
			}
			finishes[e.ID] = e
		case "C", "i":
		default:
			t.Errorf("unexpected phase %q", e.Ph)
		}
	}
	// Slices nest properly on every track.
	for k, list := range slices {
		checkNesting(t, fmt.Sprint(k), list)
		if _, ok := threadNames[k]; !ok {
			t.Errorf("track %v has no thread name", k)
		}
	}
	// Flows pair, and each end lies inside a slice on its own track.
	if len(starts) != 10 || len(finishes) != 10 {
		t.Errorf("flows: %d starts, %d ends, want 10 each", len(starts), len(finishes))
	}
	inside := func(e traceEvent, cat string) bool {
		for _, s := range slices[key{*e.Pid, *e.Tid}] {
			if s.Cat == cat && *s.Ts <= *e.Ts && *e.Ts <= *s.Ts+*s.Dur {
				return true
			}
		}
		return false
	}
	for id, s := range starts {
		f, ok := finishes[id]
		if !ok {
			t.Errorf("flow %d has no end", id)
			continue
		}
		if !inside(s, "file") || !inside(f, "block") {
			t.Errorf("flow %d: start %+v or end %+v not inside a slice", id, s, f)
		}
	}
	// Timestamps are microseconds: the first read starts at 1000 ns.
	found := false
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" && e.Name == "read" && *e.Ts == 1 && *e.Dur == 50 {
			found = true
		}
	}
	if !found {
		t.Error("no read slice at ts 1 µs with dur 50 µs")
	}
	// Idle threads of two CPUs stay apart; the reused pid has two processes.
	idle := 0
	for _, n := range threadNames {
		if strings.HasPrefix(n, "idle (cpu ") {
			idle++
		}
	}
	if idle != 2 {
		t.Errorf("idle thread tracks: %d, want 2 (%v)", idle, threadNames)
	}
	reused := 0
	for _, n := range procNames {
		if n == "second (pid 20, reused)" || n == "p20" {
			reused++
		}
	}
	if reused != 2 || procNames[10] != "reader" {
		t.Errorf("process names %v", procNames)
	}
	// The async reads went to two lanes of thread 12.
	lanes := 0
	for _, n := range threadNames {
		if strings.HasPrefix(n, "p10 12") {
			lanes++
		}
	}
	if lanes != 2 {
		t.Errorf("thread 12 lanes: %d (%v)", lanes, threadNames)
	}
	// The orphan bio is counted.
	if s := w.Stats(); s.Total(event.CountUnpaired) != 1 || len(doc.Iotrace.Problems) != 1 {
		t.Errorf("stats %+v, problems %+v", s, doc.Iotrace.Problems)
	}
	if !strings.Contains(raw, `"ph":"C"`) || !strings.Contains(raw, `"start\nphase"`) {
		t.Error("no counters or marker")
	}
}

func TestCloseWithoutEnd(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, Options{})
	w.Begin(&event.Header{})
	e := ev(1, event.LayerFile, event.OpRead, 1, 1, 0, 0, 10)
	w.Event(&e)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var doc document
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil || doc.Iotrace.Complete {
		t.Errorf("%v complete=%v", err, doc.Iotrace.Complete)
	}
}

func TestAppendHelpers(t *testing.T) {
	for _, c := range []struct {
		ns   int64
		want string
	}{{0, "0"}, {1, "0.001"}, {1500, "1.500"}, {-2500, "-2.500"}, {math.MaxInt64, "9223372036854775.807"}} {
		if got := string(appendMicros(nil, c.ns)); got != c.want {
			t.Errorf("appendMicros(%d) = %s, want %s", c.ns, got, c.want)
		}
	}
	for _, s := range []string{"plain", "quote\" back\\slash", "ctl\x01\x1f", "bad\xffutf8", "ünïcødé ✓"} {
		var back string
		if err := json.Unmarshal(appendString(nil, s), &back); err != nil {
			t.Errorf("%q: %v", s, err)
		} else if strings.ToValidUTF8(s, "\uFFFD") != back {
			t.Errorf("%q round-tripped to %q", s, back)
		}
	}
}

// checkNesting fails t unless the slices of one track nest: sorted by
// start (the longer first at one start), each ends by its parent's end.
func checkNesting(t *testing.T, track string, list []traceEvent) {
	t.Helper()
	sort.SliceStable(list, func(i, j int) bool {
		if *list[i].Ts != *list[j].Ts {
			return *list[i].Ts < *list[j].Ts
		}
		return *list[i].Dur > *list[j].Dur
	})
	var stack []float64
	for _, s := range list {
		for len(stack) > 0 && stack[len(stack)-1] <= *s.Ts {
			stack = stack[:len(stack)-1]
		}
		end := *s.Ts + *s.Dur
		if len(stack) > 0 && end > stack[len(stack)-1]+1e-9 {
			t.Errorf("track %s: slice %s [%v, %v] overlaps its parent ending %v", track, s.Name, *s.Ts, end, stack[len(stack)-1])
		}
		stack = append(stack, end)
	}
}

// TestBlockLanesNest: a block I/O that starts inside another's queued
// part and ends after it goes to another lane (issue #17: 498 badly nested
// slices in a traced build).
func TestBlockLanesNest(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, Options{})
	w.Begin(&event.Header{OS: "linux"})
	dev := event.Device{Major: 8}
	a := ev(1, event.LayerBlock, event.OpBlockRead, 10, 10, 0, 0, 100_000)
	a.Wait, a.Dev = 50_000, dev
	b := ev(2, event.LayerBlock, event.OpBlockRead, 10, 10, 0, 30_000, 50_000) // ends at 80: past a's queue, inside a
	b.Dev = dev
	c := ev(3, event.LayerBlock, event.OpBlockRead, 10, 10, 0, 55_000, 10_000) // after a's queue: nests in a
	c.Dev = dev
	for _, e := range []*event.Event{&a, &b, &c} {
		if err := w.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.End(&event.Trailer{End: 200_000}); err != nil {
		t.Fatal(err)
	}
	var doc document
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	tracks := map[[2]int64][]traceEvent{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			k := [2]int64{*e.Pid, *e.Tid}
			tracks[k] = append(tracks[k], e)
		}
	}
	for k, list := range tracks {
		checkNesting(t, fmt.Sprint(k), list)
	}
	if len(tracks) != 2 {
		t.Errorf("%d lanes, want 2 (the straddling read on a second lane)", len(tracks))
	}
}
