package report

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/hist"
	"github.com/iotrace/iotrace/internal/synth"
)

// hostTrace is a synthetic trace recorded on host.
func hostTrace(t *testing.T, seed uint64, host, os string, events int) *synth.Recorded {
	t.Helper()
	rec := synth.NewRecorder()
	if err := synth.Generate(synth.Options{Seed: seed, Events: events, OS: os, BlockPercent: 20, Resolved: true}, rec); err != nil {
		t.Fatal(err)
	}
	tr := rec.Trace()
	tr.Header.Hostname = host
	return tr
}

// jsonRoundTrip encodes res as report --format json does and reads it back.
func jsonRoundTrip(t *testing.T, res *Result) *Result {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var out Result
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestMergeEqualsTogether: the merge of three per-trace reports (through
// their JSON) equals one report fed all three traces' events: counts,
// bytes and times exact, percentiles within the sketch's error.
func TestMergeEqualsTogether(t *testing.T) {
	traces := []*synth.Recorded{
		hostTrace(t, 1, "web1", "linux", 20000),
		hostTrace(t, 2, "web2", "linux", 15000),
		hostTrace(t, 3, "win1", "windows", 10000),
	}
	var parts []*Result
	together := New(Options{})
	if err := together.Begin(&traces[0].Header); err != nil {
		t.Fatal(err)
	}
	for _, tr := range traces {
		r := New(Options{})
		if err := tr.Replay(r); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, jsonRoundTrip(t, r.Result()))
		for i := range tr.Events {
			together.Event(&tr.Events[i])
		}
	}
	all := together.Result()
	m, err := Merge(parts, 10)
	if err != nil {
		t.Fatal(err)
	}
	m = jsonRoundTrip(t, m)
	// Merged reports merge again: the merge of (1+2) and 3 is the same.
	m12, err := Merge(parts[:2], 10)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Merge([]*Result{jsonRoundTrip(t, m12), parts[2]}, 10)
	if err != nil {
		t.Fatal(err)
	}

	for _, got := range []*Result{m, again} {
		if got.Trace.Events != all.Trace.Events || got.Trace.OS != "mixed" || len(got.Traces) != 3 || len(got.Hosts) != 3 {
			t.Errorf("trace: %d events (want %d), os %q, %d traces, %d hosts", got.Trace.Events, all.Trace.Events, got.Trace.OS, len(got.Traces), len(got.Hosts))
		}
		if len(got.Ops) != len(all.Ops) {
			t.Fatalf("%d ops, want %d", len(got.Ops), len(all.Ops))
		}
		for i, w := range all.Ops {
			g := got.Ops[i]
			if g.Op != w.Op || g.Layer != w.Layer || g.Count != w.Count || g.Bytes != w.Bytes || g.Time != w.Time ||
				g.Failed != w.Failed || g.Incomplete != w.Incomplete || g.DiskIOs != w.DiskIOs || g.DiskBytes != w.DiskBytes {
				t.Errorf("op %s/%s: %+v, want %+v", w.Layer, w.Op, g, w)
			}
			if g.Latency.Count != w.Latency.Count || g.Latency.Sum != w.Latency.Sum || g.Latency.Min != w.Latency.Min || g.Latency.Max != w.Latency.Max {
				t.Errorf("op %s latency totals %+v, want %+v", w.Op, g.Latency, w.Latency)
			}
			for _, q := range [][2]uint64{{g.Latency.P50, w.Latency.P50}, {g.Latency.P99, w.Latency.P99}} {
				if math.Abs(float64(q[0])-float64(q[1])) > 2*hist.SketchRelativeError*float64(q[1])+1 {
					t.Errorf("op %s percentile %d, want %d", w.Op, q[0], q[1])
				}
			}
			if g.Histogram.Count != w.Histogram.Count || len(g.Histogram.Buckets) != len(w.Histogram.Buckets) {
				t.Errorf("op %s histogram %d/%d buckets, want %d/%d", w.Op, g.Histogram.Count, len(g.Histogram.Buckets), w.Histogram.Count, len(w.Histogram.Buckets))
			}
		}
		for i, w := range all.Layers {
			if got.Layers[i] != w {
				t.Errorf("layer %s: %+v, want %+v", w.Layer, got.Layers[i], w)
			}
		}
		if got.ErrorsTotal != all.ErrorsTotal {
			t.Errorf("errors %d, want %d", got.ErrorsTotal, all.ErrorsTotal)
		}
		if (got.Cache == nil) != (all.Cache == nil) || (got.Cache != nil && (got.Cache.Reads != all.Cache.Reads ||
			got.Cache.DiskReads != all.Cache.DiskReads || got.Cache.BytesDisk != all.Cache.BytesDisk || got.Cache.HitRatio != all.Cache.HitRatio)) {
			t.Errorf("cache %+v, want %+v", got.Cache, all.Cache)
		}
		var hostEvents uint64
		for _, h := range got.Hosts {
			hostEvents += h.Events
		}
		if hostEvents != all.Trace.Events || got.Hosts[0].Host != "web1" {
			t.Errorf("hosts: %d events, first %q", hostEvents, got.Hosts[0].Host)
		}
		if len(got.Processes) != 10 || got.Processes[0].Host == "" || len(got.FilesByBytes) != 10 {
			t.Errorf("top lists: %d processes (first on %q), %d files", len(got.Processes), got.Processes[0].Host, len(got.FilesByBytes))
		}
		for i := 1; i < len(got.FilesByBytes); i++ {
			if got.FilesByBytes[i].Bytes > got.FilesByBytes[i-1].Bytes {
				t.Errorf("files by bytes out of order at %d", i)
			}
		}
	}
}

func TestMergeRejects(t *testing.T) {
	tr := hostTrace(t, 4, "a", "linux", 2000)
	r := New(Options{})
	if err := tr.Replay(r); err != nil {
		t.Fatal(err)
	}
	old := jsonRoundTrip(t, r.Result())
	for i := range old.Ops {
		old.Ops[i].Sketch = nil // as an older iotrace wrote it
	}
	if _, err := Merge([]*Result{old}, 0); err == nil {
		t.Error("a report without sketches merged")
	}
	bad := jsonRoundTrip(t, r.Result())
	bad.Ops[0].Sketch.Count++
	if _, err := Merge([]*Result{bad}, 0); err == nil {
		t.Error("a damaged sketch merged")
	}
	if _, err := Merge(nil, 0); err == nil {
		t.Error("nothing merged")
	}
	_ = event.OpRead
}

// TestMergeManyEntriesLinear: two reports of 80,000 problem, layer,
// tracking and per-op cache entries each merge in well under a second (issue 25, item 9: a linear search per entry took 18.7 s), the
// entries of one key added together.
func TestMergeManyEntriesLinear(t *testing.T) {
	const n = 20_000
	part := func(off int) *Result {
		r := &Result{Top: 10, Cache: &Cache{}}
		for i := range n {
			name := strconv.Itoa(off + i)
			r.Problems = append(r.Problems, Problem{Kind: "info", Name: name, Value: 1})
			r.Layers = append(r.Layers, LayerSummary{Layer: name, Ops: 1})
			r.Tracking = append(r.Tracking, TrackingInfo{Table: name, Tracked: 1})
			r.Cache.PerOp = append(r.Cache.PerOp, OpDisk{Op: name, Count: 1})
		}
		return r
	}
	// Half the keys of the second part are the first's.
	parts := []*Result{part(0), part(n / 2)}
	t0 := time.Now()
	m, err := Merge(parts, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("merging %d entries took %v", 8*n, d)
	}
	if len(m.Problems) != n*3/2 || len(m.Layers) != n*3/2 || len(m.Tracking) != n*3/2 || len(m.Cache.PerOp) != n*3/2 {
		t.Errorf("%d problems, %d layers, %d tracking, %d per op; want %d each", len(m.Problems), len(m.Layers), len(m.Tracking), len(m.Cache.PerOp), n*3/2)
	}
	if m.Problems[n/2].Value != 2 || m.Problems[0].Value != 1 || m.Layers[n-1].Ops != 2 {
		t.Errorf("entries of one key not added: %+v %+v %+v", m.Problems[n/2], m.Problems[0], m.Layers[n-1])
	}
}
