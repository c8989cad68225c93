package script

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/hist"
	"go.starlark.net/starlark"
)

// histValue is one key's histogram of a hist_log2 or hist_linear
// aggregation, as a[key], a.get(key) and a.items() give it: its
// statistics are attributes (h.count, h.p99), and str(h) and print(h)
// draw it with them. It is a view of the key's cell, not a copy: values
// added to the key later show in it (and a.clear() leaves it with what
// it had).
type histValue struct {
	a *Agg
	c *cell
}

var (
	_ starlark.HasAttrs = (*histValue)(nil)
	_ starlark.Value    = (*histValue)(nil)
)

// histAttrs are the statistics a histogram value has as attributes; the
// percentiles are None when not known (cell.percentile).
var histAttrs = map[string]stat{
	"count": {name: "count", kind: statCount},
	"sum":   {name: "sum", kind: statSum},
	"min":   {name: "min", kind: statMin},
	"max":   {name: "max", kind: statMax},
	"avg":   {name: "avg", kind: statAvg},
	"p50":   {name: "p50", kind: statPct, q: 0.50},
	"p90":   {name: "p90", kind: statPct, q: 0.90},
	"p99":   {name: "p99", kind: statPct, q: 0.99},
	"p999":  {name: "p999", kind: statPct, q: 0.999},
}

var histAttrNames = func() []string {
	names := []string{"percentile"}
	for n := range histAttrs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}()

func (h *histValue) String() string {
	var b strings.Builder
	b.WriteString(h.a.statsLine(h.c))
	b.WriteByte('\n')
	drawHist(&b, h.c, hist.RenderOptions{Unit: h.a.unit})
	return strings.TrimSuffix(b.String(), "\n")
}

func (h *histValue) Type() string          { return "histogram" }
func (h *histValue) Freeze()               {} // the aggregation's handlers go on feeding it
func (h *histValue) Truth() starlark.Bool  { return h.c.n > 0 }
func (h *histValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: histogram") }
func (h *histValue) AttrNames() []string   { return histAttrNames }

func (h *histValue) Attr(name string) (starlark.Value, error) {
	if name == "percentile" {
		return starlark.NewBuiltin("percentile", h.percentile).BindReceiver(h), nil
	}
	st, ok := histAttrs[name]
	if !ok {
		return nil, nil // "histogram has no .x field or method"
	}
	if st.kind == statPct {
		if err := h.a.percentilesKept(); err != nil {
			return nil, err
		}
	}
	return statValue(st, h.c), nil
}

// percentile implements h.percentile(p), 0 <= p <= 100.
func (h *histValue) percentile(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var p starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &p); err != nil {
		return nil, err
	}
	f, ok := starlark.AsFloat(p)
	if !ok || !(f >= 0 && f <= 100) {
		return nil, fmt.Errorf("percentile: p is a number from 0 to 100 (99.9 for p999), not %s", p)
	}
	if err := h.a.percentilesKept(); err != nil {
		return nil, err
	}
	return statValue(stat{kind: statPct, q: f / 100}, h.c), nil
}

// statValue is a statistic of a cell as a Starlark value: None when not
// known.
func statValue(st stat, c *cell) starlark.Value {
	v, ok := st.of(c)
	if !ok {
		return starlark.None
	}
	return starlark.MakeInt64(v)
}

// statsLine is a histogram's statistics in one line:
// "count 14, sum 91180, min 16, avg 6512, p50 4123, p90 12998, p99 25000, max 25000 (usecs)";
// a percentile not known shows as "-"; an aggregation that keeps no
// percentiles shows none.
func (a *Agg) statsLine(c *cell) string {
	var b strings.Builder
	for i, name := range [...]string{"count", "sum", "min", "avg", "p50", "p90", "p99", "max"} {
		if histAttrs[name].kind == statPct && a.percentilesKept() != nil {
			continue
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteByte(' ')
		if v, ok := histAttrs[name].of(c); ok {
			b.WriteString(strconv.FormatInt(v, 10))
		} else {
			b.WriteByte('-')
		}
	}
	if a.unit != "" {
		fmt.Fprintf(&b, " (%s)", a.unit)
	}
	return b.String()
}
