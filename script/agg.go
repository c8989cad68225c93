package script

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/iotrace/iotrace/hist"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// aggKind selects what an aggregation reports as its value. Every kind
// keeps count, sum, min and max per key; histograms keep buckets too.
type aggKind uint8

const (
	aggCount aggKind = iota
	aggSum
	aggMin
	aggMax
	aggAvg
	aggLog2
	aggLinear
)

var aggNames = [...]string{"count", "sum", "min", "max", "avg", "hist_log2", "hist_linear"}

func (k aggKind) String() string { return aggNames[k] }

func (k aggKind) isHist() bool { return k == aggLog2 || k == aggLinear }

// Agg is an aggregation: a map from a key (any tuple of ints, strings,
// bools, None and tuples) to running statistics, SystemTap's associative
// array of statistics. It is a Starlark value with methods.
type Agg struct {
	kind    aggKind
	name    string   // the global it is bound to, for messages
	keys    []string // key column names
	unit    string   // value label
	maxKeys int
	// hist_linear bounds.
	lo, hi, step int64
	// sketches: hist_log2 keeps a sketch per key, for percentiles.
	sketches bool

	cells map[string]*cell
	order []*cell // insertion order
	buf   []byte

	methods map[string]*starlark.Builtin
	addFn   *starlark.Builtin
	// observe, when set (Script.Observe), sees every value added.
	observe func(parts starlark.Tuple, v int64)
}

type cell struct {
	key      starlark.Value   // the key as given (a tuple for several parts)
	parts    []starlark.Value // the key's parts, one per key column
	n        int64
	sum      int64
	min, max int64
	neg      uint64 // hist_log2: values below 0, not drawn
	log2     *hist.Log2
	lin      *hist.Linear
	sketch   *hist.Sketch // hist_log2: the values >= 0 again, for percentiles
}

var (
	_ starlark.Mapping  = (*Agg)(nil)
	_ starlark.HasAttrs = (*Agg)(nil)
	_ starlark.Iterable = (*Agg)(nil)
	_ starlark.Sequence = (*Agg)(nil)
)

// newAggBuiltin returns the constructor of an aggregation kind:
// count(*keys, unit=None), ..., hist_linear(*keys, lo, hi, step, unit=None).
func (s *Script) newAggBuiltin(kind aggKind) *starlark.Builtin {
	return starlark.NewBuiltin(kind.String(), func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		a := &Agg{kind: kind, maxKeys: s.opts.MaxKeys, cells: make(map[string]*cell), sketches: kind == aggLog2 && s.percentiles}
		for i, k := range args {
			name, ok := starlark.AsString(k)
			if !ok || name == "" {
				return nil, fmt.Errorf("%s: key names are strings, like %s(\"pid\", \"comm\"); argument %d is %s", b.Name(), b.Name(), i+1, k.String())
			}
			a.keys = append(a.keys, name)
		}
		var unit starlark.Value = starlark.None
		lo, hi, step := int64(0), int64(0), int64(0)
		var err error
		if kind == aggLinear {
			err = starlark.UnpackArgs(b.Name(), nil, kwargs, "lo", &lo, "hi", &hi, "step", &step, "unit?", &unit)
		} else {
			err = starlark.UnpackArgs(b.Name(), nil, kwargs, "unit?", &unit)
		}
		if err != nil {
			return nil, err
		}
		if u, ok := starlark.AsString(unit); ok {
			a.unit = u
		} else if unit != starlark.None {
			return nil, fmt.Errorf("%s: unit must be a string", b.Name())
		}
		if kind == aggLinear {
			if _, err := hist.NewLinear(lo, hi, step); err != nil {
				return nil, fmt.Errorf("%s: %w", b.Name(), err)
			}
			a.lo, a.hi, a.step = lo, hi, step
		}
		a.methods = map[string]*starlark.Builtin{
			"add":   starlark.NewBuiltin("add", a.add).BindReceiver(a),
			"get":   starlark.NewBuiltin("get", a.get).BindReceiver(a),
			"count": starlark.NewBuiltin("count", a.stat(aggCount)).BindReceiver(a),
			"sum":   starlark.NewBuiltin("sum", a.stat(aggSum)).BindReceiver(a),
			"min":   starlark.NewBuiltin("min", a.stat(aggMin)).BindReceiver(a),
			"max":   starlark.NewBuiltin("max", a.stat(aggMax)).BindReceiver(a),
			"avg":   starlark.NewBuiltin("avg", a.stat(aggAvg)).BindReceiver(a),
			"items": starlark.NewBuiltin("items", s.aggItems).BindReceiver(a),
			"keys":  starlark.NewBuiltin("keys", a.keysFn).BindReceiver(a),
			"clear": starlark.NewBuiltin("clear", a.clear).BindReceiver(a),
			"print": starlark.NewBuiltin("print", s.aggPrint).BindReceiver(a),
		}
		a.addFn = a.methods["add"]
		s.aggs = append(s.aggs, a)
		return a, nil
	})
}

