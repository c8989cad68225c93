package report

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/hist"
)

// UnknownHost names the host of a trace that does not say which machine it
// was recorded on.
const UnknownHost = "(unknown host)"

// Merge combines the reports of several traces, from one host or many,
// into one: the report of the traces together, without their events.
// Totals, op counts and bytes are exact; op latency percentiles come from
// the merged sketches (within hist.SketchRelativeError, as for one trace).
// Lists that rank (processes, files, errors, the slowest operations) are
// the top entries of the parts' own top lists, each marked with its host;
// devices and markers are listed per host. Hosts summarizes each host and
// Traces lists the traces. Merged reports merge again.
//
// A part whose op latencies lack their sketches (JSON from an iotrace
// before sketches were written) cannot be merged: Merge says which.
func Merge(parts []*Result, top int) (*Result, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("merge: no reports")
	}
	if top <= 0 {
		top = parts[0].Top
	}
	out := &Result{Top: top}
	hosts := map[string]*hostAcc{}
	var order []string
	fleet := newOpAcc()
	cache := cacheAcc{perOp: newSumList(opDiskKey, addOpDisk)}
	layers, problems, tracking := newLayers(), newSumList(problemKey, addProblem), newSumList(trackingKey, addTracking)
	for i, p := range parts {
		if err := checkSketches(p); err != nil {
			return nil, fmt.Errorf("report %d (%s): %w", i+1, describeTrace(&p.Trace), err)
		}
		for _, h := range hostsOf(p) {
			key := h.Host + "\x00" + h.OS
			acc := hosts[key]
			if acc == nil {
				acc = &hostAcc{HostSummary: HostSummary{Host: h.Host, OS: h.OS}, ops: newOpAcc(), layers: newLayers()}
				hosts[key] = acc
				order = append(order, key)
			}
			if err := acc.add(h); err != nil {
				return nil, fmt.Errorf("report %d (%s): host %s: %w", i+1, describeTrace(&p.Trace), h.Host, err)
			}
		}
		if p.Traces != nil {
			out.Traces = append(out.Traces, p.Traces...)
		} else {
			out.Traces = append(out.Traces, p.Trace)
		}
		if err := fleet.addOps(p.Ops); err != nil {
			return nil, fmt.Errorf("report %d (%s): %w", i+1, describeTrace(&p.Trace), err)
		}
		layers.addAll(p.Layers)
		problems.addAll(p.Problems)
		host := hostOf(&p.Trace)
		entityHost := func(e *Entity) *string { return &e.Host }
		out.Processes = appendOnHost(out.Processes, p.Processes, host, entityHost)
		out.FilesByBytes = appendOnHost(out.FilesByBytes, p.FilesByBytes, host, entityHost)
		out.FilesByTime = appendOnHost(out.FilesByTime, p.FilesByTime, host, entityHost)
		out.Devices = appendOnHost(out.Devices, p.Devices, host, func(d *Device) *string { return &d.Host })
		out.Errors = appendOnHost(out.Errors, p.Errors, host, func(e *ErrorGroup) *string { return &e.Host })
		out.ErrorsTotal += p.ErrorsTotal
		slowHost := func(s *SlowOp) *string { return &s.Host }
		out.Slowest = appendOnHost(out.Slowest, p.Slowest, host, slowHost)
		out.SlowestBlock = appendOnHost(out.SlowestBlock, p.SlowestBlock, host, slowHost)
		out.Markers = appendOnHost(out.Markers, p.Markers, host, func(m *Marker) *string { return &m.Host })
		if p.Cache != nil {
			cache.add(p.Cache)
		}
		tracking.addAll(p.Tracking)
		out.Excluded += p.Excluded
	}
	out.Layers, out.Problems, out.Tracking = layers.list, problems.list, tracking.list
	out.Trace = fleetInfo(out.Traces)
	out.Ops = fleet.result()
	for _, k := range order {
		out.Hosts = append(out.Hosts, hosts[k].result())
	}
	slices.SortStableFunc(out.Hosts, func(a, b HostSummary) int { return cmp.Compare(a.Host, b.Host) })
	out.Processes = topBy(out.Processes, top, func(e *Entity) uint64 { return e.Time })
	for i := range out.Processes {
		out.Processes[i].Depth = 0 // the tree of one trace does not hold across traces
	}
	out.FilesByBytes = topBy(out.FilesByBytes, top, func(e *Entity) uint64 { return e.Bytes })
	out.FilesByTime = topBy(out.FilesByTime, top, func(e *Entity) uint64 { return e.Time })
	slices.SortStableFunc(out.Errors, func(a, b ErrorGroup) int { return cmp.Compare(b.Count, a.Count) })
	out.Errors = out.Errors[:min(len(out.Errors), top)]
	out.Slowest = slowest(out.Slowest, top)
	out.SlowestBlock = slowest(out.SlowestBlock, top)
	if cache.seen {
		out.Cache = cache.result()
	}
	return out, nil
}

