package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/metrics"
	"github.com/iotrace/iotrace/report"
)

// promWorkloadEnv makes the test binary the Prometheus test's workload:
// "FILE:N" writes N blocks of promBlock bytes to FILE with O_DIRECT (so
// that the bios are its own), fsyncs, and reads them back with O_DIRECT.
const promWorkloadEnv = "IOTRACE_TEST_PROM_WORKLOAD"

const promBlock = 64 << 10

// promScrape is the test Prometheus's scrape interval.
const promScrape = 250 * time.Millisecond

func init() { testChildren[promWorkloadEnv] = promWorkload }

func promWorkload(v string) int {
	path, n, _ := strings.Cut(v, ":")
	count, _ := strconv.Atoi(n)
	// O_DIRECT wants an aligned buffer: from mmap.
	buf, err := syscall.Mmap(-1, 0, promBlock, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_DIRECT, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	for i := 0; i < count; i++ {
		buf[0] = byte(i)
		if _, err := f.Write(buf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := f.Sync(); err != nil {
		return 1
	}
	for i := 0; i < count; i++ {
		if _, err := f.ReadAt(buf, int64(i)*promBlock); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// prometheus is a Prometheus server the test started.
type prometheus struct {
	base string
	cmd  *exec.Cmd
}

// startPrometheus runs Debian's prometheus on 127.0.0.1 with a temporary
// configuration and data directory, scraping target every promScrape;
// native asks for native histograms (scraped as protobuf), else the
// classic buckets (scraped as OpenMetrics text).
func startPrometheus(t *testing.T, bin, dir, target string, native bool) *prometheus {
	t.Helper()
	name := "classic"
	if native {
		name = "native"
	}
	dir = filepath.Join(dir, "prometheus-"+name)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n  - job_name: iotrace\n    static_configs:\n      - targets: ['%s']\n", promScrape, promScrape, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for it
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--log.level=warn"}
	if native {
		args = append(args, "--enable-feature=native-histograms")
	}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{base: "http://" + addr, cmd: cmd}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Logf("prometheus (%s) log:\n%s", name, b)
		}
	})
	return p
}

// promSample is one series of an instant query's result.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant PromQL query at time at (zero: now).
func (p *prometheus) query(t *testing.T, q string, at time.Time) ([]promSample, error) {
	t.Helper()
	v := url.Values{"query": {q}}
	if !at.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64))
	}
	resp, err := http.Get(p.base + "/api/v1/query?" + v.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s", q, r.Error)
	}
	return r.Data.Result, nil
}

// values runs q and returns its values by the labels named (joined by
// "/").
func (p *prometheus) values(t *testing.T, q string, at time.Time, labels ...string) map[string]float64 {
	t.Helper()
	res, err := p.query(t, q, at)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, s := range res {
		var key []string
		for _, l := range labels {
			key = append(key, s.Metric[l])
		}
		v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		out[strings.Join(key, "/")] = v
	}
	return out
}

// waitFor polls q until every result's value satisfies ok (and there is
// one), for at most d.
func (p *prometheus) waitFor(t *testing.T, q string, d time.Duration, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		res, err := p.query(t, q, time.Time{})
		good := err == nil && len(res) > 0
		for _, s := range res {
			v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
			good = good && ok(v)
		}
		if good {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus %s: %s not as expected after %v: %v %v", p.base, q, d, res, err)
		}
		time.Sleep(promScrape)
	}
}

// startServe runs iotrace serve as a child process and returns the
// address it serves on.
func startServe(t *testing.T, args ...string) (addr string, stop func() string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	var all strings.Builder
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(done)
	}()
	re := regexp.MustCompile(`serving metrics on http://([0-9.:]+)/metrics`)
	timeout := time.After(60 * time.Second)
	for addr == "" {
		select {
		case l := <-lines:
			if m := re.FindStringSubmatch(l); m != nil {
				addr = m[1]
			}
		case <-done:
			cmd.Wait()
			t.Fatalf("serve exited: %s", all.String())
		case <-timeout:
			cmd.Process.Kill()
			t.Fatal("serve did not start in 60 s")
		}
	}
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			<-done
			if err := cmd.Wait(); err != nil {
				t.Errorf("serve: %v\n%s", err, all.String())
			}
		}
		return all.String()
	}
	t.Cleanup(func() { stop() })
	return addr, stop
}