func (a *Agg) label() string {
	if a.name != "" {
		return a.kind.String() + " " + a.name
	}
	return a.kind.String()
}

// Value interface.

func (a *Agg) String() string {
	var b strings.Builder
	a.render(&b, renderOpts{by: a.defaultOrder()})
	return strings.TrimSuffix(b.String(), "\n")
}
func (a *Agg) Type() string          { return "aggregation" }
func (a *Agg) Freeze()               {} // aggregations stay writable: handlers feed them
func (a *Agg) Truth() starlark.Bool  { return len(a.order) > 0 }
func (a *Agg) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: aggregation") }
func (a *Agg) Len() int              { return len(a.order) }

func (a *Agg) AttrNames() []string {
	names := make([]string, 0, len(a.methods))
	for n := range a.methods {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (a *Agg) Attr(name string) (starlark.Value, error) {
	if name == "add" { // the hot path
		return a.addFn, nil
	}
	if m, ok := a.methods[name]; ok {
		return m, nil
	}
	return nil, nil
}

// Get implements a[key] and "key in a": the aggregation's value for key
// (a tuple when there are several key columns), a histogram's being the
// key's histogram.
func (a *Agg) Get(k starlark.Value) (starlark.Value, bool, error) {
	parts := starlark.Tuple{k}
	if len(a.keys) > 1 {
		t, ok := k.(starlark.Tuple)
		if !ok {
			return nil, false, fmt.Errorf("%s is keyed by (%s): index it with a tuple", a.label(), strings.Join(a.keys, ", "))
		}
		parts = t
	} else if len(a.keys) == 0 {
		if t, ok := k.(starlark.Tuple); ok && len(t) == 0 {
			parts = nil
		} else {
			return nil, false, fmt.Errorf("%s has no key: use %s[()] or .%s()", a.label(), a.name, a.kind)
		}
	}
	c, err := a.find(parts, false)
	if err != nil || c == nil {
		return nil, false, err
	}
	return a.keyValue(c), true, nil
}

// keyValue is what a[key] gives: the key's histogram (a live view of it)
// for a histogram, else the key's value.
func (a *Agg) keyValue(c *cell) starlark.Value {
	if a.kind.isHist() {
		return &histValue{a: a, c: c}
	}
	return a.value(c, a.kind)
}

// Iterate yields the keys in insertion order.
func (a *Agg) Iterate() starlark.Iterator { return &aggIter{a: a} }

type aggIter struct {
	a *Agg
	i int
}

func (it *aggIter) Next(p *starlark.Value) bool {
	if it.i >= len(it.a.order) {
		return false
	}
	*p = it.a.order[it.i].key
	it.i++
	return true
}
func (it *aggIter) Done() {}

// appendKey encodes one key part so that equal values encode equally.
func appendKey(buf []byte, v starlark.Value) ([]byte, error) {
	switch v := v.(type) {
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			buf = append(buf, 'i')
			return binary.LittleEndian.AppendUint64(buf, uint64(i)), nil
		}
		s := v.String()
		buf = append(buf, 'I')
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		return append(buf, s...), nil
	case starlark.String:
		buf = append(buf, 's')
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		return append(buf, v...), nil
	case starlark.Bool:
		if v {
			return append(buf, 'T'), nil
		}
		return append(buf, 'F'), nil
	case starlark.NoneType:
		return append(buf, 'n'), nil
	case starlark.Float:
		f := float64(v)
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			// 2.0 and 2 are the same key, as in a dict.
			buf = append(buf, 'i')
			return binary.LittleEndian.AppendUint64(buf, uint64(int64(f))), nil
		}
		buf = append(buf, 'f')
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(f)), nil
	case starlark.Tuple:
		buf = append(buf, 't')
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		for _, x := range v {
			var err error
			if buf, err = appendKey(buf, x); err != nil {
				return buf, err
			}
		}
		return buf, nil
	}
	return buf, fmt.Errorf("a key cannot be a %s (use ints, strings, bools, None or tuples of them)", v.Type())
}