// checkSketches reports an op with completed operations but no sketch.
func checkSketches(p *Result) error {
	check := func(ops []OpSummary) error {
		for _, o := range ops {
			if o.Latency.Count > 0 && o.Sketch == nil {
				return fmt.Errorf("op %s has latencies but no latency_sketch: a report written by an older iotrace cannot be merged; run iotrace report --format json on its trace again", o.Op)
			}
		}
		return nil
	}
	if err := check(p.Ops); err != nil {
		return err
	}
	for _, h := range p.Hosts {
		if err := check(h.Ops); err != nil {
			return err
		}
	}
	return nil
}

func describeTrace(t *TraceInfo) string {
	s := hostOf(t)
	if t.Start != "" {
		s += " at " + t.Start
	}
	return s
}

// hostOf is the host name of a trace, UnknownHost when it has none.
func hostOf(t *TraceInfo) string { return cmp.Or(t.Hostname, UnknownHost) }

// hostsOf returns p's per-host summaries: its own for a merged report, one
// made of its totals for the report of one trace.
func hostsOf(p *Result) []HostSummary {
	if p.Hosts != nil {
		return p.Hosts
	}
	var problems uint64
	for _, pr := range p.Problems {
		problems += pr.Value
	}
	return []HostSummary{{Host: hostOf(&p.Trace), OS: p.Trace.OS, Traces: 1, Events: p.Trace.Events,
		Duration: p.Trace.Duration, Problems: problems, Layers: p.Layers, Ops: p.Ops}}
}

// hostAcc accumulates one host's summaries.
type hostAcc struct {
	HostSummary
	ops    *opAcc
	layers *sumList[LayerSummary, string]
}

func (h *hostAcc) add(s HostSummary) error {
	h.Traces += s.Traces
	h.Events += s.Events
	h.Duration += s.Duration
	h.Problems += s.Problems
	h.layers.addAll(s.Layers)
	return h.ops.addOps(s.Ops)
}

func (h *hostAcc) result() HostSummary {
	s := h.HostSummary
	s.Ops = h.ops.result()
	s.Layers = h.layers.list
	return s
}

// opAcc merges op summaries by layer and op.
type opAcc struct {
	m     map[[2]string]*opMerge
	order [][2]string
}

type opMerge struct {
	OpSummary
	lat *hist.Sketch
}

func newOpAcc() *opAcc { return &opAcc{m: map[[2]string]*opMerge{}} }

