package script

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/iotrace/iotrace/event"
)

// feed loads src with a memory limit and feeds it up to n events (each a
// read), stopping at the first error. It returns the events the script
// took and the error.
func feed(t *testing.T, src string, limit uint64, n int) (int, error) {
	t.Helper()
	var out bytes.Buffer
	s, err := Load("mem.star", []byte(src), Options{Stdout: &out, Stderr: &out, MaxMemory: limit, KeepGoing: true})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if err := s.Begin(&event.Header{OS: "linux"}); err != nil {
		t.Fatal(err)
	}
	e := event.New()
	e.Layer, e.Op, e.Pid, e.Comm = event.LayerFile, event.OpRead, 1, "x"
	for i := 0; i < n; i++ {
		e.ID, e.Time = uint64(i+1), int64(i)
		if err := s.Event(&e); err != nil {
			return i, err
		}
	}
	return n, s.Close()
}

// The three hostile scripts of issue #17: each stops with the memory
// error, long before it would have grown the heap by what it tries
// (limits low enough that without the limit none of them can exhaust the
// machine, high enough to be over the runtime's own noise).
func TestMemoryLimitStopsHostileScripts(t *testing.T) {
	const limit = 48 << 20
	cases := []struct {
		name, src string
		events    int // what the script may get; without the limit it grows past 4x the limit by then
	}{
		{"list append", "data = []\ndef on_event(e):\n    data.append(\"x\" * 20000 + str(e.id))\n", 20000}, // 400 MB
		{"string doubling", "s = [\"x\"]\ndef on_event(e):\n    s[0] = s[0] + s[0]\n", 28},                  // 256 MB
		{"dict of strings", "d = {}\ndef on_event(e):\n    d[e.id] = \"%d\" % e.id * 5000\n", 40000},        // 400+ MB
	}
	for _, c := range cases {
		took, err := feed(t, c.src, limit, c.events)
		if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") || !strings.Contains(err.Error(), "--max-memory") {
			t.Errorf("%s: took %d events, err %v; want the memory limit's error", c.name, took, err)
			continue
		}
		var me *MemoryLimitError
		if !errors.As(err, &me) || me.Limit != limit || me.Grown+me.Wanted < limit {
			t.Errorf("%s: %v is not a *MemoryLimitError past %d bytes", c.name, err, limit)
		}
		if took >= c.events {
			t.Errorf("%s: stopped only after every event", c.name)
		}
	}
	// Many aggregations made at load time.
	_, err := Load("aggs.star", []byte("aggs = [count() for i in range(3000000)]\n"), Options{Stdout: &bytes.Buffer{}, MaxMemory: limit})
	if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Errorf("many aggregations: %v", err)
	}
	// range() cannot build a huge list in one step.
	_, err = Load("range.star", []byte("x = list(range(1 << 30))\n"), Options{Stdout: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("huge range: %v", err)
	}
	// A script within its limit runs to the end.
	if took, err := feed(t, "data = []\ndef on_event(e):\n    data.append(e.id)\n", limit, 10000); err != nil || took != 10000 {
		t.Errorf("small script: took %d, %v", took, err)
	}
}

