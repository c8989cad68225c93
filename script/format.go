package script

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/iotrace/iotrace/script/where"
	"go.starlark.net/starlark"
)

// format is a parsed printf format: literal text around C-style verbs.
type format struct {
	lits  []string // len(verbs)+1 pieces of text
	verbs []verb
}

type verb struct {
	spec string // the Go format of the verb: "%-10d"
	conv byte   // d x X o b c s q v f F e E g G
	pad  uint64 // its width and precision: what it may add to its value
}

// maxFormats bounds the cache of parsed formats.
const maxFormats = 1024

// parseFormat parses a printf format: %[flags][width][.precision]verb
// with flags -+ #0, verbs d i u x X o b c s q r v f F e E g G, and %%.
func parseFormat(f string) (*format, error) {
	p := &format{}
	var lit strings.Builder
	for i := 0; i < len(f); i++ {
		ch := f[i]
		if ch != '%' {
			lit.WriteByte(ch)
			continue
		}
		j := i + 1
		if j < len(f) && f[j] == '%' {
			lit.WriteByte('%')
			i = j
			continue
		}
		for j < len(f) && strings.IndexByte("-+ #0", f[j]) >= 0 {
			j++
		}
		var pad uint64
		number := func() {
			n := uint64(0)
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				n = min(n*10+uint64(f[j]-'0'), 1<<40)
				j++
			}
			pad += n
		}
		number()
		if j < len(f) && f[j] == '.' {
			j++
			number()
		}
		if j >= len(f) {
			return nil, fmt.Errorf("format %q ends inside a %%-verb", f)
		}
		conv := f[j]
		switch conv {
		case 'i', 'u':
			conv = 'd'
		case 'r':
			conv = 'v'
		case 'd', 'x', 'X', 'o', 'b', 'c', 's', 'q', 'v', 'f', 'F', 'e', 'E', 'g', 'G':
		default:
			return nil, fmt.Errorf("format %q: unknown verb %%%c (use d x o b c s q v f e g)", f, f[j])
		}
		p.lits = append(p.lits, lit.String())
		lit.Reset()
		spec := f[i:j] + string(conv)
		if conv == 'v' && f[j] == 'r' {
			spec = f[i:j] + "s"
		}
		p.verbs = append(p.verbs, verb{spec: spec, conv: f[j], pad: pad})
		i = j
	}
	p.lits = append(p.lits, lit.String())
	return p, nil
}

func (s *Script) parsedFormat(f string) (*format, error) {
	if p, ok := s.formats[f]; ok {
		return p, nil
	}
	p, err := parseFormat(f)
	if err != nil {
		return nil, err
	}
	if len(s.formats) >= maxFormats {
		for k := range s.formats {
			delete(s.formats, k)
			break
		}
	}
	s.formats[f] = p
	return p, nil
}

// formatTo writes the formatted arguments to w.
func (s *Script) formatTo(w io.Writer, fn string, args starlark.Tuple) error {
	if len(args) == 0 {
		return fmt.Errorf("%s: missing the format", fn)
	}
	fs, ok := starlark.AsString(args[0])
	if !ok {
		return fmt.Errorf("%s: the format must be a string, not a %s", fn, args[0].Type())
	}
	p, err := s.parsedFormat(fs)
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	vals := args[1:]
	if len(vals) != len(p.verbs) {
		return fmt.Errorf("%s: the format has %d verb(s) but %d argument(s) follow it", fn, len(p.verbs), len(vals))
	}
	need := uint64(len(fs))
	for i, v := range p.verbs {
		need = satAdd(need, satAdd(reprSize(vals[i], s.limit()), v.pad))
	}
	if err := s.reserve(need); err != nil {
		return err
	}
	for i, v := range p.verbs {
		io.WriteString(w, p.lits[i])
		a, err := convert(v, vals[i])
		if err != nil {
			return fmt.Errorf("%s: argument %d: %w", fn, i+2, err)
		}
		fmt.Fprintf(w, v.spec, a)
	}
	io.WriteString(w, p.lits[len(p.verbs)])
	return nil
}

// convert turns a Starlark value into the Go value a verb prints.
func convert(v verb, x starlark.Value) (any, error) {
	switch v.conv {
	case 'd', 'i', 'u', 'x', 'X', 'o', 'b', 'c':
		switch x := x.(type) {
		case starlark.Int:
			if i, ok := x.Int64(); ok {
				return i, nil
			}
			return x.BigInt(), nil
		case starlark.Bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		case starlark.String:
			if v.conv == 'x' || v.conv == 'X' {
				return string(x), nil
			}
		}
		return nil, fmt.Errorf("%%%c needs an int, got %s %s", v.conv, x.Type(), x.String())
	case 'f', 'F', 'e', 'E', 'g', 'G':
		if f, ok := starlark.AsFloat(x); ok {
			return f, nil
		}
		return nil, fmt.Errorf("%%%c needs a number, got %s %s", v.conv, x.Type(), x.String())
	case 's', 'q':
		if s, ok := starlark.AsString(x); ok {
			return s, nil
		}
		return x.String(), nil
	case 'r':
		return x.String(), nil
	}
	switch x := x.(type) {
	case starlark.String:
		return string(x), nil
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return i, nil
		}
		return x.BigInt(), nil
	}
	return x.String(), nil
}

// printf implements printf(format, *args): C-style formatting, no newline
// added.
func (s *Script) printf(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(kwargs) > 0 {
		return nil, fmt.Errorf("printf: no keyword arguments")
	}
	return starlark.None, s.formatTo(s.out, "printf", args)
}

