// Package serve runs iotrace as a Prometheus exporter (iotrace serve): it
// traces this machine into a metrics.Sink — and, when asked, into a
// script whose aggregations become metrics and into a recording — and
// serves /metrics (Prometheus text, OpenMetrics and protobuf with native
// histograms, through client_golang's promhttp) and /healthz over HTTP
// until the trace ends. Nothing else is served: no debug handlers, no
// index.
//
// The stream goes: backend → health counts → filter → tee of the
// metrics, the script and the recording. The backend's counters reach
// the health metrics while it runs (backend.Options.Progress).
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/metrics"
	"github.com/iotrace/iotrace/script"
)

// DefaultListen is where serve listens unless told otherwise: this
// machine only.
const DefaultListen = "127.0.0.1:9477"

// Paths served.
const (
	MetricsPath = "/metrics"
	HealthPath  = "/healthz"
)

// shutdownTimeout bounds how long scrapes in progress may finish once the
// trace has ended.
const shutdownTimeout = 5 * time.Second

// TraceFunc runs the live trace into sink until ctx is done (or the
// trace's own end), calling progress with the backend's counters while it
// runs (backend.Options.Progress).
type TraceFunc func(ctx context.Context, progress func(event.Stats), sink event.Sink) error

// Options configure a Run.
type Options struct {
	// Listener is where the metrics are served. The caller listens
	// first, so that an address in use fails before tracing starts.
	Listener net.Listener
	// Trace runs the trace.
	Trace TraceFunc
	// Filter selects the events (the filter flags); nil selects all.
	Filter *filter.Filter
	// Metrics configure the built-in metrics.
	Metrics metrics.Options
	// Script, when set, receives the selected events; its named
	// aggregations are exported (metrics.ScriptMetrics). The caller
	// loaded it and closes it after Run.
	Script *script.Script
	// ScriptSource names the script in the metrics' help.
	ScriptSource string
	// Record, when set, receives the selected stream too (a trace file
	// or a rotated series); the caller opened it and finishes it after
	// Run.
	Record event.Sink
	// Start is when iotrace started, for iotrace_startup_seconds; now
	// when zero.
	Start time.Time
	// Version and Backend label iotrace_build_info.
	Version, Backend string
	// Log receives the HTTP server's errors; io.Discard when nil.
	Log io.Writer
}

// Run serves the metrics and runs the trace until it ends, then stops
// serving (scrapes in progress get shutdownTimeout to finish) and returns
// the trace's error.
func Run(ctx context.Context, o Options) error {
	if o.Listener == nil || o.Trace == nil {
		return errors.New("serve: a listener and a trace are needed")
	}
	if o.Start.IsZero() {
		o.Start = time.Now()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	health := metrics.NewHealth(o.Start)
	sink := metrics.New(o.Metrics)
	reg := prometheus.NewRegistry()
	cs := []prometheus.Collector{
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
		health,
		sink,
		buildInfo(o.Version, o.Backend),
	}
	outs := []event.Sink{sink}
	if o.Script != nil {
		sm, err := metrics.NewScriptMetrics(o.Script.Aggregations(), metrics.ScriptOptions{
			Top: o.Metrics.Top, Window: o.Metrics.Window, Source: o.ScriptSource,
		})
		if err != nil {
			return err
		}
		o.Script.Observe(sm.Observe)
		cs = append(cs, sm)
		outs = append(outs, o.Script)
	}
	if o.Record != nil {
		outs = append(outs, o.Record)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("serve: register metrics: %w", err)
		}
	}
	srv := &http.Server{
		Handler:           Handler(reg, health, o.Log),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          log.New(o.Log, "iotrace serve: http: ", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(o.Listener) }()

	var first event.Sink = tee(outs)
	if o.Filter != nil {
		first = o.Filter.Sink(first)
	}
	err := o.Trace(ctx, health.Progress, health.Sink(first))

	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	if serr := <-served; err == nil && serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = fmt.Errorf("serve: %w", serr)
	}
	return err
}

// Handler serves /metrics from reg and /healthz from health, and nothing
// else (404).
func Handler(reg *prometheus.Registry, health *metrics.Health, errLog io.Writer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            log.New(errLog, "iotrace serve: metrics: ", 0),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
		EnableOpenMetrics:   true,
	}))
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !health.Tracing() {
			w.WriteHeader(http.StatusServiceUnavailable)
			if health.Startup() == 0 {
				io.WriteString(w, "starting\n")
			} else {
				io.WriteString(w, "not tracing\n")
			}
			return
		}
		io.WriteString(w, "tracing\n")
	})
	return mux
}

// buildInfo is iotrace_build_info: 1, labelled with the version, the
// backend, the OS and the Go version.
func buildInfo(version, backend string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "iotrace_build_info",
		Help: "1, labelled with iotrace's version, the live backend, the OS and the Go version.",
		ConstLabels: prometheus.Labels{
			"version": version, "backend": backend, "goos": runtime.GOOS, "goversion": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}

// tee passes the stream to every sink in turn; the first error stops it.
type tee []event.Sink

func (t tee) Begin(h *event.Header) error {
	for _, s := range t {
		if err := s.Begin(h); err != nil {
			return err
		}
	}
	return nil
}

func (t tee) Event(e *event.Event) error {
	for _, s := range t {
		if err := s.Event(e); err != nil {
			return err
		}
	}
	return nil
}

func (t tee) Fact(f *event.Fact) error {
	for _, s := range t {
		if err := s.Fact(f); err != nil {
			return err
		}
	}
	return nil
}

// End ends every sink, even after one failed (each finishes its output),
// and returns the first error.
func (t tee) End(tr *event.Trailer) error {
	var first error
	for _, s := range t {
		if err := s.End(tr); err != nil && first == nil {
			first = err
		}
	}
	return first
}
