package report

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/hist"
)

// builder makes hand-built traces with known answers.
type builder struct {
	evs   []event.Event
	facts []event.Fact
	id    uint64
}

func (b *builder) ev(layer event.Layer, op event.Op, pid, tid uint32, t, dur int64, path string, bytes int64) *event.Event {
	b.id++
	e := event.New()
	e.ID = b.id
	e.Layer, e.Op = layer, op
	e.Pid, e.Tid = pid, tid
	e.Time, e.Duration = t, dur
	e.Path = path
	e.Bytes = bytes
	e.Status = event.StatusOK
	e.Comm = map[uint32]string{100: "make", 101: "cc", 102: "ld", 7: "kworker"}[pid]
	b.evs = append(b.evs, e)
	return &b.evs[len(b.evs)-1]
}

func (b *builder) run(t *testing.T, r *Report, trailer event.Trailer) {
	t.Helper()
	b.runLayers(t, r, 0, trailer)
}

// runLayers is run with the header saying the layers traced.
func (b *builder) runLayers(t *testing.T, r *Report, layers event.Layers, trailer event.Trailer) {
	t.Helper()
	if err := r.Begin(&event.Header{OS: "linux", Hostname: "box", Source: event.SourceSynthetic, StartWall: 1741944413_000000000, Layers: layers}); err != nil {
		t.Fatal(err)
	}
	for i := range b.facts {
		if err := r.Fact(&b.facts[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range b.evs {
		e := b.evs[i] // the sink gets a copy, as from a reader
		if err := r.Event(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.End(&trailer); err != nil {
		t.Fatal(err)
	}
}

// knownTrace: make(100) → cc(101), ld(102). cc reads /src/a.c 10 times,
// 4 KiB each: reads 0-5 are cache hits, reads 6-9 each cause 2 bios of
// 4 KiB on vda (8:0). ld writes /out/a.out 3 × 8 KiB, one write fails with
// ENOSPC; make stats /nope (ENOENT) twice. Latencies: read i takes
// (i+1) µs, 10 µs more with disk.
func knownTrace() *builder {
	b := &builder{}
	b.facts = []event.Fact{
		{Kind: event.FactProcess, Pid: 100, PPid: 1, Name: "make", Rundown: true},
		{Kind: event.FactProcess, Pid: 101, PPid: 100, Name: "cc", Time: 10},
		{Kind: event.FactProcess, Pid: 102, PPid: 100, Name: "ld", Time: 20},
		{Kind: event.FactDevice, Dev: event.Device{Major: 8}, Name: "vda"},
	}
	t := int64(1000)
	sector := uint64(2048)
	for i := 0; i < 10; i++ {
		dur := int64(i+1) * 1000
		if i >= 6 {
			dur += 10_000
		}
		rd := b.ev(event.LayerFile, event.OpRead, 101, 101, t, dur, "/src/a.c", 4096)
		rd.FD, rd.Offset, rd.Size, rd.Native = 3, int64(i)*4096, 4096, "read"
		if i >= 6 {
			rd.CausedIOs, rd.CausedBytes = 2, 8192
			id := rd.ID
			for j := 0; j < 2; j++ {
				bio := b.ev(event.LayerBlock, event.OpBlockRead, 101, 101, t+100+int64(j)*10, 5000, "", 4096)
				bio.Dev, bio.Sector, bio.Size, bio.Wait, bio.Cause = event.Device{Major: 8}, sector, 4096, 1000, id
				sector += 8
			}
		} else {
			rd.Flags |= event.FlagCacheHit
		}
		t += 20_000
	}
	for i := 0; i < 3; i++ {
		w := b.ev(event.LayerFile, event.OpWrite, 102, 102, t, 50_000, "/out/a.out", 8192)
		w.FD, w.Size = 4, 8192
		if i == 2 {
			w.Bytes, w.Status, w.Code = -1, event.StatusNoSpace, 28
		}
		t += 60_000
	}
	for i := 0; i < 2; i++ {
		s := b.ev(event.LayerFile, event.OpStat, 100, 100, t, 2000, "/nope", -1)
		s.Status, s.Code = event.StatusNotFound, 2
		t += 3000
	}
	// A writeback bio (no cause) from a kworker on another sector range,
	// completing on whatever thread: attributed to its submitter.
	wb := b.ev(event.LayerBlock, event.OpBlockWrite, 7, 7, t, 100_000, "/out/a.out", 16384)
	wb.Dev, wb.Sector, wb.Size, wb.Wait, wb.Flags = event.Device{Major: 8}, 900000, 16384, 60_000, event.FlagWriteback
	// A read with an fd but no path: counted as unresolved.
	nr := b.ev(event.LayerFile, event.OpRead, 101, 101, t+200_000, 1000, "", 10)
	nr.FD, nr.Flags = 9, event.FlagCacheHit
	mk := b.ev(event.LayerMarker, event.OpMarker, 100, 100, 500, 0, "", -1)
	mk.Note = "phase 1"
	return b
}

func TestKnownTrace(t *testing.T) {
	b := knownTrace()
	r := New(Options{TopN: 5, Heatmap: true})
	var tr event.Trailer
	tr.End = 2_000_000
	tr.Stats.Add(event.CountLost, "ringbuf reserve failed (cpu 1)", 7)
	tr.Stats.Add(event.CountInfo, "received", 99)
	b.run(t, r, tr)
	res := r.Result()

	if res.Trace.Events != uint64(len(b.evs)) || res.Trace.Duration != 2_000_000 || !res.Trace.Complete {
		t.Errorf("trace info %+v", res.Trace)
	}
	layer := map[string]LayerSummary{}
	for _, l := range res.Layers {
		layer[l.Layer] = l
	}
	// File: 11 reads (10×4096 + 10), 3 writes (2 × 8192 done), 2 stats.
	if f := layer["file"]; f.Ops != 16 || f.Bytes != 10*4096+10+2*8192 || f.Failed != 3 {
		t.Errorf("file layer %+v", f)
	}
	if bl := layer["block"]; bl.Ops != 9 || bl.Bytes != 8*4096+16384 || bl.Time != 8*5000+100_000 {
		t.Errorf("block layer %+v", bl)
	}
	if m := layer["marker"]; m.Ops != 1 {
		t.Errorf("marker layer %+v", m)
	}

	// Problems: the trailer's lost counter and the report's unresolved one.
	wantProblems := []Problem{
		{Kind: "lost", Name: "ringbuf reserve failed (cpu 1)", Value: 7, Origin: "trace"},
		{Kind: "unresolved", Name: "file events with a handle but no path", Value: 1, Origin: "report"},
	}
	if !slices.Equal(res.Problems, wantProblems) {
		t.Errorf("problems %+v", res.Problems)
	}

	// Read latency percentiles: values 1..6 µs, 17..20 µs and 1 µs (the
	// unresolved one): sorted 1,1,2,3,4,5,6,17,18,19,20 µs.
	var read OpSummary
	for _, o := range res.Ops {
		if o.Op == "read" {
			read = o
		}
	}
	lat := []uint64{1000, 1000, 2000, 3000, 4000, 5000, 6000, 17000, 18000, 19000, 20000}
	checkQ := func(name string, got uint64, q float64) {
		t.Helper()
		want := lat[int(math.Ceil(q*float64(len(lat))))-1]
		if math.Abs(float64(got)-float64(want)) > float64(want)*hist.SketchRelativeError {
			t.Errorf("%s = %d, want %d ± %.2f%%", name, got, want, 100*hist.SketchRelativeError)
		}
	}
	checkQ("read p50", read.Latency.P50, 0.5)
	checkQ("read p90", read.Latency.P90, 0.9)
	checkQ("read p99", read.Latency.P99, 0.99)
	if read.Count != 11 || read.Latency.Max != 20000 || read.DiskIOs != 8 || read.DiskBytes != 8*4096 {
		t.Errorf("read summary %+v", read)
	}
	if read.Histogram.Count != 11 {
		t.Errorf("read histogram %+v", read.Histogram)
	}

	// Cache: 11 reads, 4 went to disk; 4 × 4096 bytes from disk
	// (CausedBytes 8192 is capped at the 4096 read), the rest from cache.
	c := res.Cache
	if c == nil {
		t.Fatal("no cache section")
	}
	if c.Reads != 11 || c.DiskReads != 4 || c.BytesDisk != 4*4096 || c.BytesCache != 6*4096+10 ||
		math.Abs(c.HitRatio-7.0/11) > 1e-12 || c.DiskIOs != 8 || c.FSOps != 16 {
		t.Errorf("cache %+v", c.CacheCounts)
	}

	// Process tree: make, then its children cc and ld (ordered by pid),
	// and the kworker as another root.
	var names []string
	for _, p := range res.Processes {
		names = append(names, strings.Repeat(" ", p.Depth)+p.Name)
	}
	if want := []string{"kworker", "make", " cc", " ld"}; !slices.Equal(names, want) {
		t.Errorf("process tree %q, want %q", names, want)
	}
	for _, p := range res.Processes {
		if p.Name == "cc" && (p.Cache == nil || p.Cache.Reads != 11 || p.Cache.DiskReads != 4 || p.Count != 11) {
			t.Errorf("cc %+v", p)
		}
		if p.Name == "kworker" && (p.BlockIOs != 1 || p.BlockBytes != 16384 || p.Count != 0) {
			t.Errorf("kworker %+v", p)
		}
	}

	// Files by bytes: a.c (40960), a.out (16384 written), (no path) 10.
	if len(res.FilesByBytes) != 3 || res.FilesByBytes[0].Name != "/src/a.c" || res.FilesByBytes[0].Bytes != 40960 ||
		res.FilesByBytes[1].Name != "/out/a.out" || res.FilesByBytes[1].BlockIOs != 1 {
		t.Errorf("files by bytes %+v", res.FilesByBytes)
	}
	if res.FilesByTime[0].Name != "/out/a.out" || res.FilesByTime[0].Time != 150_000 {
		t.Errorf("files by time %+v", res.FilesByTime[0])
	}

	// Device: 8 reads linked to syscalls + 1 writeback write.
	if len(res.Devices) != 1 {
		t.Fatalf("devices %+v", res.Devices)
	}
	d := res.Devices[0]
	if d.Name != "vda" || d.Device != "8:0" || d.Sequential != 7 || d.Random != 2 || d.Caused != 8 || d.Writeback != 1 ||
		math.Abs(d.ReadRatio-8.0/9) > 1e-12 || d.Queue.Max != 60_000 || d.Service.Max != 40_000 || d.Latency.Max != 100_000 {
		t.Errorf("device %+v", d)
	}
	if want := 9 / 0.002; math.Abs(d.IOPS-want) > 1e-6 {
		t.Errorf("IOPS %v, want %v", d.IOPS, want)
	}

	// Errors: ENOSPC on a.out once, ENOENT on /nope twice (first).
	if res.ErrorsTotal != 3 || len(res.Errors) != 2 || res.Errors[0].Path != "/nope" || res.Errors[0].Count != 2 ||
		res.Errors[0].Result != "ENOENT" || res.Errors[1].Result != "ENOSPC" {
		t.Errorf("errors %+v", res.Errors)
	}

	// Slowest: the writes (50 µs) first, then read 9 (20 µs) with its two
	// bios as the cause chain.
	var read9 *SlowOp
	for i := range res.Slowest {
		if res.Slowest[i].Op == "read" && res.Slowest[i].Duration == 20000 {
			read9 = &res.Slowest[i]
		}
	}
	if res.Slowest[0].Op != "write" || read9 == nil || len(read9.Blocks) != 2 || read9.Blocks[0].Device != "vda" {
		t.Errorf("slowest %+v", res.Slowest)
	}
	if res.SlowestBlock[0].Duration != 100_000 || res.SlowestBlock[0].Device != "vda" {
		t.Errorf("slowest block %+v", res.SlowestBlock[0])
	}
	if len(res.Markers) != 1 || res.Markers[0].Note != "phase 1" {
		t.Errorf("markers %+v", res.Markers)
	}

	// JSON round trip and text rendering.
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(js, &back); err != nil || back.Cache.Reads != 11 || len(back.Devices) != 1 {
		t.Errorf("json: %v", err)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PROBLEMS", "ringbuf reserve failed (cpu 1)", "reads 11: 7 from cache (63.6% hit ratio), 4 caused disk I/O, 0 waited for disk I/O already in flight",
		"vda (8:0)", "ENOSPC", "└ #", "usecs", "phase 1"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if testing.Verbose() {
		t.Log("\n" + text.String())
	}
	var svg bytes.Buffer
	if err := r.WriteHeatmap(&svg); err != nil || !strings.Contains(svg.String(), "block I/O") || !strings.HasSuffix(svg.String(), "</svg>\n") {
		t.Errorf("heatmap: %v", err)
	}
}

// TestWarmTraceCache: a trace whose reads were all served from the page
// cache (flagged as hits, no block I/O at all) shows a cache section with
// 100 % hits rather than none (#19).
func TestWarmTraceCache(t *testing.T) {
	b := &builder{}
	for i := range 5 {
		e := b.ev(event.LayerFile, event.OpRead, 101, 101, int64(i*100), 10, "/src/a.c", 4096)
		e.Flags |= event.FlagCacheHit
	}
	r := New(Options{TopN: 5})
	b.run(t, r, event.Trailer{End: 1000})
	res := r.Result()
	if res.Cache == nil {
		t.Fatal("no cache section for a fully warm trace")
	}
	if c := res.Cache; c.Reads != 5 || c.DiskReads != 0 || c.HitRatio != 1 || c.BytesCache != 5*4096 {
		t.Errorf("cache %+v, want 5 reads, all hits", c.CacheCounts)
	}
	// Without hit flags or links (a source that does not link), no section.
	b2 := &builder{}
	b2.ev(event.LayerFile, event.OpRead, 101, 101, 0, 10, "/src/a.c", 4096)
	r2 := New(Options{TopN: 5})
	b2.run(t, r2, event.Trailer{End: 1000})
	if r2.Result().Cache != nil {
		t.Error("cache section for a trace that does not link reads to disk I/O")
	}
}

// TestLayersNotTraced: a layer the trace says its source did not trace
// is reported as not traced, in the text a dash, not as a row of zeros
// (the ptrace backend, --layer file); the trailer narrows the header (the
// block programs failed after the header was written); a trace that does
// not say makes no claim; a merge keeps the claim only when every trace
// makes it.
func TestLayersNotTraced(t *testing.T) {
	file := event.LayersOf(event.LayerFile)
	both := event.LayersOf(event.LayerFile, event.LayerBlock)
	for _, c := range []struct {
		name            string
		header, trailer event.Layers
		want            bool
	}{{"file only", file, 0, true}, {"narrowed by the trailer", both, file, true}, {"both", both, 0, false}, {"not said", 0, 0, false}} {
		b := &builder{}
		b.ev(event.LayerFile, event.OpRead, 101, 101, 0, 10, "/src/a.c", 4096)
		r := New(Options{TopN: 5})
		b.runLayers(t, r, c.header, event.Trailer{End: 1000, Layers: c.trailer})
		res := r.Result()
		var got, fileNot bool
		for _, l := range res.Layers {
			switch l.Layer {
			case "block":
				got = l.NotTraced
			case "file":
				fileNot = l.NotTraced
			}
		}
		if got != c.want || fileNot {
			t.Errorf("%s: block not traced %v, file not traced %v; want %v, false", c.name, got, fileNot, c.want)
		}
		var text bytes.Buffer
		if err := res.WriteText(&text, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		if note := strings.Contains(text.String(), "block not traced"); note != c.want {
			t.Errorf("%s: text says block not traced: %v, want %v:\n%s", c.name, note, c.want, text.String())
		}
		js, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(js), `"not_traced":true`); has != c.want {
			t.Errorf("%s: JSON has not_traced: %v, want %v", c.name, has, c.want)
		}
	}
	// Merged: one trace traced block, another did not.
	var parts []*Result
	for _, layers := range []event.Layers{file, both} {
		b := &builder{}
		b.ev(event.LayerFile, event.OpRead, 101, 101, 0, 10, "/src/a.c", 4096)
		r := New(Options{TopN: 5})
		b.runLayers(t, r, layers, event.Trailer{End: 1000})
		parts = append(parts, r.Result())
	}
	m, err := Merge(parts, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range m.Layers {
		if l.Layer == "block" && l.NotTraced {
			t.Error("merged: block not traced, yet one of the traces traced it")
		}
	}
}

// TestCacheCategories: each read is counted once, as a cache hit, a disk
// read, a read that waited for I/O in flight, or (the source flagging
// hits) an unclassified read; the hit ratio is over the classified reads,
// and the text names all of them (#19).
func TestCacheCategories(t *testing.T) {
	b := &builder{}
	for i := range 2 {
		e := b.ev(event.LayerFile, event.OpRead, 101, 101, int64(i*100), 10, "/src/a.c", 4096)
		e.Flags |= event.FlagCacheHit
	}
	w := b.ev(event.LayerFile, event.OpRead, 101, 101, 300, 10, "/src/a.c", 4096)
	w.Flags |= event.FlagWaitedIO
	d := b.ev(event.LayerFile, event.OpRead, 101, 101, 400, 10, "/src/a.c", 8192)
	d.CausedIOs, d.CausedBytes = 1, 4096
	b.ev(event.LayerFile, event.OpRead, 101, 101, 500, 10, "pipe:[7]", 2)
	r := New(Options{TopN: 5})
	b.run(t, r, event.Trailer{End: 1000})
	res := r.Result()
	c := res.Cache
	if c == nil {
		t.Fatal("no cache section")
	}
	if c.Reads != 5 || c.CacheReads != 2 || c.DiskReads != 1 || c.WaitedReads != 1 || c.OtherReads != 1 ||
		c.HitRatio != 0.5 || c.BytesCache != 2*4096+4096 || c.BytesDisk != 4096 || c.BytesWaited != 4096 || c.BytesOther != 2 {
		t.Errorf("cache %+v", c.CacheCounts)
	}
	var buf bytes.Buffer
	if err := res.WriteText(&buf, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"reads 5: 2 from cache (50.0% hit ratio), 1 caused disk I/O, 1 waited for disk I/O already in flight",
		"1 other reads not classified"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	// Merging two copies keeps the categories and the ratio.
	m, err := Merge([]*Result{res, res}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if mc := m.Cache; mc == nil || mc.WaitedReads != 2 || mc.OtherReads != 2 || mc.CacheReads != 4 || mc.HitRatio != 0.5 {
		t.Errorf("merged cache %+v", mc)
	}
}