// find returns the cell of the key parts, creating it when create is set.
func (a *Agg) find(parts starlark.Tuple, create bool) (*cell, error) {
	buf := a.buf[:0]
	for _, p := range parts {
		var err error
		if buf, err = appendKey(buf, p); err != nil {
			return nil, fmt.Errorf("%s: %w", a.label(), err)
		}
	}
	a.buf = buf
	if c, ok := a.cells[string(buf)]; ok {
		return c, nil
	}
	if !create {
		return nil, nil
	}
	if len(a.order) >= a.maxKeys {
		return nil, fmt.Errorf("%s: more than %d keys (raise the limit with --max-keys, or aggregate by fewer values)", a.label(), a.maxKeys)
	}
	c := &cell{parts: append([]starlark.Value(nil), parts...)}
	switch len(parts) {
	case 0:
		c.key = starlark.Tuple{}
	case 1:
		c.key = c.parts[0]
	default:
		c.key = starlark.Tuple(c.parts)
	}
	switch a.kind {
	case aggLog2:
		c.log2 = new(hist.Log2)
		if a.sketches {
			c.sketch = new(hist.Sketch)
		}
	case aggLinear:
		c.lin, _ = hist.NewLinear(a.lo, a.hi, a.step)
	}
	a.cells[string(buf)] = c
	a.order = append(a.order, c)
	return c, nil
}

// add implements a.add(*key, value): count takes the key only (its value
// is 1 unless given).
func (a *Agg) add(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(kwargs) > 0 {
		return nil, fmt.Errorf("%s.add: no keyword arguments", a.label())
	}
	nk := len(a.keys)
	var v int64 = 1
	switch {
	case len(args) == nk+1:
		x, ok := args[nk].(starlark.Int)
		if !ok {
			return nil, a.valueError(args[nk])
		}
		if v, ok = x.Int64(); !ok {
			return nil, fmt.Errorf("%s.add: value %s is out of the 64-bit range", a.label(), x)
		}
	case len(args) == nk && a.kind == aggCount:
	default:
		return nil, a.arityError(len(args))
	}
	c, err := a.find(args[:nk], true)
	if err != nil {
		return nil, err
	}
	c.observe(v)
	if a.observe != nil {
		a.observe(args[:nk], v)
	}
	return starlark.None, nil
}

func (c *cell) observe(v int64) {
	if c.n == 0 || v < c.min {
		c.min = v
	}
	if c.n == 0 || v > c.max {
		c.max = v
	}
	c.n++
	c.sum += v
	switch {
	case c.log2 != nil:
		if v < 0 {
			c.neg++
		} else {
			c.log2.Add(uint64(v))
			if c.sketch != nil {
				c.sketch.Add(uint64(v))
			}
		}
	case c.lin != nil:
		c.lin.Add(v)
	}
}

func (a *Agg) valueError(v starlark.Value) error {
	hint := ""
	if v.Type() == "float" {
		hint = " (use // for integer division)"
	}
	return fmt.Errorf("%s.add: the value must be an int, not a %s%s", a.label(), v.Type(), hint)
}

func (a *Agg) arityError(got int) error {
	keys := "no key"
	if len(a.keys) > 0 {
		keys = fmt.Sprintf("%d key(s) (%s)", len(a.keys), strings.Join(a.keys, ", "))
	}
	if a.kind == aggCount {
		return fmt.Errorf("%s.add takes %s and an optional value, got %d argument(s)", a.label(), keys, got)
	}
	return fmt.Errorf("%s.add takes %s and a value, got %d argument(s)", a.label(), keys, got)
}

// value returns a cell's statistic of kind k (a histogram's is its count).
func (a *Agg) value(c *cell, k aggKind) starlark.Value {
	switch k {
	case aggSum:
		return starlark.MakeInt64(c.sum)
	case aggMin:
		return starlark.MakeInt64(c.min)
	case aggMax:
		return starlark.MakeInt64(c.max)
	case aggAvg:
		return starlark.MakeInt64(avg(c.sum, c.n))
	}
	return starlark.MakeInt64(c.n)
}

func (a *Agg) rawValue(c *cell) int64 {
	switch a.kind {
	case aggSum:
		return c.sum
	case aggMin:
		return c.min
	case aggMax:
		return c.max
	case aggAvg:
		return avg(c.sum, c.n)
	}
	return c.n
}

// avg is the integer mean, rounded toward zero like SystemTap's @avg.
func avg(sum, n int64) int64 {
	if n == 0 {
		return 0
	}
	return sum / n
}

// get implements a.get(*key, default=None).
func (a *Agg) get(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var def starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), nil, kwargs, "default?", &def); err != nil {
		return nil, err
	}
	if len(args) != len(a.keys) {
		return nil, fmt.Errorf("%s.get takes %d key(s), got %d", a.label(), len(a.keys), len(args))
	}
	c, err := a.find(args, false)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return def, nil
	}
	return a.keyValue(c), nil
}