// sprintf implements sprintf(format, *args): printf into a string.
func (s *Script) sprintf(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(kwargs) > 0 {
		return nil, fmt.Errorf("sprintf: no keyword arguments")
	}
	var sb strings.Builder
	if err := s.formatTo(&sb, "sprintf", args); err != nil {
		return nil, err
	}
	return starlark.String(sb.String()), nil
}

// emit implements emit(**fields) and emit(value): one JSON line.
func (s *Script) emit(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var buf []byte
	var err error
	if err := s.reserve(estimateRepr(args, kwargs, s.limit())); err != nil {
		return nil, err
	}
	switch {
	case len(args) == 0 && len(kwargs) > 0:
		buf = append(buf, '{')
		for i, kv := range kwargs {
			if i > 0 {
				buf = append(buf, ',')
			}
			k, _ := starlark.AsString(kv[0])
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			if buf, err = appendJSON(buf, kv[1], 0); err != nil {
				return nil, fmt.Errorf("emit: %s: %w", k, err)
			}
		}
		buf = append(buf, '}')
	case len(args) == 1 && len(kwargs) == 0:
		if buf, err = appendJSON(buf, args[0], 0); err != nil {
			return nil, fmt.Errorf("emit: %w", err)
		}
	default:
		return nil, fmt.Errorf("emit takes keyword arguments (emit(pid=e.pid, bytes=n)) or one value (a dict, an event)")
	}
	buf = append(buf, '\n')
	s.out.Write(buf)
	return starlark.None, nil
}

// appendJSON encodes a Starlark value as JSON.
func appendJSON(buf []byte, v starlark.Value, depth int) ([]byte, error) {
	if depth > 64 {
		return buf, fmt.Errorf("value nested too deeply")
	}
	var err error
	switch v := v.(type) {
	case starlark.NoneType:
		return append(buf, "null"...), nil
	case starlark.Bool:
		return strconv.AppendBool(buf, bool(v)), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return strconv.AppendInt(buf, i, 10), nil
		}
		return v.BigInt().Append(buf, 10), nil
	case starlark.Float:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return append(buf, "null"...), nil
		}
		return strconv.AppendFloat(buf, f, 'g', -1, 64), nil
	case starlark.String:
		return appendJSONString(buf, string(v)), nil
	case starlark.Tuple:
		return appendJSONSeq(buf, v, depth)
	case *starlark.List:
		elems := make([]starlark.Value, v.Len())
		for i := range elems {
			elems[i] = v.Index(i)
		}
		return appendJSONSeq(buf, elems, depth)
	case *starlark.Dict:
		buf = append(buf, '{')
		for i, kv := range v.Items() {
			if i > 0 {
				buf = append(buf, ',')
			}
			k, ok := starlark.AsString(kv[0])
			if !ok {
				k = kv[0].String()
			}
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			if buf, err = appendJSON(buf, kv[1], depth+1); err != nil {
				return buf, err
			}
		}
		return append(buf, '}'), nil
	case *eventValue:
		if !v.valid() {
			return buf, fmt.Errorf("event used after its on_event call returned (use e.copy())")
		}
		return appendEventJSON(buf, v)
	case *Agg:
		return appendAggJSON(buf, v)
	case *histValue:
		return appendHistJSON(buf, v.c)
	}
	return buf, fmt.Errorf("cannot encode a %s as JSON", v.Type())
}

func appendJSONSeq(buf []byte, elems []starlark.Value, depth int) ([]byte, error) {
	buf = append(buf, '[')
	for i, x := range elems {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendJSON(buf, x, depth+1); err != nil {
			return buf, err
		}
	}
	return append(buf, ']'), nil
}

// appendEventJSON encodes every field of an event, in field order.
func appendEventJSON(buf []byte, v *eventValue) ([]byte, error) {
	buf = append(buf, '{')
	for i, f := range where.Fields() {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, f.Name)
		buf = append(buf, ':')
		x, err := v.Attr(f.Name)
		if err != nil {
			return buf, err
		}
		if buf, err = appendJSON(buf, x, 1); err != nil {
			return buf, err
		}
	}
	return append(buf, '}'), nil
}

// appendAggJSON encodes an aggregation as a list of {keys..., value} or,
// for histograms, {keys..., hist: {...}}.
func appendAggJSON(buf []byte, a *Agg) ([]byte, error) {
	buf = append(buf, '[')
	for i, c := range a.sorted(a.defaultOrder(), 0) {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		for j, k := range a.keys {
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = appendJSON(buf, c.parts[j], 1); err != nil {
				return buf, err
			}
			buf = append(buf, ',')
		}
		name := a.unit
		if name == "" {
			name = a.kind.String()
		}
		if a.kind.isHist() {
			buf = append(buf, `"hist":`...)
			var err error
			if buf, err = appendHistJSON(buf, c); err != nil {
				return buf, err
			}
		} else {
			buf = appendJSONString(buf, name)
			buf = append(buf, ':')
			buf = strconv.AppendInt(buf, a.rawValue(c), 10)
		}
		buf = append(buf, '}')
	}
	return append(buf, ']'), nil
}

// appendHistJSON encodes a key's histogram: its totals and buckets.
func appendHistJSON(buf []byte, c *cell) ([]byte, error) {
	var js []byte
	var err error
	if c.lin != nil {
		js, err = c.lin.MarshalJSON()
	} else {
		js, err = c.log2.MarshalJSON()
	}
	return append(buf, js...), err
}

// appendJSONString quotes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c < 0x20 || c == 0x7f:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, `\ufffd`...)
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}
