package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// trace is a Source over events built in memory.
type trace struct {
	hdr event.Header
	evs []event.Event
}

func (t *trace) Run(ctx context.Context, sink event.Sink) error {
	if err := sink.Begin(&t.hdr); err != nil {
		return err
	}
	for i := range t.evs {
		e := t.evs[i]
		if err := sink.Event(&e); err != nil {
			return err
		}
	}
	return sink.End(&event.Trailer{End: 10_000_000})
}

// workload builds the same workload as Linux or Windows events: 50 reads
// of 4 KiB of src/a.c (every 5th misses the cache and causes one block
// read), 10 writes of out/a.o, 3 failed opens of a missing header.
func workload(os string) *trace {
	t := &trace{hdr: event.Header{OS: os, Source: event.SourceSynthetic}}
	if os == "windows" {
		t.hdr.Source = event.SourceETLFile
	}
	root, sep := "/home/me/proj", "/"
	if os == "windows" {
		root, sep = `C:\Users\Me\Proj`, `\`
	}
	path := func(rel string) string {
		p := root + sep + strings.ReplaceAll(rel, "/", sep)
		if os == "windows" {
			p = strings.ToUpper(p[:3]) + p[3:] // different case on Windows
			p = strings.Replace(p, "a.c", "A.c", 1)
		}
		return p
	}
	id := uint64(0)
	add := func(e event.Event) *event.Event {
		id++
		e.ID = id
		t.evs = append(t.evs, e)
		return &t.evs[len(t.evs)-1]
	}
	ts := int64(0)
	for i := 0; i < 50; i++ {
		e := event.New()
		e.Layer, e.Op, e.Pid, e.Tid, e.Time, e.Duration = event.LayerFile, event.OpRead, 10, 10, ts, int64(2000+i*10)
		e.Path, e.Bytes, e.Size, e.Status = path("src/a.c"), 4096, 4096, event.StatusOK
		if os == "windows" {
			e.Native, e.FileObject = "FileIo/Read", 0xffff8000_0000_1000
		} else {
			e.Native, e.FD = "pread64", 3
		}
		if i%5 == 0 {
			e.CausedIOs, e.CausedBytes = 1, 4096
			cause := add(e).ID
			b := event.New()
			b.Layer, b.Op, b.Pid, b.Tid, b.Time, b.Duration = event.LayerBlock, event.OpBlockRead, 10, 10, ts+100, 1000
			b.Bytes, b.Size, b.Cause, b.Status = 4096, 4096, cause, event.StatusOK
			add(b)
		} else {
			e.Flags |= event.FlagCacheHit
			add(e)
		}
		ts += 10_000
	}
	for i := 0; i < 10; i++ {
		e := event.New()
		e.Layer, e.Op, e.Pid, e.Tid, e.Time, e.Duration = event.LayerFile, event.OpWrite, 10, 10, ts, 30_000
		e.Path, e.Bytes, e.Size, e.Status = path("out/a.o"), 8192, 8192, event.StatusOK
		add(e)
		ts += 40_000
	}
	for i := 0; i < 3; i++ {
		e := event.New()
		e.Layer, e.Op, e.Pid, e.Tid, e.Time, e.Duration = event.LayerFile, event.OpOpen, 10, 10, ts, 5_000
		e.Path, e.Status = path("include/missing.h"), event.StatusNotFound
		add(e)
		ts += 6000
	}
	// A Windows paging read (cache manager) with no Linux counterpart.
	if os == "windows" {
		e := event.New()
		e.Layer, e.Op, e.Pid, e.Tid, e.Time, e.Duration = event.LayerFile, event.OpRead, 4, 100, ts, 90_000
		e.Path, e.Bytes, e.Flags, e.Status = path("src/a.c"), 65536, event.FlagPaging, event.StatusOK
		add(e)
	}
	return t
}

func TestLinuxAgainstWindows(t *testing.T) {
	opts := Options{StripPrefix: []string{"/home/me/proj", `C:\Users\me\proj`}}
	res, err := Compare(context.Background(), workload("linux"), workload("windows"), "linux.iot", "win.etl", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.CaseFolded || res.FilesBoth != 3 || res.FilesOnlyA != 0 || res.FilesOnlyB != 0 {
		t.Fatalf("files: both %d, only A %d, only B %d, folded %v: %+v", res.FilesBoth, res.FilesOnlyA, res.FilesOnlyB, res.CaseFolded, res.Files)
	}
	if res.SideB.Excluded != 1 {
		t.Errorf("paging read not excluded: %d", res.SideB.Excluded)
	}
	one := func(what string, m Metric) {
		t.Helper()
		if m.Ratio != 1 {
			t.Errorf("%s: %v → %v, ratio %v, want 1", what, m.A, m.B, m.Ratio)
		}
	}
	for _, r := range append(append([]Row{}, res.Ops...), res.Files...) {
		if r.Only != "" {
			t.Errorf("%s only on side %s", r.Key, r.Only)
		}
		one(r.Key+" count", r.Count)
		one(r.Key+" time", r.Time)
		one(r.Key+" p50", r.P50)
		one(r.Key+" p99", r.P99)
		if r.Bytes.A > 0 {
			one(r.Key+" bytes", r.Bytes)
		}
	}
	var read *Row
	for i := range res.Ops {
		if res.Ops[i].Key == "read" {
			read = &res.Ops[i]
		}
	}
	if read == nil || read.HitRatio == nil || read.HitRatio.A != 0.8 || read.HitRatio.Ratio != 1 ||
		read.DiskPerOp == nil || read.DiskPerOp.A != 0.2 || read.DiskPerOp.Ratio != 1 {
		t.Errorf("read row %+v", read)
	}
	keys := map[string]bool{}
	for _, r := range res.Files {
		keys[strings.ToLower(r.Key)] = true
	}
	for _, k := range []string{"src/a.c", "out/a.o", "include/missing.h"} {
		if !keys[k] {
			t.Errorf("file %s not lined up: %v", k, keys)
		}
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"ratio":1`) {
		t.Errorf("json lacks ratio 1: %.300s", js)
	}
	var buf bytes.Buffer
	if err := res.WriteText(&buf, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "1.00×") || strings.Contains(buf.String(), "\x1b[") {
		t.Errorf("text:\n%s", buf.String())
	}
	if testing.Verbose() {
		t.Log("\n" + buf.String())
		buf.Reset()
		res.WriteText(&buf, TextOptions{Color: true})
		t.Log("\n" + buf.String())
	}
}

