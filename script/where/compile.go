package where

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/suggest"
	"go.starlark.net/syntax"
)

// Filter is a compiled filter expression. The zero value and a nil *Filter
// match every event.
type Filter struct {
	src   string
	match func(e *event.Event) bool
	push  Pushdown
}

// Source is where an expression comes from, for error positions: the
// file (a script, or "--where") and the line and column of the
// expression's first character there.
type Source struct {
	File      string
	Line, Col int
}

// Error is a compile error at a position in the expression's source.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Compile compiles expr, found at src (use Source{File: "--where"} for a
// command-line expression), into a Filter. An empty expression matches
// everything.
func Compile(expr string, src Source) (*Filter, error) {
	if src.File == "" {
		src.File = "filter"
	}
	if src.Line == 0 {
		src.Line = 1
	}
	if src.Col == 0 {
		src.Col = 1
	}
	if strings.TrimSpace(expr) == "" {
		return &Filter{}, nil
	}
	c := &compiler{src: src}
	// Parse inside parentheses, so that a filter may span lines (a
	// triple-quoted FILTER); errAt takes the "(" back out of columns.
	x, err := syntax.ParseExpr(src.File, "("+expr+")", 0)
	if err != nil {
		if se, ok := err.(syntax.Error); ok {
			return nil, c.errAt(se.Pos, "%s", se.Msg)
		}
		return nil, fmt.Errorf("%s:%d:%d: %w", src.File, src.Line, src.Col, err)
	}
	n, err := c.compile(x)
	if err != nil {
		return nil, err
	}
	if n.typ != tBool {
		return nil, c.errAt(n.pos, "a filter must be a condition (a comparison, 'and', 'or', 'not'), not %s", n.typ)
	}
	f := &Filter{src: expr, match: n.bool()}
	f.push = pushdownOf(x)
	return f, nil
}

// MustCompile is Compile for expressions known to be valid; it panics on
// error. Use it in tests and for built-in filters only.
func MustCompile(expr string) *Filter {
	f, err := Compile(expr, Source{})
	if err != nil {
		panic(err)
	}
	return f
}

// Match reports whether e passes the filter.
func (f *Filter) Match(e *event.Event) bool {
	if f == nil || f.match == nil {
		return true
	}
	return f.match(e)
}

// Func returns the filter as a predicate, nil when it matches everything.
func (f *Filter) Func() func(e *event.Event) bool {
	if f == nil {
		return nil
	}
	return f.match
}

// String returns the expression the filter was compiled from.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.src
}

// Empty reports whether the filter matches every event.
func (f *Filter) Empty() bool { return f == nil || f.match == nil }

// Pushdown returns what a backend can apply of the filter. The filter
// itself must still be applied: a backend may apply less.
func (f *Filter) Pushdown() Pushdown {
	if f == nil {
		return Pushdown{}
	}
	return f.push
}

// And returns a filter that matches what both a and b match.
func And(a, b *Filter) *Filter {
	switch {
	case a.Empty():
		return b
	case b.Empty():
		return a
	}
	am, bm := a.match, b.match
	return &Filter{
		src:   "(" + a.src + ") and (" + b.src + ")",
		match: func(e *event.Event) bool { return am(e) && bm(e) },
		push:  a.push.intersect(b.push),
	}
}

type typ uint8

const (
	tInt typ = iota
	tStr
	tBool
	tEnum
	tFlags
	tList
)

var typNames = [...]string{"a number", "a string", "a condition", "an enum field", "a flag set", "a list"}

func (t typ) String() string { return typNames[t] }

// node is a compiled (sub)expression: a constant or a function of the
// event, with its type.
type node struct {
	typ   typ
	pos   syntax.Position
	konst bool
	ci    int64
	cs    string
	field *Field // tEnum, tFlags, and plain field references
	list  []node // tList: constant elements
	fi    func(*event.Event) int64
	fs    func(*event.Event) string
	fb    func(*event.Event) bool
}

func (n node) int() func(*event.Event) int64 {
	if n.konst {
		v := n.ci
		return func(*event.Event) int64 { return v }
	}
	return n.fi
}