// TestMemoryWithinAStep: every operation and builtin that builds a value
// in proportion to its operands is checked before it allocates (issue
// 25, item 7: s.replace("a", s) grew the heap by 1 GiB under a 100 MB
// limit; with a 128 KiB string the process died of Go's fatal out of
// memory). Each case asks for far more than the limit in one step and
// must end with the limit's error, having allocated little.
func TestMemoryWithinAStep(t *testing.T) {
	const limit = 24 << 20
	// s is 128 KiB of "a"; big is 8 MiB; l a list of big, 48 times; d
	// a dict of big; n a number of 41 bits.
	const prelude = "s = \"a\" * (128 << 10)\nbig = \"b\" * (8 << 20)\nl = [big] * 48\nn = 1 << 40\nd = {i: big for i in range(48)}\n"
	const wide = "h = hist_linear(\"k\", lo=0, hi=1 << 20, step=1)\nh.add(\"a\", 0)\nh.add(\"a\", (1 << 20) - 1)\n"
	cases := map[string]string{
		"replace":          `x = s.replace("a", s)`,
		"replace bound":    `f = s.replace` + "\n" + `x = f("a", s)`,
		"getattr replace":  `x = getattr(s, "replace")("a", s)`,
		"join":             `x = "".join(l)`,
		"join of a repeat": `x = "".join([s] * 100000)`,
		"repeat":           `x = s * 100000`,
		"repeat left":      `x = 100000 * s`,
		"list repeat":      `x = [0] * (1 << 26)`,
		"tuple repeat":     `x = (0,) * (1 << 26)`,
		"concatenation":    `x = big + big`,
		"augmented +=":     "x = big\nfor i in range(4):\n    x += x",
		"augmented *=":     `x = s` + "\n" + `x *= 100000`,
		"augmented index":  `x = [s]` + "\n" + `x[0] *= 100000`,
		"list +=":          `x = []` + "\n" + `x += l * 100000`,
		"format %":         `x = ("%s" * 48) % tuple(l)`,
		"format % dict":    `x = ("%(k)s" * 48) % {"k": big}`,
		"str.format":       `x = ("{0}" * 48).format(big)`,
		"str of a list":    `x = str(l)`,
		"repr of a list":   `x = repr([l, l])`,
		"str of a dict":    `x = str(d)`,
		"nested repeat":    "x = [s]\nfor i in range(4):\n    x = [x] * 100\ny = str(x)",
		"print":            `print(l)`,
		"sprintf":          `x = sprintf("%s", l)`,
		"sprintf width":    `x = sprintf("%999999s" * 200, *([1] * 200))`,
		"emit":             `emit(l)`,
		"list of a range":  `x = list(range(1 << 24))`,
		"sorted":           `x = sorted(range(1 << 24))`,
		"enumerate":        `x = enumerate(range(1 << 23))`,
		"zip":              `x = zip(range(1 << 23), range(1 << 23))`,
		"tuple of a range": `x = tuple(range(1 << 24))`,
		"dict of pairs":    `x = dict([(i, i) for i in range(1 << 10)] * 8192)`,
		"split":            `x = (s * 256).split("a")`,
		"upper":            `x = (big + big).upper()`,
		"extend":           `x = []` + "\n" + `x.extend(range(1 << 24))`,
		"dict update":      `x = {}` + "\n" + `x.update([(i, i) for i in range(1 << 10)] * 8192)`,
		"big int product":  "x = n\nfor i in range(30):\n    x = x * x",
		"fail":             `fail(l)`,
		"lambda default":   `f = lambda a = s.replace("a", s): a`,
		// A key's histogram of a million buckets draws a million lines.
		"str of a histogram":     wide + `x = str(h["a"])`,
		"print of a histogram":   wide + `print(h["a"])`,
		"str of an aggregation":  wide + `x = str(h)`,
		"sprintf of a histogram": wide + `x = sprintf("%s", h["a"])`,
	}
	for name, body := range cases {
		src := prelude + body + "\n"
		var err error
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		done := make(chan struct{})
		t0 := time.Now()
		go func() {
			defer close(done)
			var s *Script
			s, err = Load(name+".star", []byte(src), Options{Stdout: io.Discard, Stderr: io.Discard, MaxMemory: limit})
			if s != nil {
				s.Close()
			}
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still running after 30 s", name)
		}
		runtime.ReadMemStats(&after)
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("%s: stopped after %v", name, d)
		}
		var me *MemoryLimitError
		if !errors.As(err, &me) {
			t.Errorf("%s: %v, want the memory limit's error", name, err)
			continue
		}
		if me.Wanted == 0 {
			t.Errorf("%s: stopped by the watch after the step (%v), not refused before it allocated", name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 6*limit {
			t.Errorf("%s: %d MB allocated before the limit stopped it", name, grew>>20)
		}
	}
}

// TestSizeEstimates: the estimates behind the checks, for what the
// script cases cannot isolate.
func TestSizeEstimates(t *testing.T) {
	a, b := starlark.NewDict(0), starlark.NewDict(0)
	for i := range 1000 {
		a.SetKey(starlark.MakeInt(i), starlark.None)
		b.SetKey(starlark.MakeInt(-i), starlark.None)
	}
	if n := binarySize(syntax.PIPE, a, b, 1<<40); n != 2000*entryBytes {
		t.Errorf("dict | dict: %d", n)
	}
	s := starlark.String(strings.Repeat("ab", 500))
	if n := methodSize(s, "replace", starlark.Tuple{starlark.String("a"), s}, nil, 1<<40); n != 1000+500*1000 {
		t.Errorf("replace: %d", n)
	}
	// A list holding itself renders as [...] once; one holding a string
	// ten times renders it ten times.
	l := starlark.NewList(nil)
	l.Append(l)
	if n := reprSize(l, 1<<40); n > 16 {
		t.Errorf("a list holding itself: %d", n)
	}
	ten := starlark.NewList(nil)
	for range 10 {
		ten.Append(s)
	}
	if n := reprSize(ten, 1<<40); n < 10*1000 {
		t.Errorf("a string ten times: %d", n)
	}
}
