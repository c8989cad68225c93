package script

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/script/where"
	"github.com/iotrace/iotrace/stacks"
	"go.starlark.net/starlark"
)

// eventValue is the Starlark view of an event: its fields are attributes,
// computed on access (no per-event dict). A value passed to on_event is
// valid during that call only; e.copy() keeps one.
type eventValue struct {
	s   *Script
	gen uint64
	ev  *event.Event
	own bool // a copy: always valid
}

var (
	_ starlark.HasAttrs = (*eventValue)(nil)
	_ starlark.Value    = (*eventValue)(nil)
)

// attr is how one attribute is computed.
type attr struct {
	field *where.Field
	enum  []starlark.Value // precomputed names of an enum field
	flags []starlark.Value // precomputed flag names
	extra func(v *eventValue) starlark.Value
}

var attrs, attrNames = buildAttrs()

func buildAttrs() (map[string]*attr, []string) {
	m := make(map[string]*attr)
	for _, f := range where.Fields() {
		a := &attr{field: f}
		switch f.Kind {
		case where.KindEnum:
			a.enum = make([]starlark.Value, len(f.Names))
			for i, n := range f.Names {
				a.enum[i] = starlark.String(n)
			}
		case where.KindFlags:
			a.flags = make([]starlark.Value, len(f.Names))
			for i, n := range f.Names {
				a.flags[i] = starlark.String(n)
			}
		}
		m[f.Name] = a
	}
	m["device"] = &attr{extra: func(v *eventValue) starlark.Value {
		if v.ev.Dev.IsZero() {
			return starlark.String("")
		}
		if n, ok := v.s.devices[v.ev.Dev]; ok {
			return starlark.String(n)
		}
		return starlark.String(v.ev.Dev.String())
	}}
	m["stack"] = &attr{extra: func(v *eventValue) starlark.Value {
		st := v.s.stacks.Frames(v.ev)
		if st == nil {
			return starlark.Tuple{}
		}
		t := make(starlark.Tuple, len(st.Frames))
		for i, f := range st.Frames {
			t[i] = starlark.String(stacks.FrameString(f))
		}
		return t
	}}
	m["copy"] = &attr{extra: func(v *eventValue) starlark.Value {
		return starlark.NewBuiltin("copy", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			c := *v.ev
			return &eventValue{s: v.s, ev: &c, own: true}, nil
		})
	}}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return m, names
}

func (v *eventValue) String() string {
	if !v.valid() {
		return "<stale event>"
	}
	return describeEvent(v.ev)
}

func (v *eventValue) Type() string         { return "event" }
func (v *eventValue) Freeze()              {}
func (v *eventValue) Truth() starlark.Bool { return starlark.True }
func (v *eventValue) Hash() (uint32, error) {
	return 0, fmt.Errorf("unhashable type: event (use e.id or other fields as keys)")
}
func (v *eventValue) AttrNames() []string { return attrNames }

func (v *eventValue) valid() bool { return v.own || v.gen == v.s.gen }

// attrCache remembers the attributes of recently used names by the
// address of the name's bytes: the interpreter passes the same string
// (from the compiled program's constants) for the same e.name in the
// source, so a hit costs a pointer compare instead of a map lookup.
type attrCache [32]struct {
	p *byte
	n int
	a *attr
}

func (c *attrCache) lookup(name string) *attr {
	if len(name) == 0 {
		return nil
	}
	p := unsafe.StringData(name)
	slot := &c[(uintptr(unsafe.Pointer(p))>>3)%uintptr(len(c))]
	if slot.p == p && slot.n == len(name) {
		return slot.a
	}
	a := attrs[name]
	if a != nil {
		slot.p, slot.n, slot.a = p, len(name), a
	}
	return a
}

func (v *eventValue) Attr(name string) (starlark.Value, error) {
	a := v.s.attrCache.lookup(name)
	if a == nil {
		return nil, nil // "event has no .x field or method"
	}
	if !v.valid() {
		return nil, fmt.Errorf("event used after its on_event call returned: keep the fields you need (e.path, e.latency) or e.copy()")
	}
	if a.extra != nil {
		return a.extra(v), nil
	}
	f := a.field
	switch f.Kind {
	case where.KindInt:
		if f.Unsigned {
			return starlark.MakeUint64(f.Uint(v.ev)), nil
		}
		return starlark.MakeInt64(f.Int(v.ev)), nil
	case where.KindString:
		return starlark.String(f.Str(v.ev)), nil
	case where.KindEnum:
		i := f.Int(v.ev)
		if i >= 0 && int(i) < len(a.enum) {
			return a.enum[i], nil
		}
		return starlark.String(fmt.Sprintf("%s(%d)", f.Name, i)), nil
	case where.KindBool:
		return starlark.Bool(f.Int(v.ev) != 0), nil
	case where.KindFlags:
		bits := f.Int(v.ev)
		var t starlark.Tuple
		for i, n := range a.flags {
			if bits&(1<<i) != 0 {
				t = append(t, n)
			}
		}
		if t == nil {
			t = starlark.Tuple{}
		}
		return t, nil
	}
	return nil, nil
}

// describeEvent renders an event in one line for error messages and
// str(e): the op, then the fields that are set.
func describeEvent(e *event.Event) string {
	var b strings.Builder
	b.WriteString(e.Op.String())
	if e.Native != "" && e.Native != e.Op.String() {
		fmt.Fprintf(&b, " (%s)", e.Native)
	}
	fmt.Fprintf(&b, " time=%d", e.Time)
	if e.ID != 0 {
		fmt.Fprintf(&b, " id=%d", e.ID)
	}
	fmt.Fprintf(&b, " pid=%d tid=%d", e.Pid, e.Tid)
	if e.Comm != "" {
		fmt.Fprintf(&b, " comm=%s", e.Comm)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, " path=%s", strconv.Quote(e.Path))
	}
	if e.FD >= 0 {
		fmt.Fprintf(&b, " fd=%d", e.FD)
	}
	if !e.Dev.IsZero() {
		fmt.Fprintf(&b, " dev=%s", e.Dev)
	}
	if e.Layer == event.LayerBlock {
		fmt.Fprintf(&b, " sector=%d", e.Sector)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " offset=%d", e.Offset)
	}
	if e.Size != 0 {
		fmt.Fprintf(&b, " size=%d", e.Size)
	}
	if e.Bytes >= 0 {
		fmt.Fprintf(&b, " bytes=%d", e.Bytes)
	}
	fmt.Fprintf(&b, " latency=%d status=%s", e.Duration, e.Status)
	if e.Code != 0 {
		fmt.Fprintf(&b, " errno=%s", where.Errno(e))
	}
	if e.Flags != 0 {
		fmt.Fprintf(&b, " flags=%s", e.Flags)
	}
	return b.String()
}
