package script

import (
	"go.starlark.net/syntax"
)

// The memory watch (memlimit.go) samples the heap between steps; one step
// of Starlark can allocate far more than the limit (s.replace("a", s) on
// a 128 KiB string asks for 16 GiB, and Go's fatal out-of-memory cannot
// be caught). Starlark has no allocation hook, so the script is rewritten
// before it is compiled: every expression that can build a value in
// proportion to its operands goes through a builtin of this package that
// estimates the size of the result and checks it against the budget
// before the real operation runs (budget.go):
//
//   - x + y, x * y, x % y, x | y          → $binop("+", x, y), ...
//   - x += y (and *=, %=, |=)              → x = $inplace("+=", x, y);
//     a[i] += y → $inplace_index("+=", a, i, y); a.f += y → $inplace_attr(...)
//   - x.replace(...) and the other methods in guardedMethods
//     → $method(x, "replace", ...), and x.replace as a value → $attr(x, "replace")
//
// Builtins of the universe that build in proportion to their arguments
// (str, repr, list, sorted, zip, ...) are replaced by checked ones of the
// same name (budget.go). The names given to the rewriting builtins start
// with '$', which no identifier of a script can: a script cannot shadow
// them. Operators whose operand is a number literal (n += 1, x % 2) and
// the concatenation of two string literals are left alone: they cannot
// build anything large.

// Names of the rewriting builtins.
const (
	guardBinop        = "$binop"
	guardInplace      = "$inplace"
	guardInplaceIndex = "$inplace_index"
	guardInplaceAttr  = "$inplace_attr"
	guardMethod       = "$method"
	guardAttr         = "$attr"
)

// guardedMethods are the methods of strings, lists, dicts and sets whose
// result (or growth) is in proportion to their arguments.
var guardedMethods = map[string]bool{
	"replace": true, "join": true, "format": true,
	"split": true, "rsplit": true, "splitlines": true,
	"upper": true, "lower": true, "title": true, "capitalize": true,
	"extend": true, "update": true, "union": true,
	"intersection": true, "difference": true, "symmetric_difference": true,
}

// guardedOps are the binary operators checked.
var guardedOps = map[syntax.Token]string{
	syntax.PLUS: "+", syntax.STAR: "*", syntax.PERCENT: "%", syntax.PIPE: "|",
}

// guardedAugOps are the augmented assignments checked.
var guardedAugOps = map[syntax.Token]string{
	syntax.PLUS_EQ: "+=", syntax.STAR_EQ: "*=", syntax.PERCENT_EQ: "%=", syntax.PIPE_EQ: "|=",
}

// guardFile rewrites f's statements (see above).
func guardFile(f *syntax.File) { f.Stmts = guardStmts(f.Stmts) }

func guardStmts(ss []syntax.Stmt) []syntax.Stmt {
	for i, s := range ss {
		ss[i] = guardStmt(s)
	}
	return ss
}

func guardStmt(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		if s.Op == syntax.EQ {
			s.LHS = guardTarget(s.LHS)
			s.RHS = guardExpr(s.RHS)
			return s
		}
		return guardAugmented(s)
	case *syntax.DefStmt:
		s.Params = guardParams(s.Params)
		s.Body = guardStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = guardExpr(s.X)
	case *syntax.IfStmt:
		s.Cond = guardExpr(s.Cond)
		s.True = guardStmts(s.True)
		s.False = guardStmts(s.False)
	case *syntax.ForStmt:
		s.Vars = guardTarget(s.Vars)
		s.X = guardExpr(s.X)
		s.Body = guardStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = guardExpr(s.Cond)
		s.Body = guardStmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = guardExpr(s.Result)
		}
	}
	return s
}

// guardAugmented rewrites x op= y.
func guardAugmented(s *syntax.AssignStmt) syntax.Stmt {
	op, ok := guardedAugOps[s.Op]
	if !ok || (s.Op != syntax.STAR_EQ && isNumber(s.RHS)) {
		s.LHS = guardTarget(s.LHS)
		s.RHS = guardExpr(s.RHS)
		return s
	}
	rhs := guardExpr(s.RHS)
	opLit := stringLit(op, s.OpPos)
	switch lhs := unparen(s.LHS).(type) {
	case *syntax.IndexExpr:
		return &syntax.ExprStmt{X: call(guardInplaceIndex, s.OpPos, opLit, guardExpr(lhs.X), guardExpr(lhs.Y), rhs)}
	case *syntax.DotExpr:
		return &syntax.ExprStmt{X: call(guardInplaceAttr, s.OpPos, opLit, guardExpr(lhs.X), stringLit(lhs.Name.Name, lhs.NamePos), rhs)}
	case *syntax.Ident:
		use := &syntax.Ident{NamePos: lhs.NamePos, Name: lhs.Name}
		return &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: lhs, RHS: call(guardInplace, s.OpPos, opLit, use, rhs)}
	}
	s.RHS = rhs
	return s
}

