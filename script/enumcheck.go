package script

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/script/where"
	"go.starlark.net/syntax"
)

// checkNames finds where the script compares an enum field (e.op,
// e.layer, e.status, e.source, trace.source) or tests the flags (e.flags)
// against a string literal the field never holds, and reports each at
// the literal, as a filter would: in code, e.op == "raed" is not an
// error, it is false for every event. Only literals written in the
// comparison itself are seen:
//
//	e.op == "raed"   "raed" == e.op   e.op != "raed"
//	e.op in ("read", "raed")   e.op not in ["raed"]   e.op in {"raed": 1}
//	"synk" in e.flags
//
// A name that reaches the comparison through a variable, a function or a
// computed list (op = "raed"; e.op == op) is not known before the script
// runs and is left alone. A name the filter accepts as another name of a
// value ("fsync" for flush) is refused too: e.op holds the value's own
// name, so the comparison could never be true.
func checkNames(f *syntax.File) error {
	var msgs []string
	check := func(field *where.Field, x syntax.Expr) {
		lit, ok := unparen(x).(*syntax.Literal)
		if !ok || lit.Token != syntax.STRING || field == nil {
			return
		}
		if msg := nameError(field, lit.Value.(string)); msg != "" {
			msgs = append(msgs, lit.TokenPos.String()+": "+msg)
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		b, ok := n.(*syntax.BinaryExpr)
		if !ok {
			return true
		}
		switch b.Op {
		case syntax.EQL, syntax.NEQ:
			check(namedField(b.X, where.KindEnum), b.Y)
			check(namedField(b.Y, where.KindEnum), b.X)
		case syntax.IN, syntax.NOT_IN:
			if field := namedField(b.X, where.KindEnum); field != nil {
				for _, el := range listElems(b.Y) {
					check(field, el)
				}
			}
			check(namedField(b.Y, where.KindFlags), b.X)
		}
		return true
	})
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "\n"))
	}
	return nil
}

// namedField returns the event field x names (x.op, any receiver: only
// events and the trace have such attributes) when it is of kind k.
func namedField(x syntax.Expr, k where.Kind) *where.Field {
	d, ok := unparen(x).(*syntax.DotExpr)
	if !ok {
		return nil
	}
	f, ok := where.Lookup(d.Name.Name)
	if !ok || f.Kind != k {
		return nil
	}
	return f
}

// listElems returns the elements of a tuple or list written out, or the
// keys of a dict (what 'in' looks among).
func listElems(x syntax.Expr) []syntax.Expr {
	switch x := unparen(x).(type) {
	case *syntax.TupleExpr:
		return x.List
	case *syntax.ListExpr:
		return x.List
	case *syntax.DictExpr:
		keys := make([]syntax.Expr, 0, len(x.List))
		for _, e := range x.List {
			if d, ok := e.(*syntax.DictEntry); ok {
				keys = append(keys, d.Key)
			}
		}
		return keys
	}
	return nil
}

// nameError says why name is never a value of the field, "" when it can
// be one.
func nameError(f *where.Field, name string) string {
	if slices.Contains(f.Names, name) {
		return ""
	}
	if f.Kind != where.KindEnum || f.Parse == nil {
		return f.NameError(name)
	}
	v, err := f.Parse(name)
	if err != nil {
		return f.NameError(name)
	}
	held := fmt.Sprintf("%s(%d)", f.Name, v) // how a value without a name reads
	if v >= 0 && int(v) < len(f.Names) {
		held = f.Names[v]
	}
	if held == name {
		return ""
	}
	return fmt.Sprintf("%s is never %q: it holds %q (a filter takes %q for %q; code compares the names)", f.Name, name, held, name, held)
}
