package script

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The checks the rewritten script calls (see guard.go): each estimates
// the bytes an operation is about to allocate and asks the budget
// (memWatch.reserve) before running it.

// freeAlloc is what one operation may allocate without a look at the
// heap: the watch's sampling covers it.
const freeAlloc = 1 << 20

// Approximate sizes of Starlark values, for the estimates.
const (
	valueBytes = 16 // a Value in a list or tuple
	entryBytes = 64 // a dict or set entry with its hash table's share
	pairBytes  = 72 // a tuple of two in a list (enumerate, zip, items)
)

// reserve checks that need more bytes fit in the script's memory limit.
func (s *Script) reserve(need uint64) error {
	if need < freeAlloc || s.mem == nil {
		return nil
	}
	return s.mem.reserve(need)
}

// guardBuiltins returns the rewriting builtins and the checked universe
// builtins, to add to the script's predeclared names.
func (s *Script) guardBuiltins() starlark.StringDict {
	d := starlark.StringDict{
		guardBinop:        starlark.NewBuiltin("binary operator", s.binop),
		guardInplace:      starlark.NewBuiltin("augmented assignment", s.inplace),
		guardInplaceIndex: starlark.NewBuiltin("augmented assignment", s.inplaceIndex),
		guardInplaceAttr:  starlark.NewBuiltin("augmented assignment", s.inplaceAttr),
		guardMethod:       starlark.NewBuiltin("method", s.method),
		guardAttr:         starlark.NewBuiltin("attribute", s.attr),
	}
	for name, estimate := range map[string]func(args starlark.Tuple, kwargs []starlark.Tuple, limit uint64) uint64{
		"str":       estimateStr,
		"repr":      estimateRepr,
		"print":     estimateRepr,
		"fail":      estimateRepr,
		"bytes":     func(a starlark.Tuple, _ []starlark.Tuple, l uint64) uint64 { return estimateRepr(a, nil, l) },
		"list":      perElement(valueBytes),
		"tuple":     perElement(valueBytes),
		"sorted":    perElement(valueBytes),
		"reversed":  perElement(valueBytes),
		"set":       perElement(entryBytes),
		"dict":      perElement(entryBytes),
		"enumerate": perElement(pairBytes),
		"zip":       perElement(pairBytes),
	} {
		d[name] = s.checked(starlark.Universe[name].(*starlark.Builtin), estimate)
	}
	d["getattr"] = starlark.NewBuiltin("getattr", s.getattr)
	return d
}

// checked wraps a universe builtin: the size estimate of its result is
// reserved before it runs.
func (s *Script) checked(b *starlark.Builtin, estimate func(starlark.Tuple, []starlark.Tuple, uint64) uint64) *starlark.Builtin {
	return starlark.NewBuiltin(b.Name(), func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := s.reserve(estimate(args, kwargs, s.limit())); err != nil {
			return nil, err
		}
		return starlark.Call(t, b, args, kwargs)
	})
}

// limit is the most any estimate needs to count up to: past it, the
// operation is refused anyway.
func (s *Script) limit() uint64 {
	if s.mem == nil {
		return math.MaxUint64
	}
	return s.mem.limit + 1
}

// binop is x op y for op in + * % |.
func (s *Script) binop(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, x, y := args[0].(starlark.String), args[1], args[2]
	tok := opTokens[string(op)]
	if err := s.reserve(binarySize(tok, x, y, s.limit())); err != nil {
		return nil, err
	}
	return starlark.Binary(tok, x, y)
}

var opTokens = map[string]syntax.Token{
	"+": syntax.PLUS, "*": syntax.STAR, "%": syntax.PERCENT, "|": syntax.PIPE,
	"+=": syntax.PLUS, "*=": syntax.STAR, "%=": syntax.PERCENT, "|=": syntax.PIPE,
}

// inplace is x op= y for a variable: a list += an iterable extends the
// list, a dict |= a dict updates it (both in place, as Starlark does);
// the others make a new value.
func (s *Script) inplace(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return s.apply(string(args[0].(starlark.String)), args[1], args[2])
}

func (s *Script) apply(op string, x, y starlark.Value) (starlark.Value, error) {
	tok := opTokens[op]
	if err := s.reserve(binarySize(tok, x, y, s.limit())); err != nil {
		return nil, err
	}
	switch {
	case tok == syntax.PLUS:
		if l, ok := x.(*starlark.List); ok {
			if it, ok := y.(starlark.Iterable); ok {
				return l, extendList(l, it)
			}
		}
	case tok == syntax.PIPE:
		if d, ok := x.(*starlark.Dict); ok {
			if o, ok := y.(*starlark.Dict); ok {
				for _, kv := range o.Items() {
					if err := d.SetKey(kv[0], kv[1]); err != nil {
						return nil, fmt.Errorf("apply |= to dict: %w", err)
					}
				}
				return d, nil
			}
		}
	}
	return starlark.Binary(tok, x, y)
}