// guardTarget rewrites the expressions inside an assignment target,
// keeping its shape.
func guardTarget(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X, e.Y = guardExpr(e.X), guardExpr(e.Y)
	case *syntax.DotExpr:
		e.X = guardExpr(e.X)
	case *syntax.TupleExpr:
		for i := range e.List {
			e.List[i] = guardTarget(e.List[i])
		}
	case *syntax.ListExpr:
		for i := range e.List {
			e.List[i] = guardTarget(e.List[i])
		}
	case *syntax.ParenExpr:
		e.X = guardTarget(e.X)
	}
	return e
}

// guardParams rewrites parameters' default values.
func guardParams(ps []syntax.Expr) []syntax.Expr {
	for _, p := range ps {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = guardExpr(b.Y)
		}
	}
	return ps
}

// guardExpr rewrites an expression in value position.
func guardExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X, e.Y = guardExpr(e.X), guardExpr(e.Y)
		if op, ok := guardedOps[e.Op]; ok && !cannotGrow(e) {
			return call(guardBinop, e.OpPos, stringLit(op, e.OpPos), e.X, e.Y)
		}
	case *syntax.CallExpr:
		for i, a := range e.Args {
			e.Args[i] = guardArg(a)
		}
		if d, ok := e.Fn.(*syntax.DotExpr); ok && guardedMethods[d.Name.Name] {
			args := append([]syntax.Expr{guardExpr(d.X), stringLit(d.Name.Name, d.NamePos)}, e.Args...)
			return &syntax.CallExpr{Fn: ident(guardMethod, d.NamePos), Lparen: e.Lparen, Args: args, Rparen: e.Rparen}
		}
		e.Fn = guardExpr(e.Fn)
	case *syntax.DotExpr:
		e.X = guardExpr(e.X)
		if guardedMethods[e.Name.Name] {
			return call(guardAttr, e.Dot, e.X, stringLit(e.Name.Name, e.NamePos))
		}
	case *syntax.Comprehension:
		e.Body = guardExpr(e.Body)
		if d, ok := e.Body.(*syntax.DictEntry); ok {
			d.Key, d.Value = guardExpr(d.Key), guardExpr(d.Value)
		}
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars, c.X = guardTarget(c.Vars), guardExpr(c.X)
			case *syntax.IfClause:
				c.Cond = guardExpr(c.Cond)
			}
		}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = guardExpr(e.Cond), guardExpr(e.True), guardExpr(e.False)
	case *syntax.DictExpr:
		for _, x := range e.List {
			if d, ok := x.(*syntax.DictEntry); ok {
				d.Key, d.Value = guardExpr(d.Key), guardExpr(d.Value)
			}
		}
	case *syntax.IndexExpr:
		e.X, e.Y = guardExpr(e.X), guardExpr(e.Y)
	case *syntax.LambdaExpr:
		e.Params = guardParams(e.Params)
		e.Body = guardExpr(e.Body)
	case *syntax.ListExpr:
		for i := range e.List {
			e.List[i] = guardExpr(e.List[i])
		}
	case *syntax.TupleExpr:
		for i := range e.List {
			e.List[i] = guardExpr(e.List[i])
		}
	case *syntax.ParenExpr:
		e.X = guardExpr(e.X)
	case *syntax.SliceExpr:
		e.X = guardExpr(e.X)
		for _, p := range []*syntax.Expr{&e.Lo, &e.Hi, &e.Step} {
			if *p != nil {
				*p = guardExpr(*p)
			}
		}
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = guardExpr(e.X)
		}
	}
	return e
}

// guardArg rewrites a call's argument: x, name=x, *x or **x.
func guardArg(a syntax.Expr) syntax.Expr {
	switch a := a.(type) {
	case *syntax.BinaryExpr:
		if a.Op == syntax.EQ {
			a.Y = guardExpr(a.Y)
			return a
		}
	case *syntax.UnaryExpr:
		if (a.Op == syntax.STAR || a.Op == syntax.STARSTAR) && a.X != nil {
			a.X = guardExpr(a.X)
			return a
		}
	}
	return guardExpr(a)
}

// cannotGrow reports whether a binary expression cannot build a large
// value: an operand is a number literal (n + 1, x % 2, but not s * 4), or
// both are string literals.
func cannotGrow(e *syntax.BinaryExpr) bool {
	if e.Op != syntax.STAR && (isNumber(e.X) || isNumber(e.Y)) {
		return true
	}
	return isString(e.X) && isString(e.Y)
}

func isNumber(e syntax.Expr) bool {
	l, ok := unparen(e).(*syntax.Literal)
	return ok && (l.Token == syntax.INT || l.Token == syntax.FLOAT)
}

func isString(e syntax.Expr) bool {
	l, ok := unparen(e).(*syntax.Literal)
	return ok && (l.Token == syntax.STRING || l.Token == syntax.BYTES)
}

func unparen(e syntax.Expr) syntax.Expr {
	for {
		p, ok := e.(*syntax.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

func ident(name string, at syntax.Position) *syntax.Ident {
	return &syntax.Ident{NamePos: at, Name: name}
}

func stringLit(s string, at syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: at, Raw: `"` + s + `"`, Value: s}
}

// call is fn(args...) with the call's position at `at` (where errors
// point, as the operator's own did).
func call(fn string, at syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: ident(fn, at), Lparen: at, Args: args, Rparen: at}
}
