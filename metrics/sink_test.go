package metrics

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/iotrace/iotrace/event"
)

// scrape gathers c and returns each sample as "name{l=v,...}" → value
// (counters, gauges, untyped; a histogram as its _count and _sum, and its
// classic buckets as _bucket{le=...}).
func scrape(t testing.TB, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			lbl := labelString(m.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[name+lbl] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+lbl] = m.GetGauge().GetValue()
			case dto.MetricType_SUMMARY:
				out[name+"_count"+lbl] = float64(m.GetSummary().GetSampleCount())
				out[name+"_sum"+lbl] = m.GetSummary().GetSampleSum()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[name+"_count"+lbl] = float64(h.GetSampleCount())
				out[name+"_sum"+lbl] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					le := "+Inf"
					if !math.IsInf(b.GetUpperBound(), 1) {
						le = fmt.Sprint(b.GetUpperBound())
					}
					out[name+"_bucket"+strings.TrimSuffix(lbl, "}")+sep(lbl)+"le="+le+"}"] = float64(b.GetCumulativeCount())
				}
				out[name+"_native_buckets"+lbl] = float64(len(h.GetPositiveDelta()))
			}
		}
	}
	return out
}

func sep(lbl string) string {
	if lbl == "{}" {
		return ""
	}
	return ","
}

func labelString(ls []*dto.LabelPair) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.GetName() + "=" + l.GetValue()
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func fileEvent(comm string, op event.Op, bytes int64, dur int64) *event.Event {
	e := event.New()
	e.Layer, e.Op, e.Comm, e.Bytes, e.Duration, e.Status = event.LayerFile, op, comm, bytes, dur, event.StatusOK
	return &e
}