// extendList appends it's elements to l (it may be l itself).
func extendList(l *starlark.List, it starlark.Iterable) error {
	var elems []starlark.Value
	iter := it.Iterate()
	var v starlark.Value
	for iter.Next(&v) {
		elems = append(elems, v)
	}
	iter.Done()
	for _, v := range elems {
		if err := l.Append(v); err != nil {
			return fmt.Errorf("apply += to list: %w", err)
		}
	}
	return nil
}

// inplaceIndex is a[i] op= y. (y is evaluated before a[i] is read: a
// difference from Starlark only for a y that changes a[i].)
func (s *Script) inplaceIndex(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, a, i, y := string(args[0].(starlark.String)), args[1], args[2], args[3]
	x, err := index(a, i)
	if err != nil {
		return nil, err
	}
	z, err := s.apply(op, x, y)
	if err != nil {
		return nil, err
	}
	return starlark.None, setIndex(a, i, z)
}

// inplaceAttr is a.f op= y.
func (s *Script) inplaceAttr(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, a, name, y := string(args[0].(starlark.String)), args[1], string(args[2].(starlark.String)), args[3]
	x, err := getAttr(a, name)
	if err != nil {
		return nil, err
	}
	z, err := s.apply(op, x, y)
	if err != nil {
		return nil, err
	}
	f, ok := a.(starlark.HasSetField)
	if !ok {
		return nil, fmt.Errorf("can't assign to .%s field of %s", name, a.Type())
	}
	return starlark.None, f.SetField(name, z)
}

func index(a, i starlark.Value) (starlark.Value, error) {
	switch a := a.(type) {
	case starlark.Mapping:
		v, found, err := a.Get(i)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("key %v not in %s", i, a.Type())
		}
		return v, nil
	case starlark.Indexable:
		n, err := indexOf(a, i)
		if err != nil {
			return nil, err
		}
		return a.Index(n), nil
	}
	return nil, fmt.Errorf("unhandled index operation %s[%s]", a.Type(), i.Type())
}

func setIndex(a, i, z starlark.Value) error {
	switch a := a.(type) {
	case starlark.HasSetKey:
		return a.SetKey(i, z)
	case starlark.HasSetIndex:
		n, err := indexOf(a, i)
		if err != nil {
			return err
		}
		return a.SetIndex(n, z)
	}
	return fmt.Errorf("%s value does not support item assignment", a.Type())
}

func indexOf(a starlark.Indexable, i starlark.Value) (int, error) {
	n, err := starlark.AsInt32(i)
	if err != nil {
		return 0, fmt.Errorf("%s index: %w", a.Type(), err)
	}
	l := a.Len()
	if n < 0 {
		n += l
	}
	if n < 0 || n >= l {
		return 0, fmt.Errorf("%s index %d out of range [%d:%d]", a.Type(), n, -l, l-1)
	}
	return n, nil
}

func getAttr(x starlark.Value, name string) (starlark.Value, error) {
	h, ok := x.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	v, err := h.Attr(name)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	return v, nil
}

// method is x.name(args...) for a method of guardedMethods.
func (s *Script) method(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, name := args[0], string(args[1].(starlark.String))
	m, err := getAttr(x, name)
	if err != nil {
		return nil, err
	}
	rest := args[2:]
	if err := s.reserve(methodSize(x, name, rest, kwargs, s.limit())); err != nil {
		return nil, err
	}
	return starlark.Call(t, m, rest, kwargs)
}

// attr is x.name as a value, for a method of guardedMethods: the bound
// method, checked when called.
func (s *Script) attr(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, name := args[0], string(args[1].(starlark.String))
	return s.boundChecked(x, name)
}

func (s *Script) boundChecked(x starlark.Value, name string) (starlark.Value, error) {
	m, err := getAttr(x, name)
	if err != nil {
		return nil, err
	}
	b, ok := m.(*starlark.Builtin)
	if !ok {
		return m, nil
	}
	return starlark.NewBuiltin(b.Name(), func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := s.reserve(methodSize(x, name, args, kwargs, s.limit())); err != nil {
			return nil, err
		}
		return starlark.Call(t, b, args, kwargs)
	}).BindReceiver(x), nil
}

// getattr is Starlark's getattr, a method of guardedMethods checked.
func (s *Script) getattr(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) >= 2 && len(kwargs) == 0 {
		if name, ok := args[1].(starlark.String); ok && guardedMethods[string(name)] {
			if v, err := s.boundChecked(args[0], string(name)); err == nil || len(args) == 2 {
				return v, err
			}
		}
	}
	return starlark.Call(t, starlark.Universe["getattr"], args, kwargs)
}

