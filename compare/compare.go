package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/report"
)

// Mapping rewrites a path prefix: paths starting with Old start with New
// instead (on both sides).
type Mapping struct {
	Old, New string
}

// ParseMapping parses "OLD=NEW".
func ParseMapping(s string) (Mapping, error) {
	i := strings.LastIndex(s, "=")
	if i <= 0 {
		return Mapping{}, fmt.Errorf("path mapping %q: want OLD=NEW", s)
	}
	return Mapping{Old: s[:i], New: s[i+1:]}, nil
}

// Options configure a comparison.
type Options struct {
	// Map rewrites path prefixes on both sides, in order; the first match
	// wins.
	Map []Mapping
	// StripPrefix removes these prefixes from paths on both sides (after
	// Map); the longest match wins.
	StripPrefix []string
	// TopN is the number of file rows; 20 when 0.
	TopN int
	// IncludePaging keeps Windows paging I/O (FlagPaging) in the file
	// layer; by default it is left out, since Linux system calls have no
	// counterpart (it is counted in Side.Excluded).
	IncludePaging bool
	// Capacity is passed to report.Options (files tracked per side).
	Capacity int
}

// Source is a trace to read: input.Reader satisfies it.
type Source interface {
	Run(ctx context.Context, sink event.Sink) error
}

// normalizer turns a side's paths into comparable keys.
type normalizer struct {
	opts    *Options
	windows bool
}

// normSep turns backslashes into slashes and drops a trailing slash.
func normSep(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// hasPrefixFold reports whether p starts with prefix at a path boundary,
// ignoring case when fold is set.
func hasPrefixFold(p, prefix string, fold bool) bool {
	if len(p) < len(prefix) {
		return false
	}
	head := p[:len(prefix)]
	if fold {
		if !strings.EqualFold(head, prefix) {
			return false
		}
	} else if head != prefix {
		return false
	}
	return len(p) == len(prefix) || p[len(prefix)] == '/' || strings.HasSuffix(prefix, "/")
}

func (n *normalizer) key(p string) string {
	if n.windows {
		p = normSep(p)
		// \\?\C:\x and \??\C:\x are C:/x.
		for _, pre := range []string{"//?/", "/??/"} {
			p = strings.TrimPrefix(p, pre)
		}
	}
	for _, m := range n.opts.Map {
		old := normSep(m.Old)
		if hasPrefixFold(p, old, n.windows) {
			p = normSep(m.New) + p[len(old):]
			break
		}
	}
	best := ""
	for _, s := range n.opts.StripPrefix {
		s = normSep(s)
		if len(s) > len(best) && hasPrefixFold(p, s, n.windows) {
			best = s
		}
	}
	if best != "" {
		p = strings.TrimPrefix(p[len(best):], "/")
		if p == "" {
			p = "."
		}
	}
	return p
}

// Side is one summarised trace.
type Side struct {
	Label  string                `json:"label"`
	Trace  report.TraceInfo      `json:"trace"`
	Result *report.Result        `json:"-"`
	Files  []report.Entity       `json:"-"`
	Probs  []report.Problem      `json:"problems"`
	Cache  *report.Cache         `json:"cache,omitempty"`
	Layers []report.LayerSummary `json:"layers"`
	// Excluded counts paging I/O events left out (Options.IncludePaging).
	Excluded uint64 `json:"excluded,omitempty"`
}

// headerSink notes the OS of the trace before the report sees an event.
type headerSink struct {
	event.Sink
	n *normalizer
}

func (h headerSink) Begin(hdr *event.Header) error {
	h.n.windows = hdr.OS == "windows" || hdr.Source == event.SourceETLFile || hdr.Source == event.SourceETWLive
	return h.Sink.Begin(hdr)
}

// Summarise reads one trace into a Side. When reading fails part way, the
// Side holds what was read before and the error says why it stops there.
func Summarise(ctx context.Context, label string, src Source, opts Options) (*Side, error) {
	n := &normalizer{opts: &opts}
	r := report.New(report.Options{TopN: max(opts.TopN, 20), Capacity: opts.Capacity, PathKey: n.key, ExcludePaging: !opts.IncludePaging})
	err := src.Run(ctx, headerSink{Sink: r, n: n})
	if err != nil {
		err = fmt.Errorf("read %s: %w", label, err)
	}
	res := r.Result()
	return &Side{Label: label, Trace: res.Trace, Result: res, Files: r.Files(), Probs: res.Problems,
		Cache: res.Cache, Layers: res.Layers, Excluded: res.Excluded}, err
}

// Metric is one quantity on both sides.
type Metric struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
	// Ratio is B/A: 1 where the sides agree, +Inf when only B has it,
	// 0 when only A has it, NaN (encoded as null) when neither has it.
	Ratio float64 `json:"ratio"`
}

