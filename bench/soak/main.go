// Command soak checks what bench/soak.sh recorded and sampled, and prints
// the figures as a Markdown table. Its arguments are the recorders
// (rotate:D, ring:SIZE, plain, serve:TOP); -dir holds, for each,
// NAME.stderr (what it printed), NAME.csv (elapsed seconds, resident kB,
// CPU ticks, every 5 s) and its recording (the directory NAME/ of a
// rotated series, or NAME.iot; serve has none).
//
// It checks that every file is whole (trailer read, no damage); that the
// events of the files add up to the "recorded N events" record printed
// (for a flight recorder: kept + overwritten); that the kernel's losses in
// the last file's trailer are the "M events lost" printed; that resident
// memory is flat after the warm-up (a slope under 1 MiB per minute); and
// that a flight recorder's resident memory stays within its SIZE plus
// -ring-slack MiB (docs/architecture.md, "Flight recorder": what plain
// `record` holds besides the window) and, when a plain or rotating
// recorder ran beside it, within that one's maximum plus SIZE plus
// -ring-over MiB (what the ring holds besides its window). It prints each
// one's CPU time per event too: the recorders ran side by side, under the
// same load.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/internal/bytesize"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/ring"
	"github.com/iotrace/iotrace/tracefile"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times.
const clockTicks = 100