// runWorkload runs the workload as a process named promwl (a link to the
// test binary) and returns its pid.
func runWorkload(t *testing.T, link, file string, n int) int {
	t.Helper()
	cmd := exec.Command(link)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", promWorkloadEnv, file, n))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("workload: %v\n%s", err, out)
	}
	return cmd.Process.Pid
}

// TestPrometheus is iotrace serve scraped by a real Prometheus (Debian's,
// installed by scripts/setup) every promScrape: after a known workload
// (256 O_DIRECT writes and reads of 64 KiB by a process of its own,
// promwl), PromQL through Prometheus's HTTP API agrees with iotrace report
// over serve's own recording (-o) of the same period (the workload's
// process, --pid). The tolerances (docs/fleet.md):
//
//   - the counters at the end less those at the start: exactly, for
//     every layer and op of the report;
//   - increase() over the period, for operations and bytes written:
//     between the report's figure and that figure times W/(W−3s), W the
//     window, s the scrape interval. Every event falls inside the window
//     (a second of quiet before, three after), so the samples' difference
//     is exact; increase() then extrapolates it to the window's edges,
//     over at most about an interval at each (s is 6 % of W here);
//   - histogram_quantile(0.99) over the counters' difference (no
//     extrapolation): exactly what the same buckets give over the
//     recording's latencies (the classic buckets and biolatency.star's
//     exported hist_log2);
//   - histogram_quantile(0.99) over increase(): native histograms (9 %
//     wide buckets) within 10 % of the report's p99; the classic
//     buckets' figure is shown only (each bucket's series is
//     extrapolated on its own, which can move the rank several buckets
//     either way; the buckets are checked exactly above);
//   - a script's exported metric (biolatency.star's count and sum) as
//     the built-in ones.
//
// One exception to "exactly": a block completion the kernel ran no BPF
// program for (docs/block.md) is taken from the kernel's trace buffer
// when its bio's memory is queued again, or at stop, so its event may
// come after the window (CI saw 15 of 257 writes do so). The workload's
// events flagged ftrace-completion are those that may: each count may
// lack them (late), and the quantiles over the counters' difference are
// compared exactly only when there are none.
//
// The series are created by a first, smaller run of the workload before
// the period: Prometheus's increase() cannot count what a series held at
// its first scrape. A series made during the period (an op the warm-up
// did not do) is checked by the exact difference only.
func TestPrometheus(t *testing.T) {
	testenv.RequirePrivileged(t, "serves eBPF metrics to Prometheus")
	bin := testenv.Tool(t, "prometheus")
	dir := t.TempDir() // on the root file system: O_DIRECT works there
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "promwl")
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "serve.iot")
	bio := filepath.Join(testenv.RepoRoot(t), "examples", "scripts", "biolatency.star")
	addr, stop := startServe(t, "--comm", "promwl", "-o", rec, "--script", bio, "--script-output", filepath.Join(dir, "bio.txt"))
	classic := startPrometheus(t, bin, dir, addr, false)
	native := startPrometheus(t, bin, dir, addr, true)
	for _, p := range []*prometheus{classic, native} {
		p.waitFor(t, `iotrace_tracing{job="iotrace"}`, 60*time.Second, func(v float64) bool { return v == 1 })
	}

	checkServed(t, addr)

	// The warm-up makes every series the workload will use.
	data := filepath.Join(dir, "data")
	runWorkload(t, link, data, 2)
	for _, p := range []*prometheus{classic, native} {
		p.waitFor(t, `sum(iotrace_operations_total{comm="promwl",op="bread"})`, 30*time.Second, func(v float64) bool { return v >= 2 })
	}
	classic.waitFor(t, `sum(iotrace_script_lat_usecs_count)`, 30*time.Second, func(v float64) bool { return v >= 4 })
	// The backend's counters while it runs (backend.Options.Progress;
	// with --comm, the rundown may well have found none of its processes).
	classic.waitFor(t, `iotrace_trace_info{name="processes in the rundown"}`, 10*time.Second, func(v float64) bool { return v >= 0 })
	time.Sleep(4 * promScrape) // every event of the warm-up scraped
	t0 := time.Now()
	time.Sleep(time.Second)
	const n = 256
	pid := runWorkload(t, link, data, n)
	time.Sleep(3 * time.Second)
	w := promWindow{t0: t0, t1: time.Now()}

	stop() // serve's recording is complete
	out, errs, code := runCLI(t, "report", "--format", "json", "--pid", strconv.Itoa(pid), rec)
	if code != 0 {
		t.Fatalf("report: %s", errs)
	}
	var rep report.Result
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	ops := map[string]report.OpSummary{}
	for _, o := range rep.Ops {
		ops[o.Layer+"/"+o.Op] = o
	}
	if ops["file/write"].Count < n || ops["block/bread"].Count < n {
		t.Fatalf("the report has %d writes and %d block reads of the workload, want %d: %+v", ops["file/write"].Count, ops["block/bread"].Count, n, rep.Ops)
	}
	var evs []event.Event
	for _, e := range readIOT(t, rec).Events {
		if e.Pid == uint32(pid) {
			evs = append(evs, e)
		}
	}
	late := lateEvents(evs)
	checkPromCounters(t, classic, w, ops, late)
	checkPromQuantiles(t, classic, native, w, ops["block/bread"], evs, late["block/bread"])
	checkPromScript(t, classic, w, ops, evs, late)
}