// MarshalJSON encodes non-finite ratios as null (+Inf, NaN) since JSON has
// no infinity.
func (m Metric) MarshalJSON() ([]byte, error) {
	r := "null"
	if !math.IsInf(m.Ratio, 0) && !math.IsNaN(m.Ratio) {
		r = fmt.Sprintf("%g", m.Ratio)
	}
	return []byte(fmt.Sprintf(`{"a":%g,"b":%g,"ratio":%s}`, m.A, m.B, r)), nil
}

func metric(a, b float64) Metric {
	m := Metric{A: a, B: b}
	switch {
	case a == 0 && b == 0:
		m.Ratio = math.NaN()
	case a == 0:
		m.Ratio = math.Inf(1)
	default:
		m.Ratio = b / a
	}
	return m
}

// Row is one op or file on both sides.
type Row struct {
	Key string `json:"key"`
	// Layer is set for op rows.
	Layer string `json:"layer,omitempty"`
	// Only is "a" or "b" when the key is on one side only.
	Only string `json:"only,omitempty"`
	// NotTraced is "a" or "b" on a layer row when that side's source did
	// not trace the layer: its zeros are not a difference.
	NotTraced string `json:"not_traced,omitempty"`
	Count     Metric `json:"count"`
	Bytes     Metric `json:"bytes"`
	Time      Metric `json:"time_ns"`
	P50       Metric `json:"p50_ns"`
	P90       Metric `json:"p90_ns"`
	P99       Metric `json:"p99_ns"`
	Max       Metric `json:"max_ns"`
	// DiskPerOp is block I/Os caused per operation; HitRatio the share of
	// reads served from cache. Absent (nil) when a side cannot tell.
	DiskPerOp *Metric `json:"disk_ios_per_op,omitempty"`
	HitRatio  *Metric `json:"cache_hit_ratio,omitempty"`
	// Diff is |time B - time A| in ns, the sort key.
	Diff float64 `json:"diff_ns"`
}

// Result is a comparison.
type Result struct {
	SideA *Side `json:"a"`
	SideB *Side `json:"b"`
	// Totals compares the layers and the cache.
	Totals []Row `json:"totals"`
	Ops    []Row `json:"ops"`
	// Files are the files on both sides, largest time difference first;
	// OnlyA and OnlyB the busiest files seen on one side only.
	Files []Row `json:"files"`
	OnlyA []Row `json:"only_a"`
	OnlyB []Row `json:"only_b"`
	// FilesOnlyA and FilesOnlyB count files seen on one side only (all of
	// them, also those beyond the rows shown).
	FilesOnlyA int `json:"files_only_a"`
	FilesOnlyB int `json:"files_only_b"`
	FilesBoth  int `json:"files_both"`
	// CaseFolded is set when paths were matched ignoring case (one side is
	// Windows).
	CaseFolded bool `json:"case_folded"`
}

// Compare reads both traces and compares them. When a trace is damaged,
// the comparison of what was read is returned with the error.
func Compare(ctx context.Context, a, b Source, labelA, labelB string, opts Options) (*Result, error) {
	sa, errA := Summarise(ctx, labelA, a, opts)
	if ctx.Err() != nil {
		return nil, errA
	}
	sb, errB := Summarise(ctx, labelB, b, opts)
	if ctx.Err() != nil {
		return nil, errB
	}
	return Sides(sa, sb, opts), errors.Join(errA, errB)
}

