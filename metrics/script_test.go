package metrics

import (
	"io"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/script"
)

const exportScript = `
calls = count("comm")
nbytes = sum("comm", "op", unit="bytes")
lat = hist_log2("comm", unit="usecs")
lin = hist_linear(lo=0, hi=100, step=10)
mean = avg("comm")
low = min("comm")
high = max("comm")
neg = sum()

def on_event(e):
    calls.add(e.comm)
    nbytes.add(e.comm, e.op, e.bytes)
    lat.add(e.comm, e.latency // 1000)
    lin.add(e.latency // 1000)
    mean.add(e.comm, e.bytes)
    low.add(e.comm, e.bytes)
    high.add(e.comm, e.bytes)
    neg.add(-1)
    if e.bytes == 4:
        calls.clear()   # the script's own table forgets; the metric does not
`

// loadExport loads src with its aggregations exported.
func loadExport(t *testing.T, src string, top int) (*script.Script, *ScriptMetrics) {
	t.Helper()
	s, err := script.Load("t.star", []byte(src), script.Options{Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	var clock time.Duration
	m, err := NewScriptMetrics(s.Aggregations(), ScriptOptions{Top: top, Window: time.Second, Now: func() time.Duration { clock += time.Millisecond; return clock }, Source: "t.star"})
	if err != nil {
		t.Fatal(err)
	}
	s.Observe(m.Observe)
	return s, m
}

// TestScriptMetrics: each aggregation kind becomes its metric, keys are
// labels, values are what the script added whatever it cleared, and
// negative sums are counted apart.
func TestScriptMetrics(t *testing.T) {
	s, m := loadExport(t, exportScript, 0)
	var evs []*event.Event
	for i, b := range []int64{1, 2, 3, 4} {
		e := fileEvent("cat", event.OpRead, b, int64(i+1)*3000) // 3, 6, 9, 12 µs
		evs = append(evs, e)
	}
	evs = append(evs, fileEvent("dd", event.OpWrite, 100, 50_000))
	feed(t, s, &event.Header{OS: "linux"}, nil, evs...)
	if err := s.End(&event.Trailer{}); err != nil {
		t.Fatal(err)
	}
	got := scrape(t, m)
	want := map[string]float64{
		`iotrace_script_calls_total{comm=cat}`:                  4,
		`iotrace_script_calls_total{comm=dd}`:                   1,
		`iotrace_script_nbytes_bytes_total{comm=cat,op=read}`:   10,
		`iotrace_script_nbytes_bytes_total{comm=dd,op=write}`:   100,
		`iotrace_script_lat_usecs_count{comm=cat}`:              4,
		`iotrace_script_lat_usecs_sum{comm=cat}`:                30,
		`iotrace_script_lat_usecs_bucket{comm=cat,le=3}`:        1, // 3 µs: [2, 4)
		`iotrace_script_lat_usecs_bucket{comm=cat,le=7}`:        2, // 6 µs: [4, 8)
		`iotrace_script_lat_usecs_bucket{comm=cat,le=15}`:       4,
		`iotrace_script_lin_bucket{le=-1}`:                      0,
		`iotrace_script_lin_bucket{le=9}`:                       3, // 3, 6, 9
		`iotrace_script_lin_bucket{le=19}`:                      4, // 12
		`iotrace_script_lin_bucket{le=99}`:                      5, // 50
		`iotrace_script_lin_count{}`:                            5,
		`iotrace_script_mean_count{comm=cat}`:                   4,
		`iotrace_script_mean_sum{comm=cat}`:                     10,
		`iotrace_script_low{comm=cat}`:                          1,
		`iotrace_script_high{comm=cat}`:                         4,
		`iotrace_script_negative_values_total{aggregation=neg}`: 5,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := got[`iotrace_script_lin_bucket{le=49}`]; !ok {
		t.Error("hist_linear's bounds are not the script's")
	}
}

// TestScriptMetricsBounded: an aggregation keyed by ever new values keeps
// at most Top series plus the one of Other.
func TestScriptMetricsBounded(t *testing.T) {
	s, m := loadExport(t, "n = count(\"pid\", \"comm\")\ndef on_event(e):\n    n.add(e.pid, e.comm)\n", 5)
	if err := s.Begin(&event.Header{OS: "linux"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10_000; i++ {
		e := fileEvent("job", event.OpRead, 1, 1)
		e.Pid = uint32(i / 10)
		if err := s.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	got := scrape(t, m)
	series, total := 0, 0.0
	for k, v := range got {
		if len(k) > len("iotrace_script_n_total") && k[:len("iotrace_script_n_total")] == "iotrace_script_n_total" {
			series++
			total += v
		}
	}
	if series > 6 {
		t.Errorf("%d series, more than Top (5) + Other", series)
	}
	if got[`iotrace_script_n_total{comm=(other),pid=(other)}`] == 0 {
		t.Error("nothing folded under (other)")
	}
	t.Logf("%d series, %v of 10000 adds still exported (the evicted keys' series are gone)", series, total)
}

// TestScriptLabelNames: key names that are not label names, repeated
// ones and reserved ones are made valid and distinct.
func TestScriptLabelNames(t *testing.T) {
	got := labelNames([]string{"le", "a-b", "a_b", "__x", "9"}, map[string]bool{"le": true})
	want := []string{"key_le", "a_b", "a_b_2", "key___x", "_"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("labelNames = %q, want %q", got, want)
			break
		}
	}
	if b := linearBuckets(0, 1000, 1); len(b) > maxLinearBuckets+2 || b[len(b)-1] != 999 {
		t.Errorf("linear buckets of 1000 steps: %d bounds, last %v", len(b), b[len(b)-1])
	}
}
