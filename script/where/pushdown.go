package where

import (
	"slices"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"go.starlark.net/syntax"
)

// Pushdown is what a backend can filter itself: the top-level conditions
// of a filter of the form pid == N, pid in (...), comm == '...', comm in
// (...), layer == '...', op == '...' and op in (...), joined by 'and'.
// Empty fields do not restrict. A backend may apply less than this; the
// filter is always applied in full afterwards.
type Pushdown struct {
	Pids   []uint32
	Comms  []string
	Layers []event.Layer
	Ops    []event.Op
	// Never is set when the conditions contradict each other (pid == 1
	// and pid == 2): no event can pass.
	Never bool
}

// Empty reports whether p restricts nothing.
func (p Pushdown) Empty() bool {
	return !p.Never && len(p.Pids) == 0 && len(p.Comms) == 0 && len(p.Layers) == 0 && len(p.Ops) == 0
}

// String describes p for a log line: "pid in (12) and op in (read, write)".
func (p Pushdown) String() string {
	var parts []string
	if p.Never {
		return "nothing (contradictory conditions)"
	}
	if len(p.Pids) > 0 {
		s := make([]string, len(p.Pids))
		for i, v := range p.Pids {
			s[i] = strconv.FormatUint(uint64(v), 10)
		}
		parts = append(parts, "pid in ("+strings.Join(s, ", ")+")")
	}
	if len(p.Comms) > 0 {
		parts = append(parts, "comm in ("+strings.Join(p.Comms, ", ")+")")
	}
	if len(p.Layers) > 0 {
		s := make([]string, len(p.Layers))
		for i, v := range p.Layers {
			s[i] = v.String()
		}
		parts = append(parts, "layer in ("+strings.Join(s, ", ")+")")
	}
	if len(p.Ops) > 0 {
		s := make([]string, len(p.Ops))
		for i, v := range p.Ops {
			s[i] = v.String()
		}
		parts = append(parts, "op in ("+strings.Join(s, ", ")+")")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " and ")
}

// Apply narrows o by p: empty option lists are set from p, non-empty ones
// are intersected with it. It leaves o unchanged where p is empty.
func (p Pushdown) Apply(o *backend.Options) {
	o.Pids = intersect(o.Pids, p.Pids)
	o.Comms = intersect(o.Comms, p.Comms)
	o.Layers = intersect(o.Layers, p.Layers)
	o.Ops = intersect(o.Ops, p.Ops)
}

// intersect returns a ∩ b, where an empty list means "everything".
func intersect[T comparable](a, b []T) []T {
	if len(a) == 0 {
		return slices.Clone(b)
	}
	if len(b) == 0 {
		return a
	}
	var out []T
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func (p Pushdown) intersect(q Pushdown) Pushdown {
	r := Pushdown{
		Pids:   intersect(p.Pids, q.Pids),
		Comms:  intersect(p.Comms, q.Comms),
		Layers: intersect(p.Layers, q.Layers),
		Ops:    intersect(p.Ops, q.Ops),
		Never:  p.Never || q.Never,
	}
	r.check(p, q)
	return r
}

// check sets Never when both sides restricted a field and nothing is left.
func (r *Pushdown) check(p, q Pushdown) {
	empty := func(a, b, out int) bool { return a > 0 && b > 0 && out == 0 }
	if empty(len(p.Pids), len(q.Pids), len(r.Pids)) || empty(len(p.Comms), len(q.Comms), len(r.Comms)) ||
		empty(len(p.Layers), len(q.Layers), len(r.Layers)) || empty(len(p.Ops), len(q.Ops), len(r.Ops)) {
		r.Never = true
	}
}

// pushdownOf extracts the pushdown of a compiled (hence valid) expression.
func pushdownOf(x syntax.Expr) Pushdown {
	var p Pushdown
	for _, c := range conjuncts(x, nil) {
		p = p.intersect(condition(c))
	}
	// Ops imply layers.
	if len(p.Ops) > 0 {
		var ls []event.Layer
		for _, o := range p.Ops {
			if l := o.Layer(); l != event.LayerUnknown && !slices.Contains(ls, l) {
				ls = append(ls, l)
			}
		}
		slices.Sort(ls)
		q := p
		p = p.intersect(Pushdown{Layers: ls})
		p.check(q, Pushdown{Layers: ls})
	}
	return p
}

func conjuncts(x syntax.Expr, out []syntax.Expr) []syntax.Expr {
	switch x := x.(type) {
	case *syntax.ParenExpr:
		return conjuncts(x.X, out)
	case *syntax.BinaryExpr:
		if x.Op == syntax.AND {
			return conjuncts(x.Y, conjuncts(x.X, out))
		}
	}
	return append(out, x)
}

// condition returns the pushdown of one conjunct, empty when it is not a
// pushable condition.
func condition(x syntax.Expr) Pushdown {
	for {
		p, ok := x.(*syntax.ParenExpr)
		if !ok {
			break
		}
		x = p.X
	}
	b, ok := x.(*syntax.BinaryExpr)
	if !ok || (b.Op != syntax.EQL && b.Op != syntax.IN) {
		return Pushdown{}
	}
	id, ok := unparen(b.X).(*syntax.Ident)
	other := b.Y
	if !ok && b.Op == syntax.EQL {
		id, ok = unparen(b.Y).(*syntax.Ident)
		other = b.X
	}
	if !ok {
		return Pushdown{}
	}
	var lits []*syntax.Literal
	switch y := unparen(other).(type) {
	case *syntax.Literal:
		if b.Op != syntax.EQL {
			return Pushdown{}
		}
		lits = []*syntax.Literal{y}
	case *syntax.TupleExpr:
		if lits = literals(y.List); lits == nil {
			return Pushdown{}
		}
	case *syntax.ListExpr:
		if lits = literals(y.List); lits == nil {
			return Pushdown{}
		}
	default:
		return Pushdown{}
	}
	var p Pushdown
	for _, l := range lits {
		switch id.Name {
		case "pid":
			v, ok := l.Value.(int64)
			if !ok || v < 0 || v > 1<<32-1 {
				return Pushdown{Never: true}
			}
			p.Pids = appendNew(p.Pids, uint32(v))
		case "comm":
			s, ok := l.Value.(string)
			if !ok {
				return Pushdown{}
			}
			p.Comms = appendNew(p.Comms, s)
		case "layer":
			s, _ := l.Value.(string)
			v, err := event.ParseLayer(s)
			if err != nil {
				return Pushdown{}
			}
			p.Layers = appendNew(p.Layers, v)
		case "op":
			s, _ := l.Value.(string)
			v, err := event.ParseOp(s)
			if err != nil {
				return Pushdown{}
			}
			p.Ops = appendNew(p.Ops, v)
		default:
			return Pushdown{}
		}
	}
	if len(lits) == 0 {
		// "pid in ()" matches nothing.
		switch id.Name {
		case "pid", "comm", "layer", "op":
			p.Never = true
		}
	}
	return p
}

func unparen(x syntax.Expr) syntax.Expr {
	for {
		p, ok := x.(*syntax.ParenExpr)
		if !ok {
			return x
		}
		x = p.X
	}
}

func literals(xs []syntax.Expr) []*syntax.Literal {
	out := make([]*syntax.Literal, 0, len(xs))
	for _, x := range xs {
		l, ok := unparen(x).(*syntax.Literal)
		if !ok {
			return nil
		}
		out = append(out, l)
	}
	return out
}

func appendNew[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