func (n node) str() func(*event.Event) string {
	if n.konst {
		v := n.cs
		return func(*event.Event) string { return v }
	}
	return n.fs
}

func (n node) bool() func(*event.Event) bool {
	if n.konst {
		v := n.ci != 0
		return func(*event.Event) bool { return v }
	}
	return n.fb
}

type compiler struct {
	src Source
}

// errAt builds an Error at p, a position within the parsed expression,
// mapped back to the expression's source.
func (c *compiler) errAt(p syntax.Position, format string, args ...any) error {
	line, col := c.src.Line, c.src.Col
	if p.Line > 1 {
		// A later line of a multi-line expression: its columns are the
		// file's own.
		line += int(p.Line) - 1
		col = int(p.Col)
	} else if p.Col > 1 {
		col += int(p.Col) - 2 // the "(" Compile added
	}
	return &Error{File: c.src.File, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (c *compiler) compile(x syntax.Expr) (node, error) {
	pos, _ := x.Span()
	switch x := x.(type) {
	case *syntax.ParenExpr:
		return c.compile(x.X)
	case *syntax.Ident:
		return c.ident(x)
	case *syntax.Literal:
		return c.literal(x)
	case *syntax.TupleExpr:
		return c.list(pos, x.List)
	case *syntax.ListExpr:
		return c.list(pos, x.List)
	case *syntax.UnaryExpr:
		return c.unary(x)
	case *syntax.BinaryExpr:
		return c.binary(x)
	case *syntax.CallExpr:
		return c.call(x)
	case *syntax.DotExpr:
		return node{}, c.errAt(x.Dot, "%q must be called: %s(...)", x.Name.Name, x.Name.Name)
	}
	return node{}, c.errAt(pos, "unsupported expression in a filter (fields, constants, comparisons, and/or/not, in, + - * // %%, ms() us() s() kib() mib(), glob(), .startswith() .endswith())")
}

func (c *compiler) ident(x *syntax.Ident) (node, error) {
	switch x.Name {
	case "True":
		return node{typ: tBool, pos: x.NamePos, konst: true, ci: 1}, nil
	case "False":
		return node{typ: tBool, pos: x.NamePos, konst: true}, nil
	}
	f, ok := fieldMap[x.Name]
	if !ok {
		if hint := suggest.Hint(x.Name, FieldNames()); hint != "" {
			return node{}, c.errAt(x.NamePos, "unknown field %q%s", x.Name, hint)
		}
		return node{}, c.errAt(x.NamePos, "unknown field %q (fields: %s)", x.Name, strings.Join(FieldNames(), ", "))
	}
	n := node{pos: x.NamePos, field: f}
	switch f.Kind {
	case KindInt:
		n.typ, n.fi = tInt, f.Int
	case KindString:
		n.typ, n.fs = tStr, f.Str
	case KindEnum:
		n.typ, n.fi = tEnum, f.Int
	case KindFlags:
		n.typ, n.fi = tFlags, f.Int
	case KindBool:
		get := f.Int
		n.typ, n.fb = tBool, func(e *event.Event) bool { return get(e) != 0 }
	}
	return n, nil
}

func (c *compiler) literal(x *syntax.Literal) (node, error) {
	switch v := x.Value.(type) {
	case string:
		if x.Token == syntax.STRING {
			return node{typ: tStr, pos: x.TokenPos, konst: true, cs: v}, nil
		}
	case int64:
		return node{typ: tInt, pos: x.TokenPos, konst: true, ci: v}, nil
	case *big.Int:
		// Addresses above 2^63 wrap like the unsigned fields do.
		if v.Sign() > 0 && v.BitLen() <= 64 {
			return node{typ: tInt, pos: x.TokenPos, konst: true, ci: int64(v.Uint64())}, nil
		}
		return node{}, c.errAt(x.TokenPos, "number %s out of the 64-bit range", x.Raw)
	}
	return node{}, c.errAt(x.TokenPos, "unsupported literal %s in a filter (numbers and strings only)", x.Raw)
}

func (c *compiler) list(pos syntax.Position, elems []syntax.Expr) (node, error) {
	n := node{typ: tList, pos: pos, konst: true}
	for _, el := range elems {
		e, err := c.compile(el)
		if err != nil {
			return node{}, err
		}
		if !e.konst || (e.typ != tInt && e.typ != tStr) {
			return node{}, c.errAt(e.pos, "a list in a filter holds constant numbers or strings only")
		}
		n.list = append(n.list, e)
	}
	return n, nil
}

func (c *compiler) unary(x *syntax.UnaryExpr) (node, error) {
	n, err := c.compile(x.X)
	if err != nil {
		return node{}, err
	}
	switch x.Op {
	case syntax.NOT:
		if n.typ != tBool {
			return node{}, c.errAt(x.OpPos, "'not' needs a condition, got %s", n.typ)
		}
		if n.konst {
			n.ci ^= 1
			return n, nil
		}
		f := n.fb
		return node{typ: tBool, pos: x.OpPos, fb: func(e *event.Event) bool { return !f(e) }}, nil
	case syntax.MINUS, syntax.PLUS:
		if n.typ != tInt {
			return node{}, c.errAt(x.OpPos, "%s needs a number, got %s", x.Op, n.typ)
		}
		if x.Op == syntax.PLUS {
			return n, nil
		}
		if n.konst {
			n.ci = -n.ci
			return n, nil
		}
		f := n.fi
		return node{typ: tInt, pos: x.OpPos, fi: func(e *event.Event) int64 { return -f(e) }}, nil
	}
	return node{}, c.errAt(x.OpPos, "operator %s is not supported in a filter", x.Op)
}

func (c *compiler) binary(x *syntax.BinaryExpr) (node, error) {
	l, err := c.compile(x.X)
	if err != nil {
		return node{}, err
	}
	r, err := c.compile(x.Y)
	if err != nil {
		return node{}, err
	}
	switch x.Op {
	case syntax.AND, syntax.OR:
		for _, n := range []node{l, r} {
			if n.typ != tBool {
				return node{}, c.errAt(n.pos, "%s needs conditions on both sides, got %s (compare it: x != 0, x != '')", x.Op, n.typ)
			}
		}
		return logical(x.Op, x.OpPos, l, r), nil
	case syntax.EQL, syntax.NEQ, syntax.LT, syntax.LE, syntax.GT, syntax.GE:
		return c.compare(x.Op, x.OpPos, l, r)
	case syntax.IN, syntax.NOT_IN:
		n, err := c.in(x.OpPos, l, r)
		if err != nil || x.Op == syntax.IN {
			return n, err
		}
		f := n.fb
		return node{typ: tBool, pos: x.OpPos, fb: func(e *event.Event) bool { return !f(e) }}, nil
	case syntax.PLUS, syntax.MINUS, syntax.STAR, syntax.SLASHSLASH, syntax.SLASH, syntax.PERCENT:
		return c.arith(x.Op, x.OpPos, l, r)
	}
	return node{}, c.errAt(x.OpPos, "operator %s is not supported in a filter", x.Op)
}

func logical(op syntax.Token, pos syntax.Position, l, r node) node {
	if l.konst {
		// True and x = x; False and x = False; True or x = True; False or x = x.
		if (l.ci != 0) == (op == syntax.AND) {
			return r
		}
		return l
	}
	if r.konst {
		if (r.ci != 0) == (op == syntax.AND) {
			return l
		}
		if op == syntax.OR {
			return r
		}
		// x and False: still constant False.
		return node{typ: tBool, pos: pos, konst: true}
	}
	a, b := l.fb, r.fb
	if op == syntax.AND {
		return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) && b(e) }}
	}
	return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) || b(e) }}
}