// binarySize estimates the bytes x op y allocates.
func binarySize(op syntax.Token, x, y starlark.Value, limit uint64) uint64 {
	switch op {
	case syntax.PLUS:
		return satAdd(flatSize(x), flatSize(y))
	case syntax.STAR:
		if n, ok := repeatCount(x, y); ok {
			return satMul(flatSize(x)+flatSize(y), n)
		}
		if a, ok := x.(starlark.Int); ok {
			if b, ok := y.(starlark.Int); ok {
				// The product, and the multiplication's scratch space.
				return 3 * uint64(a.BigInt().BitLen()+b.BigInt().BitLen()) / 8
			}
		}
	case syntax.PERCENT:
		if f, ok := x.(starlark.String); ok {
			return formatSize(string(f), "%", y, nil, limit)
		}
	case syntax.PIPE:
		return satAdd(flatSize(x), flatSize(y))
	}
	return 0
}

// repeatCount returns the count of a repetition (a sequence times an
// int, either way round).
func repeatCount(x, y starlark.Value) (uint64, bool) {
	for _, p := range [2][2]starlark.Value{{x, y}, {y, x}} {
		if n, ok := p[1].(starlark.Int); ok {
			switch p[0].(type) {
			case starlark.String, starlark.Bytes, *starlark.List, starlark.Tuple:
				c, ok := n.Uint64()
				if !ok {
					return math.MaxUint64, n.Sign() > 0
				}
				return c, true
			}
		}
	}
	return 0, false
}

// flatSize is the bytes a value's own storage takes (not what it refers
// to): a string's bytes, a list's slots, a dict's entries.
func flatSize(v starlark.Value) uint64 {
	switch v := v.(type) {
	case starlark.String:
		return uint64(len(v))
	case starlark.Bytes:
		return uint64(len(v))
	case *starlark.Dict:
		return uint64(v.Len()) * entryBytes
	case *starlark.Set:
		return uint64(v.Len()) * entryBytes
	case starlark.Sequence:
		return uint64(v.Len()) * valueBytes
	}
	return 0
}

// methodSize estimates the bytes x.name(args) allocates.
func methodSize(x starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple, limit uint64) uint64 {
	s, isString := x.(starlark.String)
	switch {
	case isString && name == "replace":
		if len(args) < 2 {
			return 0
		}
		old, _ := args[0].(starlark.String)
		new, _ := args[1].(starlark.String)
		n := uint64(utf8.RuneCountInString(string(s))) + 1
		if old != "" {
			n = uint64(strings.Count(string(s), string(old)))
		}
		if len(args) > 2 {
			if c, err := starlark.AsInt32(args[2]); err == nil && c >= 0 {
				n = min(n, uint64(c))
			}
		}
		return satAdd(uint64(len(s)), satMul(n, uint64(len(new))))
	case isString && name == "join":
		if len(args) != 1 {
			return 0
		}
		return joinSize(uint64(len(s)), args[0], limit)
	case isString && name == "format":
		return formatSize(string(s), "{", starlark.Tuple(args), kwargs, limit)
	case isString && (name == "split" || name == "rsplit" || name == "splitlines"):
		return satMul(uint64(len(s))+1, 2*valueBytes)
	case isString:
		return 2 * uint64(len(s)) // upper, lower, title, capitalize
	}
	var n uint64
	for _, a := range args {
		n = satAdd(n, flatSize(a))
	}
	for _, kv := range kwargs {
		n = satAdd(n, entryBytes+flatSize(kv[1]))
	}
	return n
}

// joinSize is the length of sep joined over the strings of it.
func joinSize(sep uint64, it starlark.Value, limit uint64) uint64 {
	iterable, ok := it.(starlark.Iterable)
	if !ok {
		return 0
	}
	iter := iterable.Iterate()
	defer iter.Done()
	var n uint64
	var v starlark.Value
	for iter.Next(&v) && n <= limit {
		n = satAdd(n, sep+flatSize(v))
	}
	return n
}

// formatSize bounds the result of a format: its own length and, for
// each place a value goes (open marks a place: '%' or '{'), the largest
// value's rendering.
func formatSize(f, open string, args starlark.Value, kwargs []starlark.Tuple, limit uint64) uint64 {
	places := uint64(strings.Count(f, open))
	var largest uint64
	consider := func(v starlark.Value) { largest = max(largest, reprSize(v, limit)) }
	switch a := args.(type) {
	case starlark.Tuple:
		for _, v := range a {
			consider(v)
		}
	case *starlark.Dict:
		for _, kv := range a.Items() {
			consider(kv[1])
		}
	default:
		consider(a)
	}
	for _, kv := range kwargs {
		consider(kv[1])
	}
	return satAdd(uint64(len(f)), satMul(places, largest))
}

