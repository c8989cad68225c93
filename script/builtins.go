package script

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/iotrace/iotrace/event"

	"go.starlark.net/starlark"
)

// units are the scaling helpers: ms(10) is 10 ms in ns, kib(4) is 4096.
var units = []struct {
	name string
	mult int64
}{
	{"ns", 1}, {"us", 1_000}, {"ms", 1_000_000}, {"s", 1_000_000_000},
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
}

// builtins returns the names a script sees besides Starlark's own.
func (s *Script) builtins() starlark.StringDict {
	d := starlark.StringDict{
		"count":        s.newAggBuiltin(aggCount),
		"sum":          s.newAggBuiltin(aggSum),
		"avg":          s.newAggBuiltin(aggAvg),
		"hist_log2":    s.newAggBuiltin(aggLog2),
		"hist_linear":  s.newAggBuiltin(aggLinear),
		"min":          s.minMax(aggMin),
		"max":          s.minMax(aggMax),
		"printf":       starlark.NewBuiltin("printf", s.printf),
		"sprintf":      starlark.NewBuiltin("sprintf", s.sprintf),
		"emit":         starlark.NewBuiltin("emit", s.emit),
		"every":        starlark.NewBuiltin("every", s.every),
		"exit":         starlark.NewBuiltin("exit", exitBuiltin),
		"now":          starlark.NewBuiltin("now", s.nowBuiltin),
		"fmt_duration": starlark.NewBuiltin("fmt_duration", fmtDuration),
		"fmt_bytes":    starlark.NewBuiltin("fmt_bytes", fmtBytes),
		"trace":        &traceValue{s: s},
		"range":        rangeBuiltin(starlark.Universe["range"]),
	}
	for _, u := range units {
		d[u.name] = unitBuiltin(u.name, u.mult)
	}
	args := starlark.NewDict(len(s.opts.Args))
	for k, v := range s.opts.Args {
		args.SetKey(starlark.String(k), starlark.String(v))
	}
	args.Freeze()
	d["args"] = args
	return d
}

// minMax is the min or max aggregation constructor when called with key
// names (or nothing), and Starlark's min/max otherwise.
func (s *Script) minMax(kind aggKind) *starlark.Builtin {
	agg := s.newAggBuiltin(kind)
	universe := starlark.Universe[kind.String()]
	return starlark.NewBuiltin(kind.String(), func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		isAgg := true
		for _, a := range args {
			if _, ok := a.(starlark.String); !ok {
				isAgg = false
			}
		}
		for _, kv := range kwargs {
			if k, _ := starlark.AsString(kv[0]); k == "key" {
				isAgg = false
			}
		}
		if isAgg {
			return starlark.Call(t, agg, args, kwargs)
		}
		return starlark.Call(t, universe, args, kwargs)
	})
}

func unitBuiltin(name string, mult int64) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Value
		if err := starlark.UnpackPositionalArgs(name, args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		switch x := x.(type) {
		case starlark.Int:
			return x.Mul(starlark.MakeInt64(mult)), nil
		case starlark.Float:
			v := float64(x) * float64(mult)
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxInt64 {
				return nil, fmt.Errorf("%s(%v): out of range", name, x)
			}
			return starlark.MakeInt64(int64(math.Round(v))), nil
		}
		return nil, fmt.Errorf("%s: want a number, got %s", name, x.Type())
	})
}

func exitBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	return nil, ErrExit
}

func (s *Script) nowBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	return starlark.MakeInt64(s.now()), nil
}

