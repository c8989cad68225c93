package script

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/internal/suggest"
	"go.starlark.net/syntax"
)

// stat names one statistic of an aggregation's key: what items() and
// print() sort by (sort="p99"), and what a histogram's attributes give.
type stat struct {
	name string // as the script wrote it ("value", "count", "p99")
	kind statKind
	q    float64 // statPct: the quantile, 0 < q <= 1
}

type statKind uint8

const (
	statKey statKind = iota // not a statistic: the key's own order
	statCount
	statSum
	statMin
	statMax
	statAvg
	statPct
)

// statKinds are the statistics every key keeps, by name.
var statKinds = map[string]statKind{
	"count": statCount, "sum": statSum, "min": statMin, "max": statMax, "avg": statAvg,
}

// sortNames are the sort= names offered in messages.
var sortNames = []string{"key", "value", "count", "sum", "min", "max", "avg", "p50", "p90", "p99", "p999"}

// defaultOrder is how an aggregation prints unless told: histograms by
// key, tables by value.
func (a *Agg) defaultOrder() stat {
	if a.kind.isHist() {
		return stat{name: "key", kind: statKey}
	}
	return stat{name: "value", kind: a.ownStat()}
}

// ownStat is the statistic an aggregation shows as its value (a
// histogram's is its count).
func (a *Agg) ownStat() statKind {
	switch a.kind {
	case aggSum:
		return statSum
	case aggMin:
		return statMin
	case aggMax:
		return statMax
	case aggAvg:
		return statAvg
	}
	return statCount
}

// parseStat parses a sort= argument: "key", "value" (the aggregation's
// own value), "count", "sum", "min", "max", "avg", or a percentile of a
// histogram ("p50", "p99", "p99.9", "p999" for 99.9).
func (a *Agg) parseStat(fn, name string) (stat, error) {
	switch name {
	case "key":
		return stat{name: name, kind: statKey}, nil
	case "value":
		return stat{name: name, kind: a.ownStat()}, nil
	}
	if k, ok := statKinds[name]; ok {
		return stat{name: name, kind: k}, nil
	}
	if q, ok := parsePercentile(name); ok {
		if !a.kind.isHist() {
			return stat{}, fmt.Errorf("%s: sort=%q needs a histogram (hist_log2, hist_linear): %s keeps count, sum, min, max and avg", fn, name, a.label())
		}
		if err := a.percentilesKept(); err != nil {
			return stat{}, fmt.Errorf("%s: %w", fn, err)
		}
		return stat{name: name, kind: statPct, q: q}, nil
	}
	return stat{}, fmt.Errorf("%s: sort is one of %s, or a percentile like \"p99.9\" (histograms), not %q%s",
		fn, strings.Join(sortNames, ", "), name, suggest.Hint(name, sortNames))
}

var statNames = [...]string{statKey: "key", statCount: "count", statSum: "sum", statMin: "min", statMax: "max", statAvg: "avg", statPct: "percentile"}

// parsePercentile parses "pN" (0 < N <= 100, "p99.9" too) and the usual
// "p999" (99.9) into a quantile.
func parsePercentile(name string) (float64, bool) {
	if name == "p999" {
		return 0.999, true
	}
	num, ok := strings.CutPrefix(name, "p")
	if !ok || num == "" || num[0] < '0' || num[0] > '9' {
		return 0, false
	}
	p, err := strconv.ParseFloat(num, 64)
	if err != nil || !(p > 0 && p <= 100) {
		return 0, false
	}
	return p / 100, true
}

// of returns the statistic of a cell, and whether it is known (a
// percentile may not be: see cell.percentile).
func (s stat) of(c *cell) (int64, bool) {
	switch s.kind {
	case statCount:
		return c.n, true
	case statSum:
		return c.sum, true
	case statMin:
		return c.min, true
	case statMax:
		return c.max, true
	case statAvg:
		return avg(c.sum, c.n), true
	case statPct:
		return c.percentile(s.q)
	}
	return 0, false
}

// percentile returns the q-quantile of a histogram's values, by nearest
// rank, and whether it is known: hist_log2 from its sketch (within 1/128
// of the value), hist_linear from its buckets (within half a step). It is
// not known for a hist_log2 with values below 0 (they are not in its
// buckets) nor for a hist_linear rank that fell under or over its range.
func (c *cell) percentile(q float64) (int64, bool) {
	switch {
	case c.lin != nil:
		return c.lin.Quantile(q)
	case c.sketch != nil && c.neg == 0 && c.n > 0:
		v := c.sketch.Quantile(q)
		return int64(min(v, math.MaxInt64)), true
	}
	return 0, false
}

// sorted returns the cells ordered by the statistic, largest first (ties,
// and every cell when by is the key, by key; unknown values last), at
// most limit of them (0: all).
func (a *Agg) sorted(by stat, limit int) []*cell {
	cells := append([]*cell(nil), a.order...)
	if by.kind == statKey {
		sort.SliceStable(cells, func(i, j int) bool { return lessKey(cells[i].parts, cells[j].parts) })
	} else {
		type ranked struct {
			c     *cell
			v     int64
			known bool
		}
		r := make([]ranked, len(cells))
		for i, c := range cells {
			v, ok := by.of(c)
			r[i] = ranked{c, v, ok}
		}
		sort.SliceStable(r, func(i, j int) bool {
			if r[i].known != r[j].known {
				return r[i].known
			}
			if r[i].v != r[j].v {
				return r[i].v > r[j].v
			}
			return lessKey(r[i].c.parts, r[j].c.parts)
		})
		for i := range r {
			cells[i] = r[i].c
		}
	}
	if limit > 0 && len(cells) > limit {
		cells = cells[:limit]
	}
	return cells
}

// percentilesKept says why the aggregation has no percentiles, nil when
// it has them.
func (a *Agg) percentilesKept() error {
	switch {
	case !a.kind.isHist():
		return fmt.Errorf("%s has no percentiles (histograms have them)", a.label())
	case a.kind == aggLog2 && !a.sketches:
		return fmt.Errorf("%s keeps no percentiles: they are kept when the script names one where it can be seen before it runs (h.p99, h.percentile(p), sort=\"p99\"), not through a computed name", a.label())
	}
	return nil
}

// usesPercentiles reports whether a script may ask for percentiles: an
// attribute or a string named like one (h.p99, h.percentile(50),
// sort="p99", getattr(h, "p50")), or a sort= that is not a string
// written out (sort=order, **opts). Only then do its hist_log2
// aggregations keep a sketch per key (1-2 KiB): the scripts that never
// ask pay neither its memory nor its time.
func usesPercentiles(f *syntax.File) bool {
	named := func(name string) bool {
		_, ok := parsePercentile(name)
		return ok || name == "percentile"
	}
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.DotExpr:
			found = found || named(n.Name.Name)
		case *syntax.Literal:
			if v, ok := n.Value.(string); ok && n.Token == syntax.STRING {
				found = found || named(v)
			}
		case *syntax.CallExpr:
			for _, arg := range n.Args {
				switch arg := arg.(type) {
				case *syntax.BinaryExpr: // name=value
					if id, ok := arg.X.(*syntax.Ident); ok && id.Name == "sort" && !isString(arg.Y) {
						found = true
					}
				case *syntax.UnaryExpr: // **kwargs
					found = found || arg.Op == syntax.STARSTAR
				}
			}
		}
		return !found
	})
	return found
}
