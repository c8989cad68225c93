package script

import (
	"bytes"
	"strings"
	"testing"
)

// A histogram indexed by key gives that key's histogram: its statistics
// as attributes, drawn by print().
func TestHistogramByKey(t *testing.T) {
	out := mustRun(t, `
FILTER = "op == 'read'"
lat = hist_log2("path", unit="usecs")
lin = hist_linear("comm", lo=0, hi=30000, step=1000)
def on_event(e):
    lat.add(e.path, e.latency // 1000)
    lin.add(e.comm, e.latency // 1000)
def on_end():
    h = lat["/data/base/16384"]
    print(type(h), h.count, h.sum, h.min, h.avg, h.max)
    print(h.p50, h.p90, h.p99, h.percentile(0), h.percentile(100), h.percentile(99.9))
    print(lat.get("/data/bad").count, lat.get("nope"), "/data/bad" in lat)
    print([(k, v.max) for k, v in lat.items(sort="key")])
    print(lin["postgres"].p50, lin["postgres"].p90, lin["backup"].p99)
    print(lat["/data/bad"])
`, Options{})
	// /data/base/16384: 6 reads of 20 us, 3, 5, 7, 9, 11, 13 ms, and
	// backup's 25 and 8 ms. p50 is the 7th value, 3000 us: the sketch
	// gives 2992, within 1/128.
	want := `histogram 14 81120 20 5794 25000
2992 12992 25000 20 25000 25000
1 None True
[("/data/bad", 1000), ("/data/base/16384", 25000)]
499 11499 25000
count 1, sum 1000, min 1000, avg 1000, p50 1000, p90 1000, p99 1000, max 1000 (usecs)
      usecs : count distribution
512 -> 1023 : 1     |****************************************|
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// A histogram value follows its key: values added later show in it.
func TestHistogramValueIsLive(t *testing.T) {
	out := mustRun(t, `
h = hist_log2("k")
def on_end():
    h.add("a", 5)
    v = h["a"]
    h.add("a", 7)
    print(v.count, v.max, bool(v))
    h.add("b", -1)
    print(h["b"].p50, h["b"].min)
`, Options{})
	if out != "2 7 True\nNone -1\n" {
		t.Errorf("got %q", out)
	}
}

// items() and print() sort by any statistic, largest first, and print
// in the order chosen.
func TestSortByStatistic(t *testing.T) {
	// By comm, reads and writes: app has the most values (16) and the
	// first key, backup the largest p99 (25 ms) and p50 (8 ms), postgres
	// in between (p50 20 us, app's 15 us).
	out := mustRun(t, `
FILTER = "layer == 'file' and op in ('read', 'write')"
lat = hist_log2("comm", unit="usecs")
b = sum("comm", unit="bytes")
def on_event(e):
    lat.add(e.comm, e.latency // 1000)
    b.add(e.comm, max(e.bytes, 0))
def on_end():
    print([k for k, _ in lat.items(sort="count")])
    print([k for k, _ in lat.items(sort="p99")])
    print([k for k, _ in lat.items(sort="p50", limit=2)])
    print([k for k, _ in lat.items(sort="key")])
    print(b.items(sort="max"), b.items(sort="count", limit=1))
    b.print(sort="count")
    lat.print(sort="p99", limit=2)
`, Options{})
	want := `["app", "postgres", "backup"]
["backup", "postgres", "app"]
["backup", "postgres"]
["app", "backup", "postgres"]
[("backup", 2097152), ("postgres", 98304), ("app", 29696)] [("app", 29696)]
COMM        BYTES  COUNT
app         29696     16
postgres    98304     12
backup    2097152      3
comm = backup
count 3, sum 34000, min 1000, avg 11333, p50 8032, p90 25000, p99 25000, max 25000 (usecs)
         usecs : count distribution
  512 -> 1023  : 1     |****************************************|
 1024 -> 2047  : 0     |                                        |
 2048 -> 4095  : 0     |                                        |
 4096 -> 8191  : 1     |****************************************|
 8192 -> 16383 : 0     |                                        |
16384 -> 32767 : 1     |****************************************|

comm = postgres
`
	if !strings.HasPrefix(out, want) {
		t.Errorf("got\n%s\nwant it to start with\n%s", out, want)
	}
	if n := strings.Count(out, "comm = "); n != 2 {
		t.Errorf("print(limit=2) printed %d histograms", n)
	}
	// sort="value" is a histogram's count: picked and printed by it.
	out = mustRun(t, `
FILTER = "layer == 'file' and op in ('read', 'write')"
lat = hist_log2("comm")
def on_event(e):
    lat.add(e.comm, e.latency // 1000)
def on_end():
    lat.print(sort="value", limit=2)
`, Options{})
	if i, j := strings.Index(out, "comm = app\n"), strings.Index(out, "comm = postgres\n"); i != 0 || j < 0 || strings.Contains(out, "backup") {
		t.Errorf("sort=\"value\", limit=2: want app then postgres:\n%s", out)
	}
}

func TestSortErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"c = count('a')\ndef on_end():\n    c.items(sort='p99')\n", `count c.items: sort="p99" needs a histogram (hist_log2, hist_linear): count c keeps count, sum, min, max and avg`},
		{"c = hist_log2('a')\ndef on_end():\n    c.print(sort='p101')\n", `hist_log2 c.print: sort is one of key, value, count, sum, min, max, avg, p50, p90, p99, p999, or a percentile like "p99.9" (histograms), not "p101"`},
		{"c = sum('a')\ndef on_end():\n    c.items(sort='mx')\n", `not "mx" (did you mean "max"?)`},
		{"c = hist_log2('a')\ndef on_end():\n    c.add(1, 1)\n    c[1].percentile(101)\n", "percentile: p is a number from 0 to 100"},
	}
	for _, c := range cases {
		_, _, err := runScript(t, c.src, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.want)
		}
	}
}

// Comparing an enum field with a name it never holds is a load error at
// the literal, when the literal is in the comparison.
func TestEnumNamesCheckedAtLoad(t *testing.T) {
	cases := []struct{ code, want string }{
		{`e.op == "raed"`, `t.star:2:17: op "raed" is not one of: unknown, open, read`},
		{`e.op == "raed"`, `(did you mean "read"?)`},
		{`"raed" == e.op`, `t.star:2:9: op "raed" is not one of`},
		{`e.op != "raed"`, `t.star:2:17: op "raed"`},
		{`e.op in ("read", "raed")`, `t.star:2:26: op "raed"`},
		{`e.op not in ["raed"]`, `t.star:2:22: op "raed"`},
		{`e.op in {"read": 1, "raed": 2}`, `t.star:2:29: op "raed"`},
		{`(e.layer) == ("blokc")`, `t.star:2:23: layer "blokc" is not one of: unknown, file, block, marker (did you mean "block"?)`},
		{`e.status == "not_found"`, `status "not_found" is not one of`},
		{`trace.source == "ebfp"`, `source "ebfp" is not one of`},
		{`"synk" in e.flags`, `t.star:2:9: unknown flag "synk" (did you mean "sync"?)`},
		{`e.op == "fsync"`, `t.star:2:17: op is never "fsync": it holds "flush" (a filter takes "fsync" for "flush"; code compares the names)`},
		{`[x for x in (1,) if e.layer == "disk"]`, `layer is never "disk": it holds "block"`},
	}
	for _, c := range cases {
		src := "def on_event(e):\n    x = " + c.code + "\n"
		_, err := Load("t.star", []byte(src), Options{Stdout: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.code, err, c.want)
		}
	}
	// What is not a misspelt name literally in a comparison loads.
	for _, code := range []string{
		`e.op == "read" or e.op in ("write", "flush") or e.op != "op(200)"`,
		`"sync" in e.flags and e.layer == "block" and e.status == "not-found" and e.source == "ebpf"`,
		`e.path == "raed" or e.comm in ("raed",) or e.op in "read write"`,
		`e.op == ("raed" if False else "read")`,
		`e.op in OPS`,
	} {
		src := "OPS = ('raed',)\ndef on_event(e):\n    x = " + code + "\n"
		if _, err := Load("t.star", []byte(src), Options{Stdout: &bytes.Buffer{}}); err != nil {
			t.Errorf("%s: %v", code, err)
		}
	}
	// Every bad name is reported, each at its place.
	_, err := Load("t.star", []byte("def on_event(e):\n    x = e.op == 'raed'\n    y = e.layer == 'fil'\n"), Options{Stdout: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "t.star:2:17: op \"raed\"") || !strings.Contains(err.Error(), "\nt.star:3:20: layer \"fil\"") {
		t.Errorf("two errors: %v", err)
	}
}

// Only a script that names percentiles has its hist_log2 keep sketches
// for them; one that asks through a computed name is told why it has
// none, never given a wrong figure.
func TestPercentilesKeptWhenNamed(t *testing.T) {
	for src, want := range map[string]bool{
		"h = hist_log2('k')\ndef on_end():\n    print(h)\n":                           false,
		"h = hist_log2('k')\ndef on_end():\n    print(h['a'].p99)\n":                  true,
		"h = hist_log2('k')\ndef on_end():\n    print(h['a'].percentile(50))\n":       true,
		"h = hist_log2('k')\ndef on_end():\n    h.print(sort='p99.9')\n":              true,
		"h = hist_log2('k')\nS = 'count'\ndef on_end():\n    h.print(sort=S)\n":       true,
		"h = hist_log2('k')\nO = {}\ndef on_end():\n    h.print(**O)\n":               true,
		"h = hist_log2('k')\ndef on_end():\n    h.print(sort='max', limit=3)\n":       false,
		"h = hist_log2('k')\ndef on_end():\n    print(getattr(h['a'], 'p' + '50'))\n": false,
	} {
		s, err := Load("t.star", []byte(src), Options{Stdout: &bytes.Buffer{}})
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if s.aggs[0].sketches != want {
			t.Errorf("%q: sketches %v, want %v", src, s.aggs[0].sketches, want)
		}
		s.Close()
	}
	out, _, err := runScript(t, `
h = hist_log2("k", unit="us")
def on_end():
    h.add("a", 3)
    print(h["a"])
    h.print(sort="max")
    getattr(h["a"], "p" + "50")
`, Options{})
	want := "count 1, sum 3, min 3, avg 3, max 3 (us)\n"
	if !strings.HasPrefix(out, want) || strings.Count(out, want) != 2 {
		t.Errorf("got\n%s\nwant the statistics' line without percentiles twice: %s", out, want)
	}
	if err == nil || !strings.Contains(err.Error(), "hist_log2 h keeps no percentiles: they are kept when the script names one") {
		t.Errorf("computed percentile name: %v", err)
	}
}
