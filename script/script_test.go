package script

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/script/scripttest"
)

// runScript loads src and plays the test trace through it.
func runScript(t *testing.T, src string, opts Options) (string, string, error) {
	t.Helper()
	var out, errs bytes.Buffer
	opts.Stdout, opts.Stderr = &out, &errs
	s, err := Load("t.star", []byte(src), opts)
	if err != nil {
		return "", "", err
	}
	h, facts, evs, tr := scripttest.Build()
	err = scripttest.Replay(s, h, facts, evs, tr)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return out.String(), errs.String(), err
}

func mustRun(t *testing.T, src string, opts Options) string {
	t.Helper()
	out, _, err := runScript(t, src, opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out
}

func TestLoadErrorsPointAtTheScript(t *testing.T) {
	cases := []struct{ src, want string }{
		{"def on_event(e)\n    pass\n", "t.star:2:1: got newline, want ':'"},
		{"def on_event(e):\n    x = y\n", "t.star:2:9: undefined: y"},
		{"FILTER = 'op == \"raed\"'\ndef on_event(e):\n    pass\n", `t.star:1:17: op "raed" is not one of`},
		{"x = 1\nFILTER = '''pid ==\n 5 and latncy > 1'''\ndef on_event(e):\n    pass\n", `t.star:3:8: unknown field "latncy" (did you mean "latency"?)`},
		{"FILTER = 5\ndef on_end():\n    pass\n", "FILTER must be a string"},
		{"def on_event():\n    pass\n", "t.star:1:1: on_event takes 1 parameter(s), it declares 0"},
		{"on_event = 3\n", "on_event must be a function"},
		{"x = 1\n", "defines no handler"},
		{"a = count(5)\n", `t.star:1:10: count: key names are strings`},
		{"load('x.star', 'y')\n", `cannot read files`},
		{"h = hist_linear(lo=10, hi=0, step=1)\n", "hist_linear"},
		{"every('5 parsecs', lambda: None)\n", `every: "5 parsecs" is not a duration`},
		{"every('10us', lambda: None)\n", "at least 1ms"},
		{"x = 1 // 0\n", "t.star:1:7: floored division by zero"},
	}
	for _, c := range cases {
		_, err := Load("t.star", []byte(c.src), Options{Stdout: &bytes.Buffer{}})
		if err == nil {
			t.Errorf("%q: loaded, want error %q", c.src, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n error %q\n want  %q", c.src, err, c.want)
		}
	}
}

func TestWhereOption(t *testing.T) {
	_, err := Load("t.star", []byte("def on_event(e):\n    pass\n"), Options{Where: "pid = 3"})
	if err == nil || !strings.HasPrefix(err.Error(), "--where:1:") {
		t.Errorf("error %v, want a --where:1:N position", err)
	}
	out := mustRun(t, `
FILTER = "layer == 'file'"
n = count()
def on_event(e):
    n.add()
def on_end():
    print(n)
`, Options{Where: "comm == 'backup'"})
	if out != "6\n" {
		t.Errorf("FILTER and --where: %q, want 6 (backup's 6 file events)", out)
	}
}

func TestPushdownFromScript(t *testing.T) {
	s, err := Load("t.star", []byte("FILTER = \"pid == 7 and op in ('read', 'write') and latency > ms(1)\"\ndef on_event(e):\n    pass\n"), Options{Where: "comm == 'dd'"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Pushdown().String(); got != "pid in (7) and comm in (dd) and layer in (file) and op in (read, write)" {
		t.Errorf("pushdown %s", got)
	}
}

func TestRuntimeErrorNamesTheEventAndStops(t *testing.T) {
	stopped := 0
	out, _, err := runScript(t, `
n = count()
def on_event(e):
    n.add()
    if e.op == "open" and e.failed:
        x = {}["missing"]
def on_end():
    print("seen", n)
`, Options{Stop: func() { stopped++ }})
	var re *RuntimeError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T), want a *RuntimeError", err, err)
	}
	if re.Pos != "t.star:6:15" || re.Func != "on_event" || !strings.Contains(re.Msg, `key "missing" not in dict`) {
		t.Errorf("error at %s in %s: %s", re.Pos, re.Func, re.Msg)
	}
	if !strings.Contains(re.Event, "open (openat) time=1500000000") || !strings.Contains(re.Event, `path="/etc/missing.conf"`) ||
		!strings.Contains(re.Event, "errno=ENOENT") {
		t.Errorf("event %q", re.Event)
	}
	if stopped != 1 {
		t.Errorf("Stop called %d times, want 1", stopped)
	}
	// on_end still runs with what was aggregated before the error.
	if !strings.HasPrefix(out, "seen ") {
		t.Errorf("output %q: on_end did not run", out)
	}
}

func TestKeepGoing(t *testing.T) {
	out, errs, err := runScript(t, `
ok = count()
def on_event(e):
    if e.failed:
        fail("boom")
    ok.add()
def on_end():
    print(ok)
`, Options{KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	_, _, evs, _ := scripttest.Build()
	if want := len(evs) - 2; out != strconv.Itoa(want)+"\n" {
		t.Errorf("output %q, want %d", out, want)
	}
	if strings.Count(errs, "boom") != 2 || !strings.Contains(errs, "--keep-going") {
		t.Errorf("stderr %q", errs)
	}
}

func TestStepLimitStopsInfiniteLoops(t *testing.T) {
	start := time.Now()
	_, _, err := runScript(t, `
def on_event(e):
    while True:
        pass
`, Options{MaxSteps: 100_000})
	if err == nil || !strings.Contains(err.Error(), "step limit of 100000 steps exceeded (an infinite loop?); raise it with --max-steps") {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(err.Error(), "t.star:") {
		t.Errorf("error %v has no position", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	// The top level is limited too.
	_, err = Load("t.star", []byte("x = 0\nwhile True:\n    x += 1\n"), Options{MaxSteps: 1000})
	if err == nil || !strings.Contains(err.Error(), "step limit") {
		t.Errorf("top level: %v", err)
	}
}

func TestSandbox(t *testing.T) {
	for _, src := range []string{
		"open('/etc/passwd')\n",
		"load('os', 'system')\n",
		"x = __import__('os')\n",
	} {
		_, err := Load("t.star", []byte(src+"def on_end():\n    pass\n"), Options{})
		if err == nil {
			t.Errorf("%q: loaded", src)
		}
	}
}

func TestExitStopsCleanly(t *testing.T) {
	stopped := false
	var out bytes.Buffer
	s, err := Load("t.star", []byte(`
n = count()
def on_event(e):
    n.add()
    if n.count() == 3:
        exit()
def on_end():
    print("events", n)
`), Options{Stdout: &out, Stop: func() { stopped = true }})
	if err != nil {
		t.Fatal(err)
	}
	h, facts, evs, tr := scripttest.Build()
	err = scripttest.Replay(s, h, facts, evs, tr)
	if !errors.Is(err, ErrExit) {
		t.Fatalf("replay: %v, want ErrExit", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !stopped || out.String() != "events 3\n" {
		t.Errorf("stopped %v, output %q", stopped, out.String())
	}
	// Later events are refused.
	e := event.New()
	if err := s.Event(&e); !errors.Is(err, ErrExit) {
		t.Errorf("event after exit: %v", err)
	}
}

func TestStaleEvent(t *testing.T) {
	_, _, err := runScript(t, `
kept = []
def on_event(e):
    if kept:
        print(kept[0].path)
    kept.append(e)
`, Options{})
	if err == nil || !strings.Contains(err.Error(), "event used after its on_event call returned") {
		t.Fatalf("error %v", err)
	}
	out := mustRun(t, `
kept = []
def on_event(e):
    if e.failed:
        kept.append(e.copy())
def on_end():
    for e in kept:
        print(e.op, e.path, e.errno)
`, Options{})
	if out != "open /etc/missing.conf ENOENT\nread /data/bad EIO\n" {
		t.Errorf("copies: %q", out)
	}
}

func TestEventAttributes(t *testing.T) {
	out := mustRun(t, `
FILTER = "op == 'bread' and cause != 0"
def on_event(e):
    if e.size == 8192 and e.sector == 1016:
        print(e.op, e.layer, e.device, e.dev, e.major, e.minor, e.pid, e.tid, e.comm, e.cpu, e.native)
        print(e.time, e.end, e.latency, e.duration, e.wait, e.service, e.bytes, e.size, e.offset)
        print(e.cause, e.flags, e.status, e.failed, e.result, repr(e.errno), e.code, e.source, "%x" % e.request)
        print(type(e), "path" in dir(e), hasattr(e, "nope"))
`, Options{})
	want := "bread block nvme0n1 259:0 259 0 100 101 postgres 2 block_rq\n" +
		"1010250000 1012750000 2500000 2500000 500000 2000000 8192 8192 -1\n" +
		"2 (\"sync\",) ok False 8192 \"\" 0 ebpf ffff888000000200\n" +
		"event True False\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestAggregations(t *testing.T) {
	out := mustRun(t, `
FILTER = "layer == 'file' and op == 'read' and not failed"
c = count("comm")
s = sum("comm", unit="bytes")
lo = min("comm")
hi = max("comm")
a = avg("comm")
both = count("comm", "pid")
def on_event(e):
    c.add(e.comm)
    s.add(e.comm, e.bytes)
    lo.add(e.comm, e.latency)
    hi.add(e.comm, e.latency)
    a.add(e.comm, e.latency)
    both.add(e.comm, e.pid)
def on_end():
    print(c["postgres"], s["backup"], lo["postgres"], hi["postgres"], a["backup"])
    print(c.sum(), s.count(), hi.max(), lo.min(), len(c), "backup" in c, "nobody" in c)
    print(c.get("nobody"), c.get("nobody", default=-1), s.get("backup"))
    print(both["postgres", 100], both.items(), both.keys())
    print(c.items(sort="key"), c.items(limit=1))
    print(s.avg("backup"), s.min("backup"), s.max("backup"), s.sum("backup"))
    print(max(1, 5), min([3, 2]), max("a", "b") != None)
    c.clear()
    print(len(c), c)
`, Options{})
	want := `12 2097152 20000 13000000 16500000
14 14 25000000 20000 2 True False
None -1 2097152
12 [(("postgres", 100), 12), (("backup", 200), 2)] [("postgres", 100), ("backup", 200)]
[("backup", 2), ("postgres", 12)] [("postgres", 12)]
1048576 1048576 1048576 2097152
5 2 True
0 (no data)
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestAggregationErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"c = count('a')\ndef on_event(e):\n    c.add()\n", "count c.add takes 1 key(s) (a) and an optional value, got 0 argument(s)"},
		{"c = sum('a')\ndef on_event(e):\n    c.add(e.pid)\n", "sum c.add takes 1 key(s) (a) and a value, got 1"},
		{"c = sum('a')\ndef on_event(e):\n    c.add(e.pid, e.latency / 2)\n", "the value must be an int, not a float (use // for integer division)"},
		{"c = count('a')\ndef on_event(e):\n    c.add([1])\n", "a key cannot be a list"},
		{"c = count('a')\ndef on_event(e):\n    c.add(e.id)\n", "more than 5 keys"},
		{"c = count('a', 'b')\ndef on_event(e):\n    c[e.pid]\n", "index it with a tuple"},
	}
	for _, c := range cases {
		_, _, err := runScript(t, c.src, Options{MaxKeys: 5})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.want)
		}
	}
}

func TestPrintfAndEmit(t *testing.T) {
	out := mustRun(t, `
def on_end():
    printf("%5d|%-5s|%05.1f|%x|%q|%%|%s|%d\n", 42, "ab", 3.14159, 255, "q", [1], True)
    print(sprintf("%i %u %r", 1, 2, "x"))
    emit(a=1, b="t\"\n\x01", c=[1, 2.5, None], d={"k": (True, False)})
    emit({"z": 1, "a": 2})
    emit(1 << 70)
`, Options{})
	want := "   42|ab   |003.1|ff|\"q\"|%|[1]|1\n" +
		"1 2 \"x\"\n" +
		`{"a":1,"b":"t\"\n\u0001","c":[1,2.5,null],"d":{"k":[true,false]}}` + "\n" +
		`{"z":1,"a":2}` + "\n" +
		"1180591620717411303424\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	for _, c := range []struct{ src, want string }{
		{`printf("%d\n", "x")`, `printf: argument 2: %d needs an int, got string "x"`},
		{`printf("%d %d\n", 1)`, "the format has 2 verb(s) but 1 argument(s) follow it"},
		{`printf("%z", 1)`, "unknown verb %z"},
		{`emit(1, 2)`, "emit takes keyword arguments"},
		{`emit(x=lambda: 1)`, "cannot encode a function as JSON"},
	} {
		_, _, err := runScript(t, "def on_end():\n    "+c.src+"\n", Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.src, err, c.want)
		}
	}
}

func TestEmitEvent(t *testing.T) {
	out := mustRun(t, `
FILTER = "op == 'open' and failed"
def on_event(e):
    emit(e)
`, Options{})
	for _, want := range []string{`"op":"open"`, `"path":"/etc/missing.conf"`, `"errno":"ENOENT"`, `"flags":[]`, `"failed":true`, `"offset":-1`} {
		if !strings.Contains(out, want) {
			t.Errorf("emit(e) = %s, missing %s", out, want)
		}
	}
}

func TestHelpersAndTrace(t *testing.T) {
	out := mustRun(t, `
def on_begin():
    print(trace.os, trace.hostname, trace.cpus, trace.source, trace.layers)
def on_end():
    print(ms(10), us(2), s(1), ns(5), kib(4), mib(1), gib(1), ms(1.5))
    print(fmt_duration(1500000), fmt_bytes(512), fmt_bytes(1536), fmt_bytes(3 * 1024 * 1024 * 1024))
    print(trace.events, trace.matched, trace.end, now(), trace.lost, args)
`, Options{Args: map[string]string{"k": "v"}})
	want := "linux testhost 4 ebpf [\"file\", \"block\"]\n" +
		"10000000 2000 1000000000 5 4096 1048576 1073741824 1500000\n" +
		"1.5ms 512 B 1.5 KiB 3.0 GiB\n" +
		"50 50 12500000000 12500000000 0 {\"k\": \"v\"}\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestEveryByEventTime(t *testing.T) {
	out := mustRun(t, `
n = count()
def on_event(e):
    n.add()
def tick():
    print(now(), n)
    n.clear()
every("4s", tick)
every(s(6), lambda: print("six", now()))
`, Options{})
	// Ticks at 4, 6, 8 and 12 s (12.5 s is the end): 4 s and 8 s count
	// the events completed in [0, 4) and [4, 8).
	if !strings.HasPrefix(out, "4000000000 ") || !strings.Contains(out, "\nsix 6000000000\n8000000000 ") ||
		!strings.Contains(out, "\nsix 12000000000\n") || strings.Count(out, "\n") != 5 {
		t.Errorf("ticks:\n%s", out)
	}
	if _, _, err := runScript(t, "def on_event(e):\n    every('1s', print)\n", Options{}); err == nil ||
		!strings.Contains(err.Error(), "top level") {
		t.Errorf("every in a handler: %v", err)
	}
}

func TestEveryByWallClock(t *testing.T) {
	var out syncBuffer
	s, err := Load("t.star", []byte(`
n = count()
def on_event(e):
    n.add()
def tick():
    print("tick", n)
every("20ms", tick)
`), Options{Stdout: &out, WallClock: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(&event.Header{}); err != nil {
		t.Fatal(err)
	}
	e := event.New()
	for i := 0; i < 3; i++ {
		if err := s.Event(&e); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "tick 3\n") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.End(&event.Trailer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "tick 3\n") {
		t.Errorf("no wall-clock tick: %q", out.String())
	}
}

func TestHistogramNegativeValuesAreCounted(t *testing.T) {
	out := mustRun(t, `
h = hist_log2()
def on_end():
    h.add(-1)
    h.add(3)
    print(h)
`, Options{})
	if !strings.Contains(out, "2 -> 3 : 1") || !strings.Contains(out, "(1 values below 0 not drawn)") {
		t.Errorf("%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for the wall-clock goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A timer failing on the wall clock while no event arrives stops the run
// and the error is not lost.
func TestWallClockTimerErrorIsReported(t *testing.T) {
	stopped := make(chan struct{})
	s, err := Load("t.star", []byte("def tick():\n    fail('tick failed')\nevery('10ms', tick)\n"),
		Options{Stdout: &bytes.Buffer{}, WallClock: true, Stop: func() { close(stopped) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(&event.Header{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the failing timer did not stop the run")
	}
	if err := s.End(&event.Trailer{}); err != nil {
		t.Logf("End: %v", err)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "t.star:2:9: in tick: fail: tick failed") {
		t.Errorf("Err() = %v", err)
	}
}