// checkServed checks what the running serve answers: /healthz says it
// traces, /metrics serves, and nothing else does (no pprof, no expvar,
// no index).
func checkServed(t *testing.T, addr string) {
	t.Helper()
	want := map[string]int{"/healthz": 200, "/metrics": 200, "/": 404, "/debug/pprof/": 404, "/debug/pprof/heap": 404, "/debug/vars": 404}
	for path, code := range want {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, code)
		}
	}
}

// promWindow is the period the test compares: [t0, t1].
type promWindow struct{ t0, t1 time.Time }

// rng is the window as a PromQL range.
func (w promWindow) rng() string { return fmt.Sprintf("[%dms]", w.t1.Sub(w.t0).Milliseconds()) }

// offset is the window's length as a PromQL offset.
func (w promWindow) offset() string { return fmt.Sprintf("offset %dms", w.t1.Sub(w.t0).Milliseconds()) }

// lateEvents counts, by "layer/op", the events that may come after the
// window: block events whose completion no program saw (flagged
// ftrace-completion), and all of them under "block".
func lateEvents(evs []event.Event) map[string]int {
	late := map[string]int{}
	for _, e := range evs {
		if e.Layer == event.LayerBlock && e.Flags&event.FlagFtraceCompletion != 0 {
			late["block/"+e.Op.String()]++
			late["block"]++
		}
	}
	return late
}

// checkCount checks a count over w against the recording's: exactly, but
// for up to late events that may have come after the window.
func checkCount(t *testing.T, what string, got float64, want, late int) {
	t.Helper()
	if got > float64(want) || got < float64(want-late) {
		t.Errorf("%s: %v in Prometheus between the start and the end, the recording %d (%d of them may come late)", what, got, want, late)
	} else if got != float64(want) {
		t.Logf("%s: %v in Prometheus, the recording %d: %d came after the window (completions no program saw)", what, got, want, want-int(got))
	}
}

