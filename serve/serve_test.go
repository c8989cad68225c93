package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/fake"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/metrics"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/script"
)

// holdEnd passes a stream on, but holds its end until release is closed:
// the test scrapes a trace that is complete and still running.
type holdEnd struct {
	event.Sink
	ended   chan struct{}
	release chan struct{}
}

func (h holdEnd) End(t *event.Trailer) error {
	close(h.ended)
	<-h.release
	return h.Sink.End(t)
}

// started is a running Run over the fake backend.
type started struct {
	base    string
	ended   chan struct{}
	release chan struct{}
	done    chan error
}

// startFake serves the replay of a synthetic trace; its end is held.
func startFake(t *testing.T, trace synth.Options, o Options) *started {
	t.Helper()
	fb, err := fake.New(fake.Config{Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &started{base: "http://" + ln.Addr().String(), ended: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	o.Listener = ln
	o.Trace = func(ctx context.Context, progress func(event.Stats), sink event.Sink) error {
		return fb.Run(ctx, backend.Options{Progress: progress}, holdEnd{Sink: sink, ended: s.ended, release: s.release})
	}
	go func() { s.done <- Run(context.Background(), o) }()
	select {
	case <-s.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the fake trace did not end")
	}
	return s
}

// stop releases the end and waits for Run.
func (s *started) stop(t *testing.T) {
	t.Helper()
	close(s.release)
	if err := <-s.done; err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, url, accept string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// parse reads the text exposition format.
func parse(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// sumBy adds up a counter or gauge family's values by the given labels' values.
func sumBy(mf *dto.MetricFamily, labels ...string) map[string]float64 {
	out := map[string]float64{}
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		var key []string
		for _, l := range labels {
			for _, p := range m.GetLabel() {
				if p.GetName() == l {
					key = append(key, p.GetValue())
				}
			}
		}
		out[strings.Join(key, "/")] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return out
}

// reportOf reports the synthetic trace as iotrace report would.
func reportOf(t *testing.T, trace synth.Options) *report.Result {
	t.Helper()
	rep := report.New(report.Options{})
	if err := synth.Generate(trace, rep); err != nil {
		t.Fatal(err)
	}
	return rep.Result()
}

// TestServeAgreesWithReport serves a Linux and a Windows trace (the
// portable path the live ETW backend takes) through the fake backend:
// operations by layer and op, and bytes of the ops that move data, are
// the report's; the health endpoint says tracing; the formats negotiate;
// nothing but /metrics and /healthz is served.
func TestServeAgreesWithReport(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		t.Run(goos, func(t *testing.T) {
			trace := synth.Options{Seed: 3, Events: 5000, OS: goos, Resolved: true}
			s := startFake(t, trace, Options{Version: "test", Backend: "fake", Metrics: metricsOptions()})
			defer s.stop(t)
			resp, body := get(t, s.base+MetricsPath, "text/plain")
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("text format served as %q", ct)
			}
			mfs := parse(t, body)
			ops := sumBy(mfs["iotrace_operations_total"], "layer", "op")
			bytes := sumBy(mfs["iotrace_bytes_total"], "layer", "op")
			rep := reportOf(t, trace)
			n := 0
			for _, o := range rep.Ops {
				if o.Layer != "file" && o.Layer != "block" {
					continue
				}
				k := o.Layer + "/" + o.Op
				if ops[k] != float64(o.Count) {
					t.Errorf("%s: %v operations served, report %d", k, ops[k], o.Count)
				}
				// Report's per-op bytes include a readdir's entries and a
				// discard's range; the metric counts data moved only.
				moves := o.Op != "readdir" && o.Op != "bdiscard" && o.Op != "bflush"
				if moves && bytes[k] != float64(o.Bytes) {
					t.Errorf("%s: %v bytes served, report %d", k, bytes[k], o.Bytes)
				}
				n++
			}
			if n < 5 {
				t.Errorf("only %d ops compared", n)
			}
			if ev := mfs["iotrace_events_total"].GetMetric()[0].GetCounter().GetValue(); ev != float64(trace.Events) {
				t.Errorf("iotrace_events_total %v, want %d", ev, trace.Events)
			}
			if mfs["iotrace_errors_total"] == nil || mfs["process_cpu_seconds_total"] == nil && runtime.GOOS == "linux" || mfs["iotrace_startup_seconds"] == nil {
				t.Error("errors, process CPU or start-up time missing")
			}
			// The trailer is held: the backend's counters came while it ran.
			if sumBy(mfs["iotrace_trace_info"], "name")[fake.CounterRounds] != 0 || !hasLabel(mfs["iotrace_trace_info"], "name", fake.CounterDelivered) {
				t.Error("the backend's running counters (Progress) are not served")
			}
			if resp, _ := get(t, s.base+MetricsPath, "application/openmetrics-text; version=1.0.0"); !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text") {
				t.Errorf("OpenMetrics asked, %q served", resp.Header.Get("Content-Type"))
			}
			if resp, body := get(t, s.base+HealthPath, ""); resp.StatusCode != 200 || body != "tracing\n" {
				t.Errorf("/healthz: %d %q", resp.StatusCode, body)
			}
			for _, p := range []string{"/", "/debug/pprof/", "/debug/vars", "/metrics/x"} {
				if resp, _ := get(t, s.base+p, ""); resp.StatusCode != http.StatusNotFound {
					t.Errorf("%s: %d, want 404", p, resp.StatusCode)
				}
			}
			if resp, err := http.Post(s.base+MetricsPath, "text/plain", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("POST /metrics: %v %v", resp.Status, err)
			}
		})
	}
}

// TestServeScripts: the examples that make sense continuously run
// unchanged and export their aggregations.
func TestServeScripts(t *testing.T) {
	want := map[string][]string{
		"biolatency.star":    {"iotrace_script_lat_usecs", "iotrace_script_total_ns_total"},
		"iotop.star":         {"iotrace_script_reads_bytes_total", "iotrace_script_writes_bytes_total", "iotrace_script_total_bytes_total"},
		"disktop.star":       {"iotrace_script_io_bytes_total"},
		"cache_vs_disk.star": {"iotrace_script_nbytes_bytes_total", "iotrace_script_procs_total"},
	}
	for name, metrics := range want {
		t.Run(name, func(t *testing.T) {
			path := "../examples/scripts/" + name
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			sc, err := script.Load(path, src, script.Options{Stdout: &out, Stderr: io.Discard, WallClock: true})
			if err != nil {
				t.Fatal(err)
			}
			trace := synth.Options{Seed: 5, Events: 4000, BlockPercent: 30}
			s := startFake(t, trace, Options{Script: sc, ScriptSource: name, Metrics: metricsOptions()})
			_, body := get(t, s.base+MetricsPath, "text/plain")
			s.stop(t)
			if err := sc.Close(); err != nil {
				t.Fatal(err)
			}
			mfs := parse(t, body)
			for _, m := range metrics {
				if mf := mfs[m]; mf == nil || len(mf.GetMetric()) == 0 {
					t.Errorf("%s not exported", m)
				}
			}
			if out.Len() == 0 {
				t.Error("the script printed nothing (on_end)")
			}
		})
	}
}

// metricsOptions give every synthetic process a series of its own.
func metricsOptions() metrics.Options { return metrics.Options{Top: 1000} }

// hasLabel reports whether a sample of mf has label name = value.
func hasLabel(mf *dto.MetricFamily, name, value string) bool {
	for _, m := range mf.GetMetric() {
		for _, p := range m.GetLabel() {
			if p.GetName() == name && p.GetValue() == value {
				return true
			}
		}
	}
	return false
}