func feed(t testing.TB, s event.Sink, h *event.Header, facts []event.Fact, evs ...*event.Event) {
	t.Helper()
	if err := s.Begin(h); err != nil {
		t.Fatal(err)
	}
	for i := range facts {
		if err := s.Fact(&facts[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range evs {
		if err := s.Event(e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSinkCounts: operations, bytes (as the report counts them), latency
// of completed operations only, errors by errno name, devices by their
// fact names, incomplete operations apart.
func TestSinkCounts(t *testing.T) {
	s := New(Options{})
	vda := event.Device{Major: 254, Minor: 0}
	var evs []*event.Event
	for i := 0; i < 3; i++ {
		evs = append(evs, fileEvent("cat", event.OpRead, 4096, 2000))
	}
	seek := fileEvent("cat", event.OpSeek, 123456, 100) // an offset, not bytes moved
	evs = append(evs, seek)
	miss := fileEvent("cat", event.OpOpen, -1, 500)
	miss.Status, miss.Code = event.StatusNotFound, 2
	evs = append(evs, miss)
	b := event.New()
	b.Layer, b.Op, b.Comm, b.Dev, b.Size, b.Duration, b.Status = event.LayerBlock, event.OpBlockRead, "cat", vda, 65536, 300_000, event.StatusOK
	evs = append(evs, &b)
	lost := b
	lost.Flags, lost.Duration = event.FlagNoCompletion, 0
	evs = append(evs, &lost)
	feed(t, s, &event.Header{OS: "linux"}, []event.Fact{{Kind: event.FactDevice, Dev: vda, Name: "vda"}}, evs...)

	m := scrape(t, s)
	want := map[string]float64{
		`iotrace_operations_total{comm=cat,device=,layer=file,op=read}`:                       3,
		`iotrace_bytes_total{comm=cat,device=,layer=file,op=read}`:                            3 * 4096,
		`iotrace_latency_seconds_count{comm=cat,device=,layer=file,op=read}`:                  3,
		`iotrace_latency_seconds_sum{comm=cat,device=,layer=file,op=read}`:                    3 * 2e-6,
		`iotrace_operations_total{comm=cat,device=,layer=file,op=seek}`:                       1,
		`iotrace_errors_total{comm=cat,error=ENOENT,layer=file,op=open}`:                      1,
		`iotrace_operations_total{comm=cat,device=vda,layer=block,op=bread}`:                  2,
		`iotrace_bytes_total{comm=cat,device=vda,layer=block,op=bread}`:                       65536,
		`iotrace_latency_seconds_count{comm=cat,device=vda,layer=block,op=bread}`:             1,
		`iotrace_latency_seconds_bucket{comm=cat,device=vda,layer=block,op=bread,le=0.00025}`: 0,
		`iotrace_latency_seconds_bucket{comm=cat,device=vda,layer=block,op=bread,le=0.0005}`:  1,
		`iotrace_incomplete_operations_total{layer=block,op=bread}`:                           1,
		`iotrace_label_values{label=comm}`:                                                    1,
		`iotrace_label_values{label=device}`:                                                  1,
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			t.Errorf("no sample %s", k)
			continue
		}
		if math.Abs(got-v) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if v, ok := m[`iotrace_bytes_total{comm=cat,device=,layer=file,op=seek}`]; ok && v != 0 {
		t.Errorf("an lseek's offset counted as %v bytes", v)
	}
	if m[`iotrace_latency_seconds_native_buckets{comm=cat,device=vda,layer=block,op=bread}`] == 0 {
		t.Error("the latency histogram has no native buckets")
	}
}

// TestSinkWindowsErrors: a Windows trace names its errors by NTSTATUS.
func TestSinkWindowsErrors(t *testing.T) {
	s := New(Options{})
	e := fileEvent("app.exe", event.OpOpen, -1, 10)
	e.Status, e.Code = event.StatusNotFound, 0xC0000034
	feed(t, s, &event.Header{OS: "windows"}, nil, e)
	if v := scrape(t, s)[`iotrace_errors_total{comm=app.exe,error=OBJECT_NAME_NOT_FOUND,layer=file,op=open}`]; v != 1 {
		t.Errorf("NTSTATUS error counted %v times", v)
	}
}

// TestSinkLabelValues: names from the traced system become valid UTF-8
// label values, distinct when the names were.
func TestSinkLabelValues(t *testing.T) {
	s := New(Options{})
	feed(t, s, &event.Header{OS: "linux"}, nil,
		fileEvent("a\xff", event.OpRead, 1, 1), fileEvent("a\xfe", event.OpRead, 1, 1))
	m := scrape(t, s) // the pedantic registry checks the values
	for _, k := range []string{`iotrace_operations_total{comm=a<0xff>,device=,layer=file,op=read}`, `iotrace_operations_total{comm=a<0xfe>,device=,layer=file,op=read}`} {
		if m[k] != 1 {
			t.Errorf("%s = %v, want 1", k, m[k])
		}
	}
	long := labelValue(strings.Repeat("é", 200))
	if len(long) > maxLabelBytes || !strings.HasSuffix(long, "…") {
		t.Errorf("a 400-byte name became %d bytes: %q", len(long), long)
	}
}

// TestSinkEvicts: once a busier process takes an idle one's slot, the
// idle one's series are gone and its later events count under Other.
func TestSinkEvicts(t *testing.T) {
	s := New(Options{Top: 1, Window: 100})
	feed(t, s, &event.Header{OS: "linux"}, nil, fileEvent("idle", event.OpRead, 1, 1))
	for i := 0; i < 5; i++ {
		e := fileEvent("busy", event.OpWrite, 10, 1)
		e.Time = 150
		feed(t, s, &event.Header{}, nil, e)
	}
	e := fileEvent("idle", event.OpRead, 1, 1)
	e.Time = 250 // a new window: busy takes the slot
	feed(t, s, &event.Header{}, nil, e)
	m := scrape(t, s)
	if _, ok := m[`iotrace_operations_total{comm=idle,device=,layer=file,op=read}`]; ok {
		t.Error("the evicted process still has its series")
	}
	if v := m[`iotrace_operations_total{comm=(other),device=,layer=file,op=read}`]; v != 1 {
		t.Errorf("the evicted process's later event: %v under (other), want 1", v)
	}
	if m[`iotrace_label_evictions_total{label=comm}`] != 1 {
		t.Errorf("evictions %v, want 1", m[`iotrace_label_evictions_total{label=comm}`])
	}
	// busy's 5 writes before the swap were folded; its later ones are its own.
	e = fileEvent("busy", event.OpWrite, 10, 1)
	e.Time = 260
	feed(t, s, &event.Header{}, nil, e)
	if v := scrape(t, s)[`iotrace_operations_total{comm=busy,device=,layer=file,op=write}`]; v != 1 {
		t.Errorf("busy's own series: %v, want 1", v)
	}
}

// TestSinkMemoryBounded: a stream of ever new process names (short-lived
// processes) keeps the series count and the heap flat once the bound is
// reached: memory follows the bound, not the stream's length.
func TestSinkMemoryBounded(t *testing.T) {
	const top = 20
	s := New(Options{Top: top, Window: 1000})
	if err := s.Begin(&event.Header{OS: "linux"}); err != nil {
		t.Fatal(err)
	}
	ops := []event.Op{event.OpRead, event.OpWrite, event.OpOpen, event.OpClose}
	run := func(from, to int) {
		for i := from; i < to; i++ {
			e := fileEvent(fmt.Sprintf("job-%d", i/50), ops[i%len(ops)], 100, int64(i%5000))
			e.Time = int64(i)
			s.Event(e)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	run(0, 200_000)
	h1, n1 := heap(), len(s.series)
	run(200_000, 1_000_000)
	h2, n2 := heap(), len(s.series)
	bound := (top + 1) * len(ops)
	t.Logf("series %d then %d (bound %d), heap %d then %d KiB; %d evictions", n1, n2, bound, h1>>10, h2>>10, s.comms.Counts().Evictions)
	if n2 > bound || n1 > bound {
		t.Errorf("%d series, more than the bound %d", n2, bound)
	}
	if s.comms.Counts().Evictions == 0 {
		t.Error("no process was ever evicted: the test does not churn")
	}
	if h2 > h1+2<<20 {
		t.Errorf("the heap grew from %d to %d KiB over 800,000 more events", h1>>10, h2>>10)
	}
}

// TestSinkProvenance: a classified read's bytes by source, what was not
// classified of it as unknown; an unclassified read counts nowhere.
func TestSinkProvenance(t *testing.T) {
	s := New(Options{})
	r := fileEvent("cat", event.OpRead, 16384, 10)
	r.ReadCached, r.ReadDisk, r.ReadAhead = 4096, 8192, 1024
	plain := fileEvent("cat", event.OpRead, 100, 10)
	feed(t, s, &event.Header{OS: "linux"}, nil, r, plain)
	m := scrape(t, s)
	for src, v := range map[string]float64{"cached": 4096, "disk": 8192, "readahead": 1024, "unknown": 3072, "waited": 0} {
		if got := m["iotrace_read_bytes_total{comm=cat,source="+src+"}"]; got != v {
			t.Errorf("%s: %v bytes, want %v", src, got, v)
		}
	}
}