// checkIncrease checks an increase() over w against the exact count: at
// least it (up to rounding; less up to late events that may have come
// after the window), at most it extrapolated over 3 scrape intervals.
func (w promWindow) checkIncrease(t *testing.T, what string, got, want float64, late int) {
	t.Helper()
	win := w.t1.Sub(w.t0).Seconds()
	hi := want * win / (win - 3*promScrape.Seconds())
	lo := (want - float64(late)) * (1 - 1e-9)
	if math.IsNaN(got) || got < lo || got > hi {
		t.Errorf("%s: Prometheus %v, report %v (want %v to %.6g)", what, got, want, lo, hi)
		return
	}
	t.Logf("%s: Prometheus %.6g, report %.6g (×%.3f)", what, got, want, got/want)
}

// checkPromCounters compares the operations and bytes by layer and op:
// exact differences, and increase().
func checkPromCounters(t *testing.T, p *prometheus, w promWindow, ops map[string]report.OpSummary, late map[string]int) {
	q := `sum by (layer, op) (iotrace_operations_total{comm="promwl",layer=~"file|block"})`
	end, start := p.values(t, q, w.t1, "layer", "op"), p.values(t, q, w.t0, "layer", "op")
	for k, o := range ops {
		checkCount(t, k+" operations", end[k]-start[k], int(o.Count), late[k])
	}
	inc := p.values(t, `sum by (layer, op) (increase(iotrace_operations_total{comm="promwl",layer=~"file|block"}`+w.rng()+`))`, w.t1, "layer", "op")
	for k, o := range ops {
		if _, old := start[k]; old {
			w.checkIncrease(t, "increase(operations) "+k, inc[k], float64(o.Count), late[k])
		}
	}
	wb := p.values(t, `sum by (comm) (increase(iotrace_bytes_total{op="write",layer="file"}`+w.rng()+`))`, w.t1, "comm")
	w.checkIncrease(t, "increase(bytes written by promwl)", wb["promwl"], float64(ops["file/write"].Bytes), 0)
}

// checkPromQuantiles compares the p99 block read latency per device with
// the recording's and the report's.
func checkPromQuantiles(t *testing.T, classic, native *prometheus, w promWindow, bread report.OpSummary, evs []event.Event, late int) {
	sel := `{comm="promwl",layer="block",op="bread"}`
	var lat []float64
	for _, e := range evs {
		if e.Layer == event.LayerBlock && e.Op == event.OpBlockRead && e.Flags&(event.FlagNoCompletion|event.FlagNoStart) == 0 {
			lat = append(lat, float64(e.Duration)/1e9)
		}
	}
	exact := classic.values(t, `histogram_quantile(0.99, sum by (device, le) (iotrace_latency_seconds_bucket`+sel+` - iotrace_latency_seconds_bucket`+sel+` `+w.offset()+`))`, w.t1, "device")
	pc := classic.values(t, `histogram_quantile(0.99, sum by (device, le) (increase(iotrace_latency_seconds_bucket`+sel+w.rng()+`)))`, w.t1, "device")
	pn := native.values(t, `histogram_quantile(0.99, sum by (device) (increase(iotrace_latency_seconds`+sel+w.rng()+`)))`, w.t1, "device")
	if len(exact) != 1 || len(pc) != 1 || len(pn) != 1 {
		t.Fatalf("p99 per device: exact %v, classic %v, native %v; want one device", exact, pc, pn)
	}
	want := float64(bread.Latency.P99) / 1e9
	for dev, v := range pc {
		if x, r := exact[dev], bucketQuantile(0.99, metrics.LatencyBuckets, lat); late == 0 && math.Abs(x-r) > 1e-9*r {
			t.Errorf("p99 of %s over the counters' difference: Prometheus %v, the recording in the same buckets %v", dev, x, r)
		}
		// increase() extrapolates each bucket's series on its own (the
		// zero point of a series that held little before the window cuts
		// its extrapolation short: factors from 1.037 to 1.123 in one
		// run), so its rank can land several buckets from the report's
		// p99, either way: the buckets are checked exactly above (over
		// the counters' difference); this one is shown, not checked.
		lo, hi := bucketOf(metrics.LatencyBuckets, want)
		t.Logf("p99 block read latency of %s: report %.1f µs (bucket %g-%g µs), classic over increase() %.1f µs, native %.1f µs", dev, want*1e6, lo*1e6, hi*1e6, v*1e6, pn[dev]*1e6)
		if math.IsNaN(pn[dev]) || math.Abs(pn[dev]-want) > 0.10*want {
			t.Errorf("native p99 %.1f µs, report %.1f µs: more than 10 %% apart", pn[dev]*1e6, want*1e6)
		}
	}
}

