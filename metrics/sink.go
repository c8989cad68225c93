package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/iotrace/iotrace/event"
)

// DefaultTop is how many process names, devices and error names have
// series of their own when Options.Top is 0.
const DefaultTop = 20

// DefaultWindow is how often the names are re-ranked when Options.Window
// is 0.
const DefaultWindow = time.Minute

// maxDeviceNames bounds the device names kept from facts.
const maxDeviceNames = 4096

// LatencyBuckets are the classic buckets of the latency histograms, in
// seconds: 1-2.5-5 steps from 1 µs to 10 s.
var LatencyBuckets = []float64{
	1e-6, 2.5e-6, 5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
	1, 2.5, 5, 10,
}

// Native histogram settings: each power of two in 8 buckets (at most 9 %
// wide), at most NativeMaxBuckets buckets (beyond them the resolution is
// halved, never reset).
const (
	NativeBucketFactor = 1.1
	NativeMaxBuckets   = 160
)

// Options configure a Sink.
type Options struct {
	// Top is how many process names, devices and error names have series
	// of their own; the rest are summed under Other. DefaultTop when 0.
	Top int
	// Window is how often the admitted names are re-ranked, in event
	// time. DefaultWindow when 0.
	Window time.Duration
}

// seriesKey selects the series of an event: slots of the TopNs (0 is
// Other; dev -1 is no device).
type seriesKey struct {
	layer, op uint8
	dev, comm int32
}

// series are one key's metric children, looked up once.
type series struct {
	ops     prometheus.Counter
	bytes   prometheus.Counter
	latency prometheus.Observer
}

// Sources of a read's bytes (page-cache provenance), the source label
// of iotrace_read_bytes_total.
const (
	srcCached = iota
	srcReadahead
	srcDisk
	srcWaited
	srcUnknown
	numSources
)

var sourceNames = [numSources]string{"cached", "readahead", "disk", "waited", "unknown"}

type errorKey struct {
	layer, op uint8
	err, comm int32
}

// Sink is an event.Sink that aggregates events into Prometheus metrics
// with bounded label sets, and a prometheus.Collector of them. Events,
// facts, Begin and End come from one goroutine (a backend's stream);
// Collect may run concurrently from any.
type Sink struct {
	ops, bytes, errors, incomplete *prometheus.CounterVec
	reads                          *prometheus.CounterVec
	latency                        *prometheus.HistogramVec
	labels                         labelCollector

	comms, devices, errNames *TopN

	series   map[seriesKey]*series
	errs     map[errorKey]prometheus.Counter
	sources  map[int32]*[numSources]prometheus.Counter // by comm slot
	devNames map[event.Device]string
	windows  bool
	// The last device's label (a stream of block I/O is mostly of one
	// device).
	lastDev  event.Device
	lastName string
}

// New returns a Sink.
func New(o Options) *Sink {
	if o.Top <= 0 {
		o.Top = DefaultTop
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	key := []string{"layer", "op", "device", "comm"}
	s := &Sink{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iotrace_operations_total",
			Help: "Operations traced (every event, completed or not), by layer, op, device and process name.",
		}, key),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iotrace_bytes_total",
			Help: "Bytes moved by reads, writes, copies and block reads and writes (as iotrace report counts them), by layer, op, device and process name.",
		}, key),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "iotrace_latency_seconds",
			Help:                            "Latency of completed operations (start to completion), by layer, op, device and process name.",
			Buckets:                         LatencyBuckets,
			NativeHistogramBucketFactor:     NativeBucketFactor,
			NativeHistogramMaxBucketNumber:  NativeMaxBuckets,
			NativeHistogramMinResetDuration: 0,
		}, key),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iotrace_errors_total",
			Help: "Failed operations by layer, op, error (errno or NTSTATUS name) and process name.",
		}, []string{"layer", "op", "error", "comm"}),
		incomplete: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iotrace_incomplete_operations_total",
			Help: "Operations whose start or completion was not seen (no latency), by layer and op.",
		}, []string{"layer", "op"}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iotrace_read_bytes_total",
			Help: "Bytes of reads of regular files by where they came from (Linux page-cache provenance): cached (in memory already), readahead (brought in by the process's read-ahead), disk (read for this read), waited (I/O already in flight), unknown (the part of a classified read that could not be).",
		}, []string{"source", "comm"}),
		sources:  make(map[int32]*[numSources]prometheus.Counter),
		series:   make(map[seriesKey]*series),
		errs:     make(map[errorKey]prometheus.Counter),
		devNames: make(map[event.Device]string),
	}
	window := int64(o.Window)
	s.comms = NewTopN(o.Top, window)
	s.devices = NewTopN(o.Top, window)
	s.errNames = NewTopN(o.Top, window)
	s.comms.Evict = func(slot int32, v string) {
		s.evict("comm", v, func(k seriesKey) bool { return k.comm == slot }, func(k errorKey) bool { return k.comm == slot })
	}
	s.devices.Evict = func(slot int32, v string) { s.evict("device", v, func(k seriesKey) bool { return k.dev == slot }, nil) }
	s.errNames.Evict = func(slot int32, v string) { s.evict("error", v, nil, func(k errorKey) bool { return k.err == slot }) }
	s.labels = labelCollector{tops: []namedTop{{"comm", s.comms}, {"device", s.devices}, {"error", s.errNames}}}
	return s
}