func (c *compiler) arith(op syntax.Token, pos syntax.Position, l, r node) (node, error) {
	if l.typ != tInt || r.typ != tInt {
		return node{}, c.errAt(pos, "%s needs numbers on both sides, got %s and %s", op, l.typ, r.typ)
	}
	if op == syntax.SLASH {
		return node{}, c.errAt(pos, "use // for division: filters compute with integers")
	}
	if (op == syntax.SLASHSLASH || op == syntax.PERCENT) && r.konst && r.ci == 0 {
		return node{}, c.errAt(pos, "division by zero")
	}
	apply := func(a, b int64) int64 {
		switch op {
		case syntax.PLUS:
			return a + b
		case syntax.MINUS:
			return a - b
		case syntax.STAR:
			return a * b
		case syntax.SLASHSLASH:
			if b == 0 {
				return 0
			}
			q := a / b
			if (a%b != 0) && ((a < 0) != (b < 0)) {
				q-- // floor division, as in Starlark
			}
			return q
		default:
			if b == 0 {
				return 0
			}
			m := a % b
			if m != 0 && ((m < 0) != (b < 0)) {
				m += b
			}
			return m
		}
	}
	if l.konst && r.konst {
		return node{typ: tInt, pos: pos, konst: true, ci: apply(l.ci, r.ci)}, nil
	}
	a, b := l.int(), r.int()
	return node{typ: tInt, pos: pos, fi: func(e *event.Event) int64 { return apply(a(e), b(e)) }}, nil
}