func (a *opAcc) addOps(ops []OpSummary) error {
	for _, o := range ops {
		k := [2]string{o.Layer, o.Op}
		m := a.m[k]
		if m == nil {
			m = &opMerge{OpSummary: OpSummary{Op: o.Op, Layer: o.Layer}, lat: &hist.Sketch{}}
			a.m[k] = m
			a.order = append(a.order, k)
		}
		m.Count += o.Count
		m.Bytes += o.Bytes
		m.Time += o.Time
		m.Failed += o.Failed
		m.Incomplete += o.Incomplete
		m.DiskIOs += o.DiskIOs
		m.DiskBytes += o.DiskBytes
		m.Histogram = hist.MergeSummaries(m.Histogram, o.Histogram)
		if o.Sketch != nil {
			s, err := hist.SketchFromData(*o.Sketch)
			if err != nil {
				return fmt.Errorf("op %s latency_sketch: %w", o.Op, err)
			}
			if s.Count() != o.Latency.Count {
				return fmt.Errorf("op %s latency_sketch counts %d, latency_ns %d", o.Op, s.Count(), o.Latency.Count)
			}
			m.lat.Merge(s)
		}
	}
	return nil
}

// result returns the merged ops in the order of event.Op (as one report
// lists them: layer by layer).
func (a *opAcc) result() []OpSummary {
	out := make([]OpSummary, 0, len(a.order))
	for _, k := range a.order {
		m := a.m[k]
		m.Latency = m.lat.Summary()
		m.Sketch = sketchData(m.lat)
		out = append(out, m.OpSummary)
	}
	rank := opRank()
	at := func(op string) int {
		if r, ok := rank[op]; ok {
			return r
		}
		return event.NumOps
	}
	slices.SortStableFunc(out, func(x, y OpSummary) int { return cmp.Compare(at(x.Op), at(y.Op)) })
	return out
}

// sumList is a list whose entries of one key are added together, in the
// order the keys were first seen; the positions by key keep a merge of
// many entries linear.
type sumList[T any, K comparable] struct {
	list []T
	at   map[K]int
	key  func(*T) K
	add  func(d, v *T)
}

func newSumList[T any, K comparable](key func(*T) K, add func(d, v *T)) *sumList[T, K] {
	return &sumList[T, K]{at: map[K]int{}, key: key, add: add}
}

// addAll adds each entry of src to the entry of its key, or appends it.
func (l *sumList[T, K]) addAll(src []T) {
	for _, v := range src {
		k := l.key(&v)
		if i, ok := l.at[k]; ok {
			l.add(&l.list[i], &v)
			continue
		}
		l.at[k] = len(l.list)
		l.list = append(l.list, v)
	}
}

func newLayers() *sumList[LayerSummary, string] {
	return newSumList(func(l *LayerSummary) string { return l.Layer }, func(d, l *LayerSummary) {
		d.Ops += l.Ops
		d.Bytes += l.Bytes
		d.Time += l.Time
		d.Failed += l.Failed
		d.Incomplete += l.Incomplete
		d.NotTraced = d.NotTraced && l.NotTraced
	})
}

func problemKey(p *Problem) [3]string { return [3]string{p.Kind, p.Name, p.Origin} }

func addProblem(d, p *Problem) { d.Value += p.Value }

func trackingKey(t *TrackingInfo) string { return t.Table }

func addTracking(d, t *TrackingInfo) { d.Tracked += t.Tracked; d.Pruned += t.Pruned }

func opDiskKey(o *OpDisk) string { return o.Op }

func addOpDisk(d, o *OpDisk) {
	d.Count += o.Count
	d.DiskIOs += o.DiskIOs
	d.DiskBytes += o.DiskBytes
}

// appendOnHost appends src to dst, setting the host of the entries that
// have none (those of a one-trace report) to host.
func appendOnHost[T any](dst, src []T, host string, hostOf func(*T) *string) []T {
	for _, v := range src {
		if h := hostOf(&v); *h == "" {
			*h = host
		}
		dst = append(dst, v)
	}
	return dst
}