// evict deletes the series of an evicted label value: from the lookup
// maps (those whose key matches) and from the metric vectors.
func (s *Sink) evict(label, value string, series func(seriesKey) bool, errs func(errorKey) bool) {
	if series != nil {
		for k := range s.series {
			if series(k) {
				delete(s.series, k)
			}
		}
		m := prometheus.Labels{label: value}
		s.ops.DeletePartialMatch(m)
		s.bytes.DeletePartialMatch(m)
		s.latency.DeletePartialMatch(m)
	}
	if errs != nil {
		for k := range s.errs {
			if errs(k) {
				delete(s.errs, k)
			}
		}
		s.errors.DeletePartialMatch(prometheus.Labels{label: value})
	}
}

// Begin implements event.Sink.
func (s *Sink) Begin(h *event.Header) error {
	s.windows = isWindows(h)
	return nil
}

// Fact implements event.Sink: devices are labelled by their names.
func (s *Sink) Fact(f *event.Fact) error {
	if f.Kind == event.FactDevice && f.Name != "" {
		if _, ok := s.devNames[f.Dev]; ok || len(s.devNames) < maxDeviceNames {
			s.devNames[f.Dev] = labelValue(f.Name)
			s.lastName = ""
		}
	}
	return nil
}

// End implements event.Sink.
func (s *Sink) End(*event.Trailer) error { return nil }

// Event implements event.Sink.
func (s *Sink) Event(e *event.Event) error {
	now := e.Time
	k := seriesKey{layer: uint8(e.Layer), op: uint8(e.Op), dev: -1}
	k.comm = s.comms.Slot(labelValue(e.Comm), now)
	if !e.Dev.IsZero() {
		k.dev = s.devices.Slot(s.deviceName(e.Dev), now)
	}
	sr := s.series[k]
	if sr == nil {
		sr = s.newSeries(k)
	}
	sr.ops.Inc()
	if movesData(e.Op) {
		if b := dataBytes(e); b > 0 {
			sr.bytes.Add(float64(b))
		}
	}
	switch {
	case e.Flags&(event.FlagNoCompletion|event.FlagNoStart) != 0:
		s.incomplete.WithLabelValues(e.Layer.String(), e.Op.String()).Inc()
	case e.Layer != event.LayerMarker:
		sr.latency.Observe(float64(max(e.Duration, 0)) / 1e9)
	}
	if e.Status.Failed() {
		s.countError(e, k, now)
	} else if e.Op == event.OpRead && e.Layer == event.LayerFile {
		s.countSources(e, k.comm)
	}
	return nil
}

// countSources counts where a classified read's bytes came from.
func (s *Sink) countSources(e *event.Event, comm int32) {
	known := e.ReadKnown()
	if known == 0 || e.Flags&event.FlagNoCompletion != 0 {
		return // not classified
	}
	c := s.sources[comm]
	if c == nil {
		c = new([numSources]prometheus.Counter)
		for i := range c {
			c[i] = s.reads.WithLabelValues(sourceNames[i], s.comms.Value(comm))
		}
		s.sources[comm] = c
	}
	b := uint64(max(e.Bytes, 0))
	for i, v := range [numSources]uint64{e.ReadCached, e.ReadAhead, e.ReadDisk, e.ReadWaited, b - min(known, b)} {
		if v > 0 {
			c[i].Add(float64(v))
		}
	}
}

