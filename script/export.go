package script

import (
	"sort"

	"go.starlark.net/starlark"
)

// Aggregation describes one of a script's named aggregations, for a
// caller that exports them (iotrace serve makes metrics of them).
type Aggregation struct {
	// Name is the global the aggregation is bound to.
	Name string
	// Kind is its constructor: "count", "sum", "min", "max", "avg",
	// "hist_log2" or "hist_linear".
	Kind string
	// Keys are the names of its key's parts, in order.
	Keys []string
	// Unit is its unit= argument, "" when none.
	Unit string
	// Lo, Hi and Step are a hist_linear's bounds: buckets [Lo, Lo+Step),
	// ... up to Hi.
	Lo, Hi, Step int64
}

// Observer receives every value added to an aggregation: the
// aggregation's index in [Script.Aggregations], its key's parts as text
// (the slice is valid only during the call) and the value (1 for a
// count's add without one).
type Observer func(agg int, key []string, value int64)

// Aggregations returns the script's named aggregations (those bound to
// globals once its top level has run), in name order.
func (s *Script) Aggregations() []Aggregation {
	named := s.named()
	out := make([]Aggregation, len(named))
	for i, a := range named {
		out[i] = Aggregation{
			Name: a.name, Kind: a.kind.String(), Keys: append([]string(nil), a.keys...),
			Unit: a.unit, Lo: a.lo, Hi: a.hi, Step: a.step,
		}
	}
	return out
}

// Observe makes every later add() to the named aggregations call fn too,
// with the value as added: what fn keeps is not forgotten by the script's
// clear(), and the script's own output is unchanged. Call it before the
// trace begins; fn runs on whichever goroutine runs the script's handler,
// with the script's lock held (calls never overlap).
func (s *Script) Observe(fn Observer) {
	for i, a := range s.named() {
		var buf []string
		a.observe = func(parts starlark.Tuple, v int64) {
			buf = buf[:0]
			for _, p := range parts {
				buf = append(buf, labelText(p))
			}
			fn(i, buf, v)
		}
	}
}

// named returns the aggregations bound to globals, in name order (bind
// named them in that order).
func (s *Script) named() []*Agg {
	var out []*Agg
	for _, a := range s.aggs {
		if a.name != "" {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// labelText is a key part as a label: a string as it is, anything else as
// Starlark writes it.
func labelText(v starlark.Value) string {
	if s, ok := v.(starlark.String); ok {
		return string(s)
	}
	return v.String()
}
