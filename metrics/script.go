package metrics

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/iotrace/iotrace/script"
)

// Log2Bits is how many classic buckets a hist_log2 aggregation's metric
// has: le = 2^k - 1 for k = 0..Log2Bits (integer values: exactly the
// script's buckets [2^k, 2^(k+1))), then +Inf.
const Log2Bits = 32

// maxLinearBuckets bounds a hist_linear metric's classic buckets: a finer
// histogram keeps every k-th of the script's bucket bounds.
const maxLinearBuckets = 64

// ScriptOptions configure a ScriptMetrics.
type ScriptOptions struct {
	// Top is how many keys of each aggregation have series of their own;
	// the rest are summed in one series whose labels are all Other.
	// DefaultTop when 0.
	Top int
	// Window is how often the keys are re-ranked; DefaultWindow when 0.
	Window time.Duration
	// Now is the clock of the windows (wall time since an origin);
	// time.Since(start) when nil.
	Now func() time.Duration
	// Source names the script in the metrics' help ("biolatency.star").
	Source string
}

// ScriptMetrics exports a script's aggregations as metrics: each named
// aggregation is a metric named iotrace_script_NAME (with _UNIT when it
// has a unit=, and _total for counters), its key parts are labels, and
// its keys are bounded as process names are (a TopN per aggregation).
// What it exports is what the script added, from the moment serve
// started, whatever the script's own clear() forgets:
//
//	count        a counter of the values added
//	sum          a counter of their sum (negative values are not
//	             added: counted in iotrace_script_negative_values_total)
//	avg          a summary (_sum and _count; no quantiles)
//	min, max     a gauge of the least or greatest value added
//	hist_log2    a histogram with classic buckets le = 2^k - 1 and
//	             native buckets, in the script's unit (negative values
//	             counted apart, as the script's table leaves them out)
//	hist_linear  a histogram with the script's bucket bounds (le = each
//	             bound - 1, at most 64 of them) and native buckets
//
// Observe is the script's script.Observer: calls come one at a time.
// Collect may run concurrently from any goroutine.
type ScriptMetrics struct {
	aggs     []*exported
	now      func() time.Duration
	negative *prometheus.CounterVec
}

// exported is one aggregation's metric.
type exported struct {
	spec   script.Aggregation
	top    *TopN
	labels []string // label names
	child  map[int32]scriptChild
	key    []string // the key's label values (scratch)
	vec    interface {
		prometheus.Collector
		DeleteLabelValues(...string) bool
	}
	make func(lv []string) scriptChild
}

// scriptChild is one key's series: its label values and how a value is
// added to it.
type scriptChild struct {
	labels []string
	add    func(v int64)
}

// NewScriptMetrics returns the metrics of a script's aggregations.
func NewScriptMetrics(aggs []script.Aggregation, o ScriptOptions) (*ScriptMetrics, error) {
	if o.Top <= 0 {
		o.Top = DefaultTop
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Now == nil {
		start := time.Now()
		o.Now = func() time.Duration { return time.Since(start) }
	}
	m := &ScriptMetrics{
		now: o.Now,
		negative: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iotrace_script_negative_values_total",
			Help: "Negative values added to a script's sum or hist_log2 aggregation: not in its metric.",
		}, []string{"aggregation"}),
	}
	names := map[string]bool{"iotrace_script_negative_values_total": true}
	for _, a := range aggs {
		e, err := newExported(a, o, names)
		if err != nil {
			return nil, err
		}
		m.aggs = append(m.aggs, e)
	}
	return m, nil
}