// stat implements a.count(*key), a.sum(*key), ...: the statistic of one
// key, or over every key when called without one.
func (a *Agg) stat(k aggKind) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(kwargs) > 0 {
			return nil, fmt.Errorf("%s.%s: no keyword arguments", a.label(), b.Name())
		}
		if len(args) == 0 && len(a.keys) > 0 {
			var all cell
			for _, c := range a.order {
				if c.n == 0 {
					continue
				}
				if all.n == 0 || c.min < all.min {
					all.min = c.min
				}
				if all.n == 0 || c.max > all.max {
					all.max = c.max
				}
				all.n += c.n
				all.sum += c.sum
			}
			return a.value(&all, k), nil
		}
		if len(args) != len(a.keys) {
			return nil, fmt.Errorf("%s.%s takes %d key(s) or none (for all keys), got %d", a.label(), b.Name(), len(a.keys), len(args))
		}
		c, err := a.find(args, false)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return starlark.MakeInt(0), nil
		}
		return a.value(c, k), nil
	}
}

// lessKey orders keys part by part: numbers and strings naturally, mixed
// types by type name.
func lessKey(a, b []starlark.Value) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x.Type() != y.Type() {
			return x.Type() < y.Type()
		}
		if lt, err := starlark.Compare(syntax.LT, x, y); err == nil {
			if lt {
				return true
			}
			if gt, _ := starlark.Compare(syntax.GT, x, y); gt {
				return false
			}
			continue
		}
		if xs, ys := x.String(), y.String(); xs != ys {
			return xs < ys
		}
	}
	return len(a) < len(b)
}

// unpackOrder unpacks sort= and limit= (def is sort's default).
func (a *Agg) unpackOrder(fn, def string, kwargs []starlark.Tuple, extra ...any) (by stat, limit int, err error) {
	sortBy := def
	pairs := append([]any{"sort?", &sortBy, "limit?", &limit}, extra...)
	if err := starlark.UnpackArgs(fn, nil, kwargs, pairs...); err != nil {
		return stat{}, 0, err
	}
	if by, err = a.parseStat(fn, sortBy); err != nil {
		return stat{}, 0, err
	}
	if limit < 0 {
		return stat{}, 0, fmt.Errorf("%s: limit must be >= 0", fn)
	}
	return by, limit, nil
}

// aggItems implements a.items(sort="value", limit=0): a list of (key,
// value), a histogram's value being the key's histogram.
func (s *Script) aggItems(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	a := b.Receiver().(*Agg)
	if len(args) > 0 {
		return nil, fmt.Errorf("%s.items takes keyword arguments only (sort=, limit=)", a.label())
	}
	by, limit, err := a.unpackOrder(a.label()+".items", "value", kwargs)
	if err != nil {
		return nil, err
	}
	n := uint64(len(a.order))
	if limit > 0 {
		n = min(n, uint64(limit))
	}
	// The sort's copy of every cell, and the list of pairs.
	if err := s.reserve(satAdd(uint64(len(a.order))*3*valueBytes, n*(pairBytes+valueBytes))); err != nil {
		return nil, err
	}
	cells := a.sorted(by, limit)
	out := make([]starlark.Value, len(cells))
	for i, c := range cells {
		out[i] = starlark.Tuple{c.key, a.keyValue(c)}
	}
	return starlark.NewList(out), nil
}

// keysFn implements a.keys(): the keys in insertion order.
func (a *Agg) keysFn(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	out := make([]starlark.Value, len(a.order))
	for i, c := range a.order {
		out[i] = c.key
	}
	return starlark.NewList(out), nil
}

// clear implements a.clear(): forget every key (for per-interval reports).
func (a *Agg) clear(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	a.cells = make(map[string]*cell)
	a.order = nil
	return starlark.None, nil
}

// aggPrint implements a.print(sort=, limit=, title=).
func (s *Script) aggPrint(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	a := b.Receiver().(*Agg)
	if len(args) > 0 {
		return nil, fmt.Errorf("%s.print takes keyword arguments only (sort=, limit=, title=)", a.label())
	}
	def := "value"
	if a.kind.isHist() {
		def = "key"
	}
	title := ""
	by, limit, err := a.unpackOrder(a.label()+".print", def, kwargs, "title?", &title)
	if err != nil {
		return nil, err
	}
	if title != "" {
		s.out.WriteString(title)
		s.out.WriteByte('\n')
	}
	// Sorted by a statistic named: each histogram shows its statistics.
	stats := by.name != "key" && by.name != "value"
	a.render(s.out, renderOpts{by: by, limit: limit, stats: stats})
	return starlark.None, nil
}