// deviceName returns a device's label: its name, or major:minor.
func (s *Sink) deviceName(d event.Device) string {
	if d == s.lastDev && s.lastName != "" {
		return s.lastName
	}
	name, ok := s.devNames[d]
	if !ok {
		name = d.String()
	}
	s.lastDev, s.lastName = d, name
	return name
}

func (s *Sink) newSeries(k seriesKey) *series {
	dev := ""
	if k.dev >= 0 {
		dev = s.devices.Value(k.dev)
	}
	lv := []string{event.Layer(k.layer).String(), event.Op(k.op).String(), dev, s.comms.Value(k.comm)}
	sr := &series{
		ops:     s.ops.WithLabelValues(lv...),
		bytes:   s.bytes.WithLabelValues(lv...),
		latency: s.latency.WithLabelValues(lv...),
	}
	s.series[k] = sr
	return sr
}

func (s *Sink) countError(e *event.Event, sk seriesKey, now int64) {
	k := errorKey{layer: sk.layer, op: sk.op, comm: sk.comm}
	k.err = s.errNames.Slot(errorName(e, s.windows), now)
	c := s.errs[k]
	if c == nil {
		c = s.errors.WithLabelValues(e.Layer.String(), e.Op.String(), s.errNames.Value(k.err), s.comms.Value(k.comm))
		s.errs[k] = c
	}
	c.Inc()
}

// Describe implements prometheus.Collector.
func (s *Sink) Describe(ch chan<- *prometheus.Desc) {
	s.ops.Describe(ch)
	s.bytes.Describe(ch)
	s.latency.Describe(ch)
	s.errors.Describe(ch)
	s.incomplete.Describe(ch)
	s.reads.Describe(ch)
	s.labels.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *Sink) Collect(ch chan<- prometheus.Metric) {
	s.ops.Collect(ch)
	s.bytes.Collect(ch)
	s.latency.Collect(ch)
	s.errors.Collect(ch)
	s.incomplete.Collect(ch)
	s.reads.Collect(ch)
	s.labels.Collect(ch)
}

// namedTop is a TopN and the label it bounds.
type namedTop struct {
	label string
	top   *TopN
}

// labelCollector reports how the TopNs bound their labels (from the
// counts they publish for other goroutines).
type labelCollector struct {
	tops []namedTop
}

var (
	labelValuesDesc = prometheus.NewDesc("iotrace_label_values",
		"Values of a bounded label that have series of their own now.", []string{"label"}, nil)
	labelLimitDesc = prometheus.NewDesc("iotrace_label_limit",
		"How many values of a bounded label may have series of their own (--top).", []string{"label"}, nil)
	labelEvictionsDesc = prometheus.NewDesc("iotrace_label_evictions_total",
		"Values of a bounded label whose series were removed to make room for a busier value.", []string{"label"}, nil)
	labelFoldedDesc = prometheus.NewDesc("iotrace_label_folded_total",
		"Observations counted under the label value \"(other)\" because their value had no series of its own.", []string{"label"}, nil)
)

func (l *labelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- labelValuesDesc
	ch <- labelLimitDesc
	ch <- labelEvictionsDesc
	ch <- labelFoldedDesc
}

func (l *labelCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range l.tops {
		c := t.top.Counts()
		ch <- prometheus.MustNewConstMetric(labelValuesDesc, prometheus.GaugeValue, float64(c.Admitted), t.label)
		ch <- prometheus.MustNewConstMetric(labelLimitDesc, prometheus.GaugeValue, float64(t.top.Max()), t.label)
		ch <- prometheus.MustNewConstMetric(labelEvictionsDesc, prometheus.CounterValue, float64(c.Evictions), t.label)
		ch <- prometheus.MustNewConstMetric(labelFoldedDesc, prometheus.CounterValue, float64(c.Folded), t.label)
	}
}