// checkPromScript compares biolatency.star's exported aggregations with
// the recording's block I/O: its histogram (every block I/O with a
// completion, in µs) counts them and has their p99, its sum the block
// reads' latency.
func checkPromScript(t *testing.T, p *prometheus, w promWindow, ops map[string]report.OpSummary, evs []event.Event, late map[string]int) {
	var usecs []float64
	for _, e := range evs {
		if e.Layer == event.LayerBlock && e.Flags&event.FlagNoCompletion == 0 {
			usecs = append(usecs, float64(e.Duration/1000))
		}
	}
	end := p.values(t, `sum(iotrace_script_lat_usecs_count)`, w.t1)
	start := p.values(t, `sum(iotrace_script_lat_usecs_count)`, w.t0)
	checkCount(t, "iotrace_script_lat_usecs_count", end[""]-start[""], len(usecs), late["block"])
	sc := p.values(t, `sum(increase(iotrace_script_lat_usecs_count`+w.rng()+`))`, w.t1)
	w.checkIncrease(t, "increase(iotrace_script_lat_usecs_count)", sc[""], float64(len(usecs)), late["block"])
	if late["block"] == 0 {
		// A late event's time is missing from the window's sum, by an
		// amount the count does not bound.
		st := p.values(t, `sum by (op) (increase(iotrace_script_total_ns_total{op="bread"}`+w.rng()+`))`, w.t1, "op")
		w.checkIncrease(t, "increase(iotrace_script_total_ns_total{op=bread})", st["bread"], float64(ops["block/bread"].Time), 0)
	}
	exact := p.values(t, `histogram_quantile(0.99, sum by (le) (iotrace_script_lat_usecs_bucket - iotrace_script_lat_usecs_bucket `+w.offset()+`))`, w.t1)
	if x, r := exact[""], bucketQuantile(0.99, metrics.Log2Buckets(), usecs); late["block"] == 0 && (math.IsNaN(x) || math.Abs(x-r) > 1e-9*r) {
		t.Errorf("biolatency p99 over the counters' difference: Prometheus %v µs, the recording in the same buckets %v µs", x, r)
	} else {
		t.Logf("biolatency p99: %.1f µs", x)
	}
}

// bucketQuantile is PromQL's histogram_quantile over the values vs in the
// classic buckets bounds (+Inf implied): the bucket where the rank falls,
// interpolated linearly.
func bucketQuantile(q float64, bounds, vs []float64) float64 {
	cum := make([]float64, len(bounds)+1)
	for _, v := range vs {
		for i := range cum {
			if i == len(bounds) || v <= bounds[i] {
				cum[i]++
			}
		}
	}
	total := cum[len(bounds)]
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	b := sort.Search(len(bounds), func(i int) bool { return cum[i] >= rank })
	if b == len(bounds) {
		return bounds[len(bounds)-1]
	}
	if b == 0 && bounds[0] <= 0 {
		return bounds[0]
	}
	start, count := 0.0, cum[b]
	if b > 0 {
		start, count, rank = bounds[b-1], cum[b]-cum[b-1], rank-cum[b-1]
	}
	return start + (bounds[b]-start)*(rank/count)
}

// bucketOf returns the classic bucket (lower, upper] of bounds holding v.
func bucketOf(bounds []float64, v float64) (lo, hi float64) {
	for _, b := range bounds {
		if v <= b {
			return lo, b
		}
		lo = b
	}
	return lo, math.Inf(1)
}