// Sides compares two summarised traces.
func Sides(a, b *Side, opts Options) *Result {
	if opts.TopN <= 0 {
		opts.TopN = 20
	}
	res := &Result{SideA: a, SideB: b}
	res.Totals = totals(a, b)
	res.Ops = opRows(a, b)
	res.CaseFolded = isWindows(a) || isWindows(b)
	rows := fileRows(a, b, res.CaseFolded)
	for _, r := range rows {
		switch r.Only {
		case "a":
			res.FilesOnlyA++
			if len(res.OnlyA) < opts.TopN/4+1 {
				res.OnlyA = append(res.OnlyA, r)
			}
		case "b":
			res.FilesOnlyB++
			if len(res.OnlyB) < opts.TopN/4+1 {
				res.OnlyB = append(res.OnlyB, r)
			}
		default:
			res.FilesBoth++
			if len(res.Files) < opts.TopN {
				res.Files = append(res.Files, r)
			}
		}
	}
	return res
}

func isWindows(s *Side) bool {
	return s.Trace.OS == "windows" || s.Trace.Source == event.SourceETLFile.String() || s.Trace.Source == event.SourceETWLive.String()
}

func totals(a, b *Side) []Row {
	layer := func(s *Side, l string) report.LayerSummary {
		for _, x := range s.Layers {
			if x.Layer == l {
				return x
			}
		}
		return report.LayerSummary{}
	}
	var rows []Row
	for _, l := range []string{"file", "block"} {
		la, lb := layer(a, l), layer(b, l)
		if la.Ops == 0 && lb.Ops == 0 {
			continue
		}
		r := Row{Key: l + " layer", Layer: l, Count: metric(float64(la.Ops), float64(lb.Ops)),
			Bytes: metric(float64(la.Bytes), float64(lb.Bytes)), Time: metric(float64(la.Time), float64(lb.Time))}
		switch {
		case la.NotTraced:
			r.NotTraced = "a"
		case lb.NotTraced:
			r.NotTraced = "b"
		}
		r.Diff = math.Abs(float64(lb.Time) - float64(la.Time))
		if l == "file" {
			r.DiskPerOp, r.HitRatio = cacheMetrics(cacheOf(a), cacheOf(b))
		}
		rows = append(rows, r)
	}
	return rows
}

func cacheOf(s *Side) *report.CacheCounts {
	if s.Cache == nil {
		return nil
	}
	return &s.Cache.CacheCounts
}

func cacheMetrics(a, b *report.CacheCounts) (disk, hit *Metric) {
	if a == nil || b == nil {
		return nil, nil
	}
	d := metric(a.DiskIOsPerFSOp, b.DiskIOsPerFSOp)
	disk = &d
	if a.Reads > 0 || b.Reads > 0 {
		h := metric(a.HitRatio, b.HitRatio)
		hit = &h
	}
	return disk, hit
}