// estimateRepr is the size of the rendering of every argument.
func estimateRepr(args starlark.Tuple, kwargs []starlark.Tuple, limit uint64) uint64 {
	var n uint64
	for _, a := range args {
		n = satAdd(n, reprSize(a, limit))
	}
	for _, kv := range kwargs {
		n = satAdd(n, reprSize(kv[1], limit))
	}
	return n
}

// estimateStr: str of a string is the string itself.
func estimateStr(args starlark.Tuple, kwargs []starlark.Tuple, limit uint64) uint64 {
	if len(args) == 1 {
		if _, ok := args[0].(starlark.String); ok {
			return 0
		}
	}
	return estimateRepr(args, kwargs, limit)
}

// perElement estimates a builtin that makes per bytes for each element
// of its iterable arguments.
func perElement(per uint64) func(starlark.Tuple, []starlark.Tuple, uint64) uint64 {
	return func(args starlark.Tuple, kwargs []starlark.Tuple, _ uint64) uint64 {
		var n uint64
		for _, a := range args {
			if s, ok := a.(starlark.Sequence); ok {
				n = satAdd(n, satMul(uint64(s.Len()), per))
			} else if s, ok := a.(starlark.Indexable); ok {
				n = satAdd(n, satMul(uint64(s.Len()), per))
			}
		}
		return satAdd(n, satMul(uint64(len(kwargs)), per))
	}
}

// reprSize estimates the length of v's rendering (str or repr), counting
// a value met several times each time (a list of one string a thousand
// times renders it a thousand times), up to limit.
func reprSize(v starlark.Value, limit uint64) uint64 {
	r := sizer{limit: limit, memo: map[any]uint64{}}
	return r.size(v)
}

type sizer struct {
	limit uint64
	memo  map[any]uint64 // the sizes of containers met, by identity
}

// tupleID identifies a tuple (a slice: its first element and length).
type tupleID struct {
	first *starlark.Value
	n     int
}

// inProgress marks a container being measured: met again inside itself,
// it renders as "[...]".
const inProgress = math.MaxUint64

func (r *sizer) size(v starlark.Value) uint64 {
	switch v := v.(type) {
	case starlark.String:
		return uint64(len(v)) + 2
	case starlark.Bytes:
		return 4*uint64(len(v)) + 3
	case starlark.Int:
		return uint64(v.BigInt().BitLen())/3 + 2
	case *starlark.List:
		return r.container(v, v.Len(), v.Index)
	case starlark.Tuple:
		if len(v) == 0 {
			return 2
		}
		return r.container(tupleID{&v[0], len(v)}, len(v), func(i int) starlark.Value { return v[i] })
	case *starlark.Dict:
		items := v.Items()
		return r.container(v, 2*len(items), func(i int) starlark.Value { return items[i/2][i%2] })
	case *starlark.Set:
		return r.container(v, v.Len(), func(i int) starlark.Value { return nil })
	case *histValue:
		return v.a.drawingSize(v.c)
	case *Agg:
		return r.aggSize(v)
	}
	return 32
}

// aggSize bounds the rendering of an aggregation: a table row or a
// drawing per key.
func (r *sizer) aggSize(a *Agg) uint64 {
	total := uint64(64)
	for _, c := range a.order {
		if total > r.limit {
			break
		}
		row := uint64(32)
		for _, p := range c.parts {
			row = satAdd(row, r.size(p)+2)
		}
		if a.kind.isHist() {
			row = satAdd(row, a.drawingSize(c))
		}
		total = satAdd(total, row)
	}
	return total
}

// drawingSize bounds the length of a key's histogram as str() draws it:
// a line per bucket between the smallest and largest value (a
// hist_linear of a million buckets draws a million lines), under and
// over rows, the statistics.
func (a *Agg) drawingSize(c *cell) uint64 {
	const lineBytes = 128 // two 20-digit bounds, a count, a 40-character bar
	rows := uint64(65)    // hist_log2: at most a bucket per bit length and 0
	if c.lin != nil {
		lo, hi := max(c.min, a.lo), min(c.max, a.hi-1)
		rows = 2
		if lo <= hi {
			rows += (uint64(hi)-uint64(lo))/uint64(a.step) + 1
		}
	}
	return satMul(rows+3, lineBytes+uint64(len(a.unit)))
}

// container measures n elements of the container identified by id.
func (r *sizer) container(id any, n int, at func(int) starlark.Value) uint64 {
	if s, ok := r.memo[id]; ok {
		if s == inProgress {
			return 5
		}
		return s
	}
	r.memo[id] = inProgress
	total := uint64(2)
	for i := 0; i < n && total <= r.limit; i++ {
		e := at(i)
		if e == nil {
			total = satAdd(total, 34)
			continue
		}
		total = satAdd(total, r.size(e)+2)
	}
	r.memo[id] = total
	return total
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}
