package script

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/internal/suggest"
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
