package where

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

func sample() event.Event {
	e := event.New()
	e.Source = event.SourceEBPF
	e.Layer = event.LayerFile
	e.Op = event.OpRead
	e.Native = "pread64"
	e.Time = 5_000_000
	e.Duration = 12_000_000
	e.Pid, e.Tid, e.CPU = 42, 43, 1
	e.Comm = "postgres"
	e.Path = "/var/lib/pg/base/16384/2619"
	e.FD = 7
	e.Offset = 8192
	e.Size = 8192
	e.Bytes = 4096
	e.Status = event.StatusOK
	e.Flags = event.FlagSync | event.FlagDirect
	e.FileObject = 0xffff_a000_0000_0010
	return e
}

func TestMatch(t *testing.T) {
	e := sample()
	failed := sample()
	failed.Status, failed.Code, failed.Bytes = event.StatusNotFound, 2, -1
	cases := []struct {
		expr string
		ev   *event.Event
		want bool
	}{
		{"op == 'read'", &e, true},
		{"op == 'write'", &e, false},
		{"'read' == op", &e, true},
		{"op != 'write'", &e, true},
		{"op in ('read', 'write')", &e, true},
		{"op not in ['read', 'write']", &e, false},
		{"op == 'read' and latency > ms(10)", &e, true},
		{"op == 'read' and latency > ms(12)", &e, false},
		{"latency >= ms(12)", &e, true},
		{"ms(12) <= latency", &e, true},
		{"latency // us(1) == 12000", &e, true},
		{"latency - wait == duration", &e, true},
		{"bytes < size", &e, true},
		{"size == kib(8)", &e, true},
		{"pid == 42 or comm == 'x'", &e, true},
		{"not (pid == 42)", &e, false},
		{"pid in (1, 2, 3, 4, 5, 6, 7, 8, 9, 42)", &e, true},
		{"pid in (1, 2)", &e, false},
		{"comm in ('postgres', 'mysqld')", &e, true},
		{"'pg' in path", &e, true},
		{"path.startswith('/var/lib/')", &e, true},
		{"path.endswith('.log')", &e, false},
		{"glob(path, '/var/*/2619')", &e, true},
		{"glob(path, '*.log')", &e, false},
		{"'sync' in flags", &e, true},
		{"'writeback' in flags", &e, false},
		{"'direct' not in flags", &e, false},
		{"failed", &e, false},
		{"failed", &failed, true},
		{"not failed and status == 'ok'", &e, true},
		{"errno == 'ENOENT'", &failed, true},
		{"result == -2", &failed, true},
		{"result == 4096", &e, true},
		{"layer == 'file'", &e, true},
		{"layer == 'syscall'", &e, true}, // alias
		{"offset % 4096 == 0", &e, true},
		{"-offset < 0", &e, true},
		{"file_object == 0xffffa00000000010", &e, true},
		{"dev == ''", &e, true},
		{"source == 'ebpf'", &e, true},
		{"True", &e, true},
		{"False or pid == 42", &e, true},
		{"pid == 42 and False", &e, false},
		{"path > '/a'", &e, true},
		{"path == path2", &e, false},
		{"op == op", &e, true},
		{"fd == 7 and cpu == 1 and tid == 43", &e, true},
	}
	for _, c := range cases {
		f, err := Compile(c.expr, Source{File: "--where"})
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got := f.Match(c.ev); got != c.want {
			t.Errorf("%s: got %v, want %v", c.expr, got, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"op == 'raed'", `--where:1:7: op "raed" is not one of: unknown, open, read`},
		{"latncy > 5", `--where:1:1: unknown field "latncy" (did you mean "latency"?)`},
		{"pid", "a filter must be a condition"},
		{"pid == 'x'", "cannot compare pid (int) with \"x\" (numbers are not quoted)"},
		{"pid and op == 'read'", "and needs conditions on both sides"},
		{"latency > ms(", "--where:1:15: got end of file"},
		{"latency / 2 > 1", "use // for division"},
		{"'bogus' in flags", `unknown flag "bogus"`},
		{"'synk' in flags", `--where:1:1: unknown flag "synk" (did you mean "sync"?) (flags: direct, sync,`},
		{"flags == 'sync'", "test a flag with 'sync' in flags"},
		{"op < 'read'", "op can only be compared with == or !="},
		{"foo(1)", "unknown function foo()"},
		{"path.lower() == 'x'", "unknown method .lower()"},
		{"pid in (1, 'a')", "cannot look for a number among strings"},
		{"x = 1", "--where:1:4: got '=', want ')'"},
		{"[p for p in x]", "unsupported expression"},
		{"pid // 0 == 1", "division by zero"},
	}
	for _, c := range cases {
		_, err := Compile(c.expr, Source{File: "--where"})
		if err == nil {
			t.Errorf("%s: compiled, want error %q", c.expr, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to contain %q", c.expr, err, c.want)
		}
	}
}

func TestErrorPositionInScript(t *testing.T) {
	// A FILTER string that starts at line 3, column 10 of a script.
	_, err := Compile("op == 'read' and latency > mss(10)", Source{File: "slow.star", Line: 3, Col: 10})
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not an *Error", err)
	}
	if ce.File != "slow.star" || ce.Line != 3 || ce.Col != 10+27 {
		t.Errorf("position %s:%d:%d, want slow.star:3:37", ce.File, ce.Line, ce.Col)
	}
}

func TestPushdown(t *testing.T) {
	cases := []struct {
		expr string
		want Pushdown
	}{
		{"latency > ms(10)", Pushdown{}},
		{"pid == 42", Pushdown{Pids: []uint32{42}}},
		{"42 == pid and comm in ('a', 'b')", Pushdown{Pids: []uint32{42}, Comms: []string{"a", "b"}}},
		{"op in ('read', 'write') and latency > 5", Pushdown{Ops: []event.Op{event.OpRead, event.OpWrite}, Layers: []event.Layer{event.LayerFile}}},
		{"op in ('read', 'bread')", Pushdown{Ops: []event.Op{event.OpRead, event.OpBlockRead}, Layers: []event.Layer{event.LayerFile, event.LayerBlock}}},
		{"layer == 'block' and (pid == 1 or pid == 2)", Pushdown{Layers: []event.Layer{event.LayerBlock}}},
		{"pid == 1 and pid == 2", Pushdown{Never: true}},
		{"layer == 'block' and op == 'read'", Pushdown{Ops: []event.Op{event.OpRead}, Never: true}},
		{"not pid == 1", Pushdown{}},
		{"pid in (1, 2) and pid in (2, 3)", Pushdown{Pids: []uint32{2}}},
	}
	for _, c := range cases {
		f, err := Compile(c.expr, Source{})
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got := f.Pushdown()
		if got.Never != c.want.Never || (!got.Never && !reflect.DeepEqual(norm(got), norm(c.want))) {
			t.Errorf("%s: pushdown %+v, want %+v", c.expr, got, c.want)
		}
	}
}

func norm(p Pushdown) Pushdown {
	if len(p.Pids) == 0 {
		p.Pids = nil
	}
	if len(p.Comms) == 0 {
		p.Comms = nil
	}
	if len(p.Layers) == 0 {
		p.Layers = nil
	}
	if len(p.Ops) == 0 {
		p.Ops = nil
	}
	return p
}

func TestPushdownApply(t *testing.T) {
	o := backend.Options{Pids: []uint32{1, 2, 3}}
	f := MustCompile("pid in (2, 3, 4) and op == 'write'")
	f.Pushdown().Apply(&o)
	if !reflect.DeepEqual(o.Pids, []uint32{2, 3}) || !reflect.DeepEqual(o.Ops, []event.Op{event.OpWrite}) ||
		!reflect.DeepEqual(o.Layers, []event.Layer{event.LayerFile}) {
		t.Errorf("options %+v", o)
	}
	if s := f.Pushdown().String(); s != "pid in (2, 3, 4) and layer in (file) and op in (write)" {
		t.Errorf("String: %s", s)
	}
}

func TestAnd(t *testing.T) {
	e := sample()
	a := MustCompile("pid == 42")
	b := MustCompile("op == 'write'")
	if And(a, b).Match(&e) || !And(a, nil).Match(&e) || !And(nil, nil).Match(&e) {
		t.Error("And")
	}
	if p := And(a, b).Pushdown(); len(p.Pids) != 1 || len(p.Ops) != 1 {
		t.Errorf("And pushdown %+v", p)
	}
	var empty *Filter
	if !empty.Match(&e) || !empty.Empty() {
		t.Error("nil filter")
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"*.log", "/var/log/a.log", true}, {"*.log", "/var/log/a.lo", false},
		{"/var/*/x", "/var/a/b/x", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"*a*b*c", "xxaxxbxxc", true}, {"*a*b*c", "xxaxxcxxb", false}, {"", "", true}, {"", "a", false},
	}
	for _, c := range cases {
		if got := Glob(c.pat, c.s); got != c.want {
			t.Errorf("Glob(%q, %q) = %v", c.pat, c.s, got)
		}
	}
}

func TestFieldsComplete(t *testing.T) {
	e := sample()
	for _, f := range Fields() {
		switch f.Kind {
		case KindString:
			if f.Str == nil {
				t.Errorf("%s: no Str", f.Name)
			} else {
				_ = f.Str(&e)
			}
		case KindEnum:
			if f.Parse == nil || len(f.Names) == 0 || f.Int == nil {
				t.Errorf("%s: incomplete enum", f.Name)
			}
			for i, n := range f.Names {
				if v, err := f.Parse(n); err != nil || v != int64(i) {
					t.Errorf("%s: Parse(%q) = %d, %v", f.Name, n, v, err)
				}
			}
		default:
			if f.Int == nil || (f.Unsigned && f.Uint == nil) {
				t.Errorf("%s: no getter", f.Name)
			}
		}
		if f.Doc == "" {
			t.Errorf("%s: no doc", f.Name)
		}
	}
	if len(fieldMap) != len(fieldList) {
		t.Error("duplicate field names")
	}
}

var sink bool

func BenchmarkMatchRejecting(b *testing.B) {
	f := MustCompile("pid == 7 and op == 'read'")
	e := sample()
	b.ReportAllocs()
	for b.Loop() {
		sink = f.Match(&e)
	}
}