func main() {
	dir := flag.String("dir", ".", "the soak run's output directory")
	minutes := flag.Int("minutes", 0, "the run's length in minutes")
	warmup := flag.Float64("warmup", 0, "minutes of warm-up before memory must be flat (0: a third of the run, at most 5)")
	slack := flag.Int("ring-slack", 128, "MiB a flight recorder's resident memory may exceed its SIZE by")
	over := flag.Int("ring-over", 16, "MiB a flight recorder's resident memory may exceed SIZE plus a plain or rotating recorder's beside it by")
	flag.Parse()
	if *warmup <= 0 {
		*warmup = min(5, float64(*minutes)/3)
	}
	ok := true
	fmt.Println("| recorder | events recorded | lost (kernel) | files | RSS at 1 min | RSS max | RSS slope after warm-up | CPU (of one core) | CPU per event | checks |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	results := make([]*result, len(flag.Args()))
	var base *result // a recorder without a ring, beside the rings
	for i, name := range flag.Args() {
		results[i] = check(*dir, name, *warmup, *slack)
		if k := strings.SplitN(name, ":", 2)[0]; base == nil && (k == "plain" || k == "rotate") {
			base = results[i]
		}
	}
	for i, name := range flag.Args() {
		r := results[i]
		if kind, arg, _ := strings.Cut(name, ":"); kind == "ring" && base != nil {
			if size, err := bytesize.Parse(arg); err == nil && r.rssMax > base.rssMax+float64(size>>10+*over<<10) {
				r.fail("resident memory %.0f MiB exceeds SIZE + %d MiB above the recorder without a ring (%.0f MiB)", r.rssMax/1024, *over, base.rssMax/1024)
			}
		}
		status := "ok"
		if len(r.problems) > 0 {
			ok = false
			status = strings.Join(r.problems, "; ")
		}
		perEvent := 0.0
		if r.recorded > 0 {
			perEvent = r.cpuSeconds / float64(r.recorded) * 1e9
		}
		fmt.Printf("| `%s` | %d | %d | %d | %.0f MiB | %.0f MiB | %+.2f MiB/min | %.0f %% | %.0f ns | %s |\n",
			name, r.recorded, r.lost, r.files, r.rss1/1024, r.rssMax/1024, r.slope/1024, r.cpu, perEvent, status)
	}
	if !ok {
		os.Exit(1)
	}
}

// result is one recorder's figures and what failed.
type result struct {
	recorded, lost uint64
	files          int
	rss1, rssMax   float64 // kB
	slope          float64 // kB per minute after the warm-up
	cpu            float64 // percent of one core
	cpuSeconds     float64 // between the first and the last sample
	problems       []string
}

func (r *result) fail(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

var summaryLine = regexp.MustCompile(`(?:recorded|traced) (\d+) events, (\d+) events lost`)

func check(dir, name string, warmup float64, slack int) *result {
	r := &result{}
	stderr, err := os.ReadFile(filepath.Join(dir, name+".stderr"))
	if err != nil {
		r.fail("%v", err)
		return r
	}
	m := summaryLine.FindAllStringSubmatch(string(stderr), -1)
	if m == nil {
		r.fail("no summary line in %s.stderr", name)
	} else {
		last := m[len(m)-1]
		r.recorded, _ = strconv.ParseUint(last[1], 10, 64)
		r.lost, _ = strconv.ParseUint(last[2], 10, 64)
	}
	kind, arg, _ := strings.Cut(name, ":")
	if kind == "serve" {
		checkMemory(r, filepath.Join(dir, name+".csv"), warmup)
		return r
	}
	var paths []string
	if kind == "rotate" {
		paths, _ = filepath.Glob(filepath.Join(dir, name, "*.iot"))
		sort.Strings(paths) // named by their UTC start time
	} else {
		paths = []string{filepath.Join(dir, name+".iot")}
	}
	r.files = len(paths)
	var events uint64
	var last *event.Trailer
	for _, p := range paths {
		n, tr, err := read(p)
		if err != nil {
			r.fail("%s: %v", filepath.Base(p), err)
			continue
		}
		events += n
		last = tr
	}
	switch {
	case last == nil:
		r.fail("no file read")
	case kind == "ring":
		kept := last.Stats.Get(event.CountInfo, ring.KeptCounter)
		over := last.Stats.Get(event.CountLost, ring.OverwrittenCounter)
		if kept != events || kept+over != r.recorded {
			r.fail("kept %d (file has %d) + overwritten %d != %d recorded", kept, events, over, r.recorded)
		}
		if lost := last.Stats.Total(event.CountLost) - over; lost != r.lost {
			r.fail("the file counts %d lost, record printed %d", lost, r.lost)
		}
	default:
		if events != r.recorded {
			r.fail("the files hold %d events, record printed %d", events, r.recorded)
		}
		if lost := last.Stats.Total(event.CountLost); lost != r.lost {
			r.fail("the last file counts %d lost, record printed %d", lost, r.lost)
		}
	}
	checkMemory(r, filepath.Join(dir, name+".csv"), warmup)
	if kind == "ring" {
		size, err := bytesize.Parse(arg)
		if err != nil {
			r.fail("%v", err)
		} else if limit := float64(size>>10 + slack<<10); r.rssMax > limit {
			r.fail("resident memory %.0f MiB exceeds SIZE + %d MiB", r.rssMax/1024, slack)
		}
	}
	return r
}

// checkMemory reads the samples and checks that resident memory is flat
// after the warm-up.
func checkMemory(r *result, path string, warmup float64) {
	samples(r, path, warmup)
	if r.slope > 1024 {
		r.fail("resident memory grows %.2f MiB/min after the warm-up", r.slope/1024)
	}
}

// read counts a file's events and returns its trailer; damage or a
// missing trailer is an error.
func read(path string) (uint64, *event.Trailer, error) {
	rd, err := tracefile.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer rd.Close()
	var c counter
	if err := rd.Run(context.Background(), &c); err != nil {
		return c.events, nil, err
	}
	if c.trailer == nil {
		return c.events, nil, fmt.Errorf("no trailer")
	}
	return c.events, c.trailer, nil
}

type counter struct {
	events  uint64
	trailer *event.Trailer
}

func (c *counter) Begin(*event.Header) error { return nil }
func (c *counter) Event(*event.Event) error  { c.events++; return nil }
func (c *counter) Fact(*event.Fact) error    { return nil }
func (c *counter) End(t *event.Trailer) error {
	tc := *t
	c.trailer = &tc
	return nil
}

// samples reads the recorder's samples: resident memory at one minute and
// at most, its slope (least squares) after the warm-up, and the CPU time
// over the run.
func samples(r *result, path string, warmup float64) {
	f, err := os.Open(path)
	if err != nil {
		r.fail("%v", err)
		return
	}
	defer f.Close()
	var ts, rss, cpu []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v := strings.Split(sc.Text(), ",")
		if len(v) != 3 {
			continue
		}
		t, err1 := strconv.ParseFloat(v[0], 64)
		m, err2 := strconv.ParseFloat(v[1], 64)
		c, err3 := strconv.ParseFloat(v[2], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue // the header
		}
		ts, rss, cpu = append(ts, t), append(rss, m), append(cpu, c)
	}
	if len(ts) < 2 {
		r.fail("fewer than 2 samples")
		return
	}
	for i := range ts {
		if r.rss1 == 0 && ts[i] >= 60 {
			r.rss1 = rss[i]
		}
		r.rssMax = max(r.rssMax, rss[i])
	}
	n := len(ts) - 1
	r.cpuSeconds = (cpu[n] - cpu[0]) / clockTicks
	r.cpu = r.cpuSeconds / (ts[n] - ts[0]) * 100
	var sx, sy, sxx, sxy, k float64
	for i := range ts {
		if ts[i] < warmup*60 {
			continue
		}
		x := ts[i] / 60
		sx, sy, sxx, sxy, k = sx+x, sy+rss[i], sxx+x*x, sxy+x*rss[i], k+1
	}
	if k >= 3 {
		r.slope = (k*sxy - sx*sy) / (k*sxx - sx*sx)
	}
}