// enumConst resolves a string constant compared with an enum field.
func (c *compiler) enumConst(f *Field, s node) (int64, error) {
	v, err := f.Parse(s.cs)
	if err != nil {
		return 0, c.errAt(s.pos, "%s", f.NameError(s.cs))
	}
	return v, nil
}

func (c *compiler) compare(op syntax.Token, pos syntax.Position, l, r node) (node, error) {
	// Put a lone constant on the right.
	if l.konst && !r.konst {
		l, r = r, l
		op = mirror(op)
	}
	switch {
	case l.typ == tEnum && r.typ == tStr && r.konst:
		if op != syntax.EQL && op != syntax.NEQ {
			return node{}, c.errAt(pos, "%s can only be compared with == or != (or 'in')", l.field.Name)
		}
		v, err := c.enumConst(l.field, r)
		if err != nil {
			return node{}, err
		}
		return intCompare(op, pos, node{typ: tInt, fi: l.fi}, node{typ: tInt, konst: true, ci: v}), nil
	case l.typ == tEnum && r.typ == tEnum && l.field == r.field:
		if op != syntax.EQL && op != syntax.NEQ {
			return node{}, c.errAt(pos, "%s can only be compared with == or !=", l.field.Name)
		}
		return intCompare(op, pos, node{typ: tInt, fi: l.fi}, node{typ: tInt, fi: r.fi}), nil
	case l.typ == tInt && r.typ == tInt:
		return intCompare(op, pos, l, r), nil
	case l.typ == tStr && r.typ == tStr:
		return strCompare(op, pos, l, r), nil
	case l.typ == tBool && r.typ == tBool && (op == syntax.EQL || op == syntax.NEQ):
		a, b := l.bool(), r.bool()
		if op == syntax.EQL {
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) == b(e) }}, nil
		}
		return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) != b(e) }}, nil
	}
	return node{}, c.errAt(pos, "cannot compare %s with %s%s", describe(l), describe(r), compareHint(l, r))
}

func describe(n node) string {
	if n.field != nil {
		return fmt.Sprintf("%s (%s)", n.field.Name, n.field.Kind)
	}
	if n.konst && n.typ == tStr {
		return fmt.Sprintf("%q", n.cs)
	}
	if n.konst && n.typ == tInt {
		return fmt.Sprint(n.ci)
	}
	return n.typ.String()
}

func compareHint(l, r node) string {
	if l.typ == tFlags || r.typ == tFlags {
		return " (test a flag with 'sync' in flags)"
	}
	if (l.typ == tInt && r.typ == tStr) || (l.typ == tStr && r.typ == tInt) {
		return " (numbers are not quoted)"
	}
	return ""
}

func mirror(op syntax.Token) syntax.Token {
	switch op {
	case syntax.LT:
		return syntax.GT
	case syntax.GT:
		return syntax.LT
	case syntax.LE:
		return syntax.GE
	case syntax.GE:
		return syntax.LE
	}
	return op
}