// topBy sorts es by metric, largest first (ties by host and name), and
// keeps the first n.
func topBy(es []Entity, n int, metric func(*Entity) uint64) []Entity {
	slices.SortStableFunc(es, func(a, b Entity) int {
		return cmp.Or(cmp.Compare(metric(&b), metric(&a)), cmp.Compare(a.Host, b.Host), cmp.Compare(a.Name, b.Name))
	})
	return es[:min(len(es), n)]
}

func slowest(s []SlowOp, n int) []SlowOp {
	slices.SortStableFunc(s, func(a, b SlowOp) int { return cmp.Compare(b.Duration, a.Duration) })
	return s[:min(len(s), n)]
}

// cacheAcc adds up cache counts.
type cacheAcc struct {
	seen  bool
	c     CacheCounts
	perOp *sumList[OpDisk, string]
}

func (a *cacheAcc) add(c *Cache) {
	a.seen = true
	a.c.Reads += c.Reads
	a.c.DiskReads += c.DiskReads
	a.c.WaitedReads += c.WaitedReads
	a.c.CacheReads += c.CacheReads
	a.c.OtherReads += c.OtherReads
	a.c.BytesCache += c.BytesCache
	a.c.BytesDisk += c.BytesDisk
	a.c.BytesWaited += c.BytesWaited
	a.c.BytesOther += c.BytesOther
	a.c.BytesReadahead += c.BytesReadahead
	a.c.Provenance = a.c.Provenance || c.Provenance
	a.c.FSOps += c.FSOps
	a.c.DiskIOs += c.DiskIOs
	a.c.DiskBytes += c.DiskBytes
	a.perOp.addAll(c.PerOp)
}

func (a *cacheAcc) result() *Cache {
	c := &Cache{CacheCounts: a.c, PerOp: a.perOp.list}
	c.HitRatio = ratio(c.CacheReads, c.CacheReads+c.DiskReads+c.WaitedReads)
	if c.Provenance {
		c.MemoryRatio = ratio(c.BytesCache, c.BytesCache+c.BytesReadahead+c.BytesDisk+c.BytesWaited)
	}
	c.DiskIOsPerFSOp = ratio(c.DiskIOs, c.FSOps)
	for i := range c.PerOp {
		c.PerOp[i].DiskIOsPerFSOp = ratio(c.PerOp[i].DiskIOs, c.PerOp[i].Count)
	}
	return c
}

// fleetInfo describes the traces together: one OS or "mixed", the host
// when there is one, events and facts added up, from the earliest start
// to the latest end.
func fleetInfo(ts []TraceInfo) TraceInfo {
	out := TraceInfo{Source: "merged", Complete: true}
	var first, last time.Time
	for i, t := range ts {
		if i == 0 {
			out.OS, out.OSVersion, out.Hostname, out.Command = t.OS, t.OSVersion, t.Hostname, t.Command
		} else {
			if out.OS != t.OS {
				out.OS = "mixed"
			}
			if out.OSVersion != t.OSVersion {
				out.OSVersion = ""
			}
			if out.Hostname != t.Hostname {
				out.Hostname = ""
			}
			if out.Command != t.Command {
				out.Command = ""
			}
		}
		out.Events += t.Events
		out.Facts += t.Facts
		out.Complete = out.Complete && t.Complete
		out.Duration = max(out.Duration, t.Duration)
		if st, err := time.Parse(time.RFC3339Nano, t.Start); err == nil {
			end := st.Add(time.Duration(t.Duration))
			if first.IsZero() || st.Before(first) {
				first = st
			}
			if end.After(last) {
				last = end
			}
		}
	}
	if !first.IsZero() {
		out.Start = first.UTC().Format(time.RFC3339Nano)
		out.Duration = max(out.Duration, int64(last.Sub(first)))
	}
	return out
}

// opRank orders op names as event.Op does; unknown names go last.
func opRank() map[string]int {
	m := make(map[string]int, event.NumOps)
	for op := range event.NumOps {
		m[event.Op(op).String()] = op
	}
	return m
}