func TestDifferencesFirst(t *testing.T) {
	a, b := workload("linux"), workload("linux")
	// B's writes take three times as long and one file is new.
	for i := range b.evs {
		if b.evs[i].Op == event.OpWrite {
			b.evs[i].Duration *= 3
		}
	}
	extra := event.New()
	extra.Layer, extra.Op, extra.Path, extra.Duration, extra.Status = event.LayerFile, event.OpStat, "/home/me/proj/new", 10, event.StatusOK
	b.evs = append(b.evs, extra)
	res, err := Compare(context.Background(), a, b, "a", "b", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops[0].Key != "write" || res.Ops[0].Time.Ratio != 3 || res.Ops[0].P50.Ratio != 3 {
		t.Errorf("first op row %+v", res.Ops[0])
	}
	if res.Files[0].Key != "/home/me/proj/out/a.o" || res.FilesOnlyB != 1 {
		t.Errorf("files %+v", res.Files)
	}
	for _, r := range res.Ops {
		if r.Key == "stat" && (r.Only != "b" || !math.IsInf(r.Count.Ratio, 1)) {
			t.Errorf("stat row %+v", r)
		}
	}
}

func TestNormalize(t *testing.T) {
	o := Options{Map: []Mapping{{Old: `D:\build`, New: "/srv/build"}}, StripPrefix: []string{"/srv", "/srv/build"}}
	win := normalizer{opts: &o, windows: true}
	lin := normalizer{opts: &o}
	cases := []struct {
		n    *normalizer
		in   string
		want string
	}{
		{&win, `d:\Build\x\y.c`, "x/y.c"},
		{&win, `\\?\D:\build\z`, "z"},
		{&lin, "/srv/build/x/y.c", "x/y.c"},
		{&lin, "/srv/other", "other"},
		{&lin, "/srvx/a", "/srvx/a"}, // not at a path boundary
		{&lin, `/tmp/a\b`, `/tmp/a\b`},
	}
	for _, c := range cases {
		if got := c.n.key(c.in); got != c.want {
			t.Errorf("key(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if _, err := ParseMapping("nothing"); err == nil {
		t.Error("mapping without =")
	}
	if m, err := ParseMapping(`C:\a=/b`); err != nil || m.Old != `C:\a` || m.New != "/b" {
		t.Errorf("%+v %v", m, err)
	}
}

// TestLayerNotTracedOnOneSide: a side whose source did not trace block
// I/O (ptrace, --layer file) is not compared as "no block I/O": its row
// says which side did not trace it, with no ratio.
func TestLayerNotTracedOnOneSide(t *testing.T) {
	a, b := workload("linux"), workload("linux")
	a.hdr.Layers = event.LayersOf(event.LayerFile)
	evs := a.evs[:0]
	for _, e := range a.evs {
		if e.Layer != event.LayerBlock {
			evs = append(evs, e)
		}
	}
	a.evs = evs
	res, err := Compare(context.Background(), a, b, "a.iot", "b.iot", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range res.Totals {
		if r.Layer == "block" {
			found = true
			if r.NotTraced != "a" {
				t.Errorf("block row: not traced %q, want a", r.NotTraced)
			}
		}
		if r.Layer == "file" && r.NotTraced != "" {
			t.Errorf("file row: not traced %q", r.NotTraced)
		}
	}
	if !found {
		t.Fatal("no block row")
	}
	var buf bytes.Buffer
	if err := res.WriteText(&buf, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "block [not traced in A]") {
		t.Errorf("text does not say block was not traced in A:\n%s", buf.String())
	}
}