func opRows(a, b *Side) []Row {
	type pair struct{ a, b *report.OpSummary }
	byOp := map[string]*pair{}
	var keys []string
	add := func(list []report.OpSummary, isA bool) {
		for i := range list {
			o := &list[i]
			if o.Layer == "marker" {
				continue
			}
			p := byOp[o.Op]
			if p == nil {
				p = &pair{}
				byOp[o.Op] = p
				keys = append(keys, o.Op)
			}
			if isA {
				p.a = o
			} else {
				p.b = o
			}
		}
	}
	add(a.Result.Ops, true)
	add(b.Result.Ops, false)
	var zero report.OpSummary
	rows := make([]Row, 0, len(keys))
	for _, k := range keys {
		p := byOp[k]
		oa, ob := p.a, p.b
		r := Row{Key: k}
		switch {
		case oa == nil:
			oa, r.Only, r.Layer = &zero, "b", ob.Layer
		case ob == nil:
			ob, r.Only, r.Layer = &zero, "a", oa.Layer
		default:
			r.Layer = oa.Layer
		}
		r.Count = metric(float64(oa.Count), float64(ob.Count))
		r.Bytes = metric(float64(oa.Bytes), float64(ob.Bytes))
		r.Time = metric(float64(oa.Time), float64(ob.Time))
		r.P50 = metric(float64(oa.Latency.P50), float64(ob.Latency.P50))
		r.P90 = metric(float64(oa.Latency.P90), float64(ob.Latency.P90))
		r.P99 = metric(float64(oa.Latency.P99), float64(ob.Latency.P99))
		r.Max = metric(float64(oa.Latency.Max), float64(ob.Latency.Max))
		if r.Layer == "file" && a.Cache != nil && b.Cache != nil {
			d := metric(ratio(oa.DiskIOs, oa.Count), ratio(ob.DiskIOs, ob.Count))
			r.DiskPerOp = &d
		}
		if k == "read" {
			_, r.HitRatio = cacheMetrics(cacheOf(a), cacheOf(b))
		}
		r.Diff = math.Abs(float64(ob.Time) - float64(oa.Time))
		rows = append(rows, r)
	}
	sortRows(rows)
	return rows
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// sortRows puts the largest time differences first, then by key.
func sortRows(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Diff != rows[j].Diff {
			return rows[i].Diff > rows[j].Diff
		}
		return rows[i].Key < rows[j].Key
	})
}

// fileRows lines up the files of both sides, largest time difference
// first.
func fileRows(a, b *Side, fold bool) (rows []Row) {
	key := func(s string) string {
		if fold {
			return strings.ToLower(s)
		}
		return s
	}
	index := func(list []report.Entity) map[string]*report.Entity {
		m := make(map[string]*report.Entity, len(list))
		for i := range list {
			e := &list[i]
			k := key(e.Name)
			if old := m[k]; old != nil {
				// Two names that differ only in case on a case-sensitive
				// side: add them up (latency from the busier one).
				merged := *old
				merged.Count += e.Count
				merged.Bytes += e.Bytes
				merged.Time += e.Time
				if e.Count > old.Count {
					merged.Latency = e.Latency
				}
				e = &merged
			}
			m[k] = e
		}
		return m
	}
	ma, mb := index(a.Files), index(b.Files)
	keys := make([]string, 0, len(ma)+len(mb))
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	var zero report.Entity
	for _, k := range keys {
		ea, eb := ma[k], mb[k]
		r := Row{Key: k}
		switch {
		case ea == nil:
			ea, r.Only = &zero, "b"
			r.Key = eb.Name
		case eb == nil:
			eb, r.Only = &zero, "a"
			r.Key = ea.Name
		default:
			r.Key = eb.Name
		}
		r.Count = metric(float64(ea.Count), float64(eb.Count))
		r.Bytes = metric(float64(ea.Bytes), float64(eb.Bytes))
		r.Time = metric(float64(ea.Time), float64(eb.Time))
		r.P50 = metric(float64(ea.Latency.P50), float64(eb.Latency.P50))
		r.P90 = metric(float64(ea.Latency.P90), float64(eb.Latency.P90))
		r.P99 = metric(float64(ea.Latency.P99), float64(eb.Latency.P99))
		r.Max = metric(float64(ea.Latency.Max), float64(eb.Latency.Max))
		if ea.Cache != nil && eb.Cache != nil {
			d := metric(ea.Cache.DiskIOsPerFSOp, eb.Cache.DiskIOsPerFSOp)
			r.DiskPerOp = &d
			if ea.Cache.Reads > 0 || eb.Cache.Reads > 0 {
				h := metric(ea.Cache.HitRatio, eb.Cache.HitRatio)
				r.HitRatio = &h
			}
		}
		r.Diff = math.Abs(float64(eb.Time) - float64(ea.Time))
		rows = append(rows, r)
	}
	sortRows(rows)
	return rows
}