func intCompare(op syntax.Token, pos syntax.Position, l, r node) node {
	if l.konst && r.konst {
		return node{typ: tBool, pos: pos, konst: true, ci: b2i(cmpInt(op, l.ci, r.ci))}
	}
	a := l.int()
	if r.konst {
		// The common case, a field against a constant, in one closure.
		v := r.ci
		switch op {
		case syntax.EQL:
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) == v }}
		case syntax.NEQ:
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) != v }}
		case syntax.LT:
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) < v }}
		case syntax.LE:
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) <= v }}
		case syntax.GT:
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) > v }}
		default:
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) >= v }}
		}
	}
	b := r.int()
	return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return cmpInt(op, a(e), b(e)) }}
}

func cmpInt(op syntax.Token, a, b int64) bool {
	switch op {
	case syntax.EQL:
		return a == b
	case syntax.NEQ:
		return a != b
	case syntax.LT:
		return a < b
	case syntax.LE:
		return a <= b
	case syntax.GT:
		return a > b
	}
	return a >= b
}

func strCompare(op syntax.Token, pos syntax.Position, l, r node) node {
	if l.konst && r.konst {
		return node{typ: tBool, pos: pos, konst: true, ci: b2i(cmpInt(op, int64(strings.Compare(l.cs, r.cs)), 0))}
	}
	a := l.str()
	if r.konst {
		v := r.cs
		switch op {
		case syntax.EQL:
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) == v }}
		case syntax.NEQ:
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return a(e) != v }}
		}
	}
	b := r.str()
	return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool {
		return cmpInt(op, int64(strings.Compare(a(e), b(e))), 0)
	}}
}

// in compiles "l in r": membership in a constant list, a flag test, or a
// substring test.
func (c *compiler) in(pos syntax.Position, l, r node) (node, error) {
	switch {
	case r.typ == tList:
		return c.inList(pos, l, r)
	case r.typ == tFlags && l.typ == tStr && l.konst:
		bit, ok := FlagBit(l.cs)
		if !ok {
			return node{}, c.errAt(l.pos, "%s", fieldMap["flags"].NameError(l.cs))
		}
		get, b := r.fi, int64(bit)
		return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return get(e)&b != 0 }}, nil
	case r.typ == tStr && l.typ == tStr:
		if l.konst && r.konst {
			return node{typ: tBool, pos: pos, konst: true, ci: b2i(strings.Contains(r.cs, l.cs))}, nil
		}
		a, b := l.str(), r.str()
		return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { return strings.Contains(b(e), a(e)) }}, nil
	}
	return node{}, c.errAt(pos, "'in' needs a list of constants, a flag set or a string on its right, got %s", describe(r))
}

func (c *compiler) inList(pos syntax.Position, l, r node) (node, error) {
	switch l.typ {
	case tEnum:
		var set [4]uint64 // enums are uint8
		for _, el := range r.list {
			if el.typ != tStr {
				return node{}, c.errAt(el.pos, "%s values are names, like %q", l.field.Name, l.field.Names[1])
			}
			v, err := c.enumConst(l.field, el)
			if err != nil {
				return node{}, err
			}
			set[v>>6&3] |= 1 << (v & 63)
		}
		get := l.fi
		return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool {
			v := uint64(get(e))
			return v < 256 && set[v>>6]&(1<<(v&63)) != 0
		}}, nil
	case tInt:
		vals := make([]int64, 0, len(r.list))
		for _, el := range r.list {
			if el.typ != tInt {
				return node{}, c.errAt(el.pos, "cannot look for a number among strings")
			}
			vals = append(vals, el.ci)
		}
		get := l.int()
		if len(vals) > 8 {
			set := make(map[int64]struct{}, len(vals))
			for _, v := range vals {
				set[v] = struct{}{}
			}
			return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { _, ok := set[get(e)]; return ok }}, nil
		}
		return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool {
			x := get(e)
			for _, v := range vals {
				if x == v {
					return true
				}
			}
			return false
		}}, nil
	case tStr:
		set := make(map[string]struct{}, len(r.list))
		for _, el := range r.list {
			if el.typ != tStr {
				return node{}, c.errAt(el.pos, "cannot look for a string among numbers")
			}
			set[el.cs] = struct{}{}
		}
		get := l.str()
		return node{typ: tBool, pos: pos, fb: func(e *event.Event) bool { _, ok := set[get(e)]; return ok }}, nil
	}
	return node{}, c.errAt(pos, "cannot look for %s in a list", describe(l))
}