func newExported(a script.Aggregation, o ScriptOptions, names map[string]bool) (*exported, error) {
	e := &exported{spec: a, child: make(map[int32]scriptChild), top: NewTopN(o.Top, int64(o.Window))}
	name := "iotrace_script_" + metricName(a.Name)
	if a.Unit != "" && a.Kind != "count" {
		name += "_" + metricName(a.Unit)
	}
	if a.Kind == "count" || a.Kind == "sum" {
		name += "_total"
	}
	name = unique(name, names)
	reserved := map[string]bool{}
	switch a.Kind {
	case "hist_log2", "hist_linear":
		reserved["le"] = true
	case "avg":
		reserved["quantile"] = true
	}
	e.labels = labelNames(a.Keys, reserved)
	help := fmt.Sprintf("iotrace script %s: %s(%s) %s", o.Source, a.Kind, strings.Join(quoteAll(a.Keys), ", "), a.Name)
	switch a.Kind {
	case "count", "sum":
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, e.labels)
		e.vec = v
		e.make = func(lv []string) scriptChild {
			c := v.WithLabelValues(lv...)
			if a.Kind == "count" {
				return scriptChild{labels: lv, add: func(int64) { c.Inc() }}
			}
			return scriptChild{labels: lv, add: func(x int64) { c.Add(float64(x)) }}
		}
	case "avg":
		v := prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: name, Help: help}, e.labels)
		e.vec = v
		e.make = func(lv []string) scriptChild {
			s := v.WithLabelValues(lv...)
			return scriptChild{labels: lv, add: func(x int64) { s.Observe(float64(x)) }}
		}
	case "min", "max":
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, e.labels)
		e.vec = v
		isMin := a.Kind == "min"
		e.make = func(lv []string) scriptChild {
			g := v.WithLabelValues(lv...)
			var cur int64
			set := false
			return scriptChild{labels: lv, add: func(x int64) {
				if !set || (isMin && x < cur) || (!isMin && x > cur) {
					cur, set = x, true
					g.Set(float64(x))
				}
			}}
		}
	case "hist_log2", "hist_linear":
		buckets := Log2Buckets()
		if a.Kind == "hist_linear" {
			buckets = linearBuckets(a.Lo, a.Hi, a.Step)
		}
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: help, Buckets: buckets,
			NativeHistogramBucketFactor:    NativeBucketFactor,
			NativeHistogramMaxBucketNumber: NativeMaxBuckets,
		}, e.labels)
		e.vec = v
		e.make = func(lv []string) scriptChild {
			h := v.WithLabelValues(lv...)
			return scriptChild{labels: lv, add: func(x int64) { h.Observe(float64(x)) }}
		}
	default:
		return nil, fmt.Errorf("aggregation %s: kind %q cannot be exported", a.Name, a.Kind)
	}
	e.top.Evict = func(slot int32, _ string) {
		if c, ok := e.child[slot]; ok {
			e.vec.DeleteLabelValues(c.labels...)
			delete(e.child, slot)
		}
	}
	return e, nil
}

// Observe implements script.Observer.
func (m *ScriptMetrics) Observe(agg int, key []string, v int64) {
	if agg < 0 || agg >= len(m.aggs) {
		return
	}
	e := m.aggs[agg]
	if v < 0 && (e.spec.Kind == "sum" || e.spec.Kind == "hist_log2") {
		m.negative.WithLabelValues(e.spec.Name).Inc()
		return
	}
	e.key = e.key[:0]
	for _, k := range key {
		e.key = append(e.key, labelValue(k))
	}
	slot := e.top.Slot(joinKey(e.key), int64(m.now()))
	c, ok := e.child[slot]
	if !ok {
		lv := make([]string, len(e.labels))
		for i := range lv {
			if slot == 0 {
				lv[i] = Other
			} else if i < len(e.key) {
				lv[i] = e.key[i]
			}
		}
		c = e.make(lv)
		e.child[slot] = c
	}
	c.add(v)
}

// Describe implements prometheus.Collector.
func (m *ScriptMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.negative.Describe(ch)
	for _, e := range m.aggs {
		e.vec.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *ScriptMetrics) Collect(ch chan<- prometheus.Metric) {
	m.negative.Collect(ch)
	for _, e := range m.aggs {
		e.vec.Collect(ch)
	}
}

// joinKey joins a key's parts into one string, each with its length
// first, so that no two keys join alike.
func joinKey(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// Log2Buckets are the bounds 2^k - 1 of a hist_log2 metric.
func Log2Buckets() []float64 {
	b := make([]float64, Log2Bits+1)
	for k := range b {
		b[k] = math.Ldexp(1, k) - 1
	}
	return b
}

// linearBuckets are the bounds of a hist_linear metric: lo-1 (below lo),
// then each bucket's last integer, at most maxLinearBuckets of them.
func linearBuckets(lo, hi, step int64) []float64 {
	n := (uint64(hi) - uint64(lo) + uint64(step) - 1) / uint64(step)
	every := (n + maxLinearBuckets - 1) / maxLinearBuckets
	out := []float64{float64(lo) - 1}
	for i := every; i <= n; i += every {
		end := uint64(lo) + i*uint64(step)
		if end > uint64(hi) || i == n {
			end = uint64(hi)
		}
		out = append(out, float64(int64(end))-1)
	}
	if last := float64(hi) - 1; out[len(out)-1] != last {
		out = append(out, last)
	}
	return out
}

// metricName makes s a valid part of a metric name: letters, digits and
// underscores.
func metricName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r >= '0' && r <= '9' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// labelNames makes key names valid, distinct label names: invalid
// characters become '_', a reserved name or one starting with "__" gets
// "key_" before it, a repeated name a number after it.
func labelNames(keys []string, reserved map[string]bool) []string {
	seen := map[string]bool{}
	out := make([]string, len(keys))
	for i, k := range keys {
		n := metricName(k)
		if n == "" || reserved[n] || strings.HasPrefix(n, "__") {
			n = "key_" + n
		}
		out[i] = unique(n, seen)
	}
	return out
}

// unique returns name, or name_2, name_3 ... when taken, and takes it.
func unique(name string, taken map[string]bool) string {
	n := name
	for i := 2; taken[n]; i++ {
		n = name + "_" + strconv.Itoa(i)
	}
	taken[n] = true
	return n
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strconv.Quote(x)
	}
	return out
}