// every implements every(interval, fn): call fn every interval of script
// time ("5s", "250ms", or ns as an int). Top level only.
func (s *Script) every(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var iv starlark.Value
	var fn starlark.Callable
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &iv, &fn); err != nil {
		return nil, err
	}
	if !s.inTop {
		return nil, fmt.Errorf("every() registers a timer at the script's top level, not inside a handler")
	}
	var ns int64
	switch v := iv.(type) {
	case starlark.String:
		d, err := time.ParseDuration(string(v))
		if err != nil {
			return nil, fmt.Errorf("every: %q is not a duration (like \"5s\", \"250ms\")", string(v))
		}
		ns = int64(d)
	case starlark.Int:
		var ok bool
		if ns, ok = v.Int64(); !ok {
			return nil, fmt.Errorf("every: interval out of range")
		}
	default:
		return nil, fmt.Errorf("every: the interval is a duration string (\"5s\") or ns (s(5)), not a %s", iv.Type())
	}
	if ns < int64(time.Millisecond) {
		return nil, fmt.Errorf("every: the interval must be at least 1ms, got %s", time.Duration(ns))
	}
	s.timers = append(s.timers, &timer{every: ns, next: ns, fn: fn})
	return starlark.None, nil
}

// fmtDuration implements fmt_duration(ns): "1.5ms", "12s", "850ns".
func fmtDuration(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var ns int64
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &ns); err != nil {
		return nil, err
	}
	return starlark.String(time.Duration(ns).String()), nil
}

// fmtBytes implements fmt_bytes(n): "512 B", "4.0 KiB", "1.5 GiB".
func fmtBytes(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var n int64
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &n); err != nil {
		return nil, err
	}
	return starlark.String(FormatBytes(n)), nil
}

// FormatBytes renders a byte count with binary units: "512 B", "4.0 KiB".
func FormatBytes(n int64) string {
	if n < 1024 && n > -1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= 1024
		if math.Abs(v) < 1024 || u == "PiB" {
			return strconv.FormatFloat(v, 'f', 1, 64) + " " + u
		}
	}
	return ""
}

// traceValue is the script's view of the trace: the header's fields, and
// counts of what was received, matched and lost.
type traceValue struct{ s *Script }

var traceAttrs = []string{
	"os", "os_version", "hostname", "cpus", "source", "start_wall", "command", "tool", "layers",
	"events", "matched", "end", "lost", "unpaired", "unresolved", "dropped",
}

func (t *traceValue) String() string        { return "<trace>" }
func (t *traceValue) Type() string          { return "trace" }
func (t *traceValue) Freeze()               {}
func (t *traceValue) Truth() starlark.Bool  { return starlark.True }
func (t *traceValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: trace") }
func (t *traceValue) AttrNames() []string   { return traceAttrs }

func (t *traceValue) Attr(name string) (starlark.Value, error) {
	s := t.s
	h := &s.header
	switch name {
	case "os":
		return starlark.String(h.OS), nil
	case "os_version":
		return starlark.String(h.OSVersion), nil
	case "hostname":
		return starlark.String(h.Hostname), nil
	case "cpus":
		return starlark.MakeUint64(uint64(h.CPUs)), nil
	case "source":
		return starlark.String(h.Source.String()), nil
	case "start_wall":
		return starlark.MakeInt64(h.StartWall), nil
	case "command":
		return starlark.String(h.Command), nil
	case "layers":
		// The layers the source traced ("file", "block"); empty when the
		// trace does not say.
		var ls []starlark.Value
		for _, l := range []event.Layer{event.LayerFile, event.LayerBlock} {
			if h.Layers.Has(l) {
				ls = append(ls, starlark.String(l.String()))
			}
		}
		return starlark.NewList(ls), nil
	case "tool":
		return starlark.String(h.Tool), nil
	case "events":
		return starlark.MakeUint64(s.seen.Load()), nil
	case "matched":
		return starlark.MakeUint64(s.matched.Load()), nil
	case "end":
		if s.trailer != nil {
			return starlark.MakeInt64(max(s.trailer.End, s.clock)), nil
		}
		return starlark.MakeInt64(s.now()), nil
	case "lost", "unpaired", "unresolved", "dropped":
		if s.trailer == nil {
			return starlark.MakeInt(0), nil
		}
		kind := map[string]event.CounterKind{"lost": event.CountLost, "unpaired": event.CountUnpaired,
			"unresolved": event.CountUnresolved, "dropped": event.CountDropped}[name]
		return starlark.MakeUint64(s.trailer.Stats.Total(kind)), nil
	}
	return nil, nil
}