// units are the helper functions that scale a number.
var units = map[string]int64{
	"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

func (c *compiler) call(x *syntax.CallExpr) (node, error) {
	var args []node
	for _, a := range x.Args {
		if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			return node{}, c.errAt(b.OpPos, "keyword arguments are not supported in a filter")
		}
		n, err := c.compile(a)
		if err != nil {
			return node{}, err
		}
		args = append(args, n)
	}
	if dot, ok := x.Fn.(*syntax.DotExpr); ok {
		recv, err := c.compile(dot.X)
		if err != nil {
			return node{}, err
		}
		return c.method(dot, recv, args)
	}
	id, ok := x.Fn.(*syntax.Ident)
	if !ok {
		return node{}, c.errAt(x.Lparen, "only ms() us() s() ns() kib() mib() gib() and glob() can be called in a filter")
	}
	if mult, ok := units[id.Name]; ok {
		if len(args) != 1 || args[0].typ != tInt {
			return node{}, c.errAt(id.NamePos, "%s() takes one number", id.Name)
		}
		a := args[0]
		if a.konst {
			if a.ci > math.MaxInt64/mult || a.ci < math.MinInt64/mult {
				return node{}, c.errAt(id.NamePos, "%s(%d) overflows", id.Name, a.ci)
			}
			return node{typ: tInt, pos: id.NamePos, konst: true, ci: a.ci * mult}, nil
		}
		f := a.fi
		return node{typ: tInt, pos: id.NamePos, fi: func(e *event.Event) int64 { return f(e) * mult }}, nil
	}
	if id.Name == "glob" {
		if len(args) != 2 || args[0].typ != tStr || args[1].typ != tStr || !args[1].konst {
			return node{}, c.errAt(id.NamePos, "glob() takes a string field and a constant pattern: glob(path, '*.log')")
		}
		pat, get := args[1].cs, args[0].str()
		return node{typ: tBool, pos: id.NamePos, fb: func(e *event.Event) bool { return Glob(pat, get(e)) }}, nil
	}
	return node{}, c.errAt(id.NamePos, "unknown function %s() in a filter (ms, us, s, ns, kib, mib, gib, glob)", id.Name)
}

func (c *compiler) method(dot *syntax.DotExpr, recv node, args []node) (node, error) {
	name := dot.Name.Name
	switch name {
	case "startswith", "endswith":
		if recv.typ != tStr {
			return node{}, c.errAt(dot.Dot, ".%s() applies to a string field, not %s", name, describe(recv))
		}
		if len(args) != 1 || args[0].typ != tStr || !args[0].konst {
			return node{}, c.errAt(dot.Name.NamePos, ".%s() takes one constant string", name)
		}
		get, v := recv.str(), args[0].cs
		if name == "startswith" {
			return node{typ: tBool, pos: dot.Dot, fb: func(e *event.Event) bool { return strings.HasPrefix(get(e), v) }}, nil
		}
		return node{typ: tBool, pos: dot.Dot, fb: func(e *event.Event) bool { return strings.HasSuffix(get(e), v) }}, nil
	}
	return node{}, c.errAt(dot.Name.NamePos, "unknown method .%s() in a filter (.startswith, .endswith)", name)
}

// Glob reports whether s matches pattern, where '*' matches any run of
// characters ('/' and '\' included) and '?' any one byte.
func Glob(pattern, s string) bool {
	// Iterative matching with one backtrack point: linear for one '*',
	// O(len(s)*len(pattern)) at worst.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
