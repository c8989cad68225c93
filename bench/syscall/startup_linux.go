package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iotrace/iotrace/event"
)

// tool is one tracer started around a command, for the whole-process
// start-up comparison.
type tool struct {
	name string
	// argv runs cmd under the tool.
	argv func(cmd []string) []string
	// wall and toExec are ms per run: the whole process, and from its
	// start until the command's exec (the command prints the time); NaN
	// for a run that failed, so that round r is index r of every tool.
	wall, toExec []float64
}

// pairRatio is the median over rounds of a[r] / b[r] (rounds where both
// ran): each tool against the other in the same round, seconds apart, so
// that the machine's drift across rounds cancels.
func pairRatio(a, b []float64) float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if !math.IsNaN(a[i]) && !math.IsNaN(b[i]) && b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return median(r)
}

// medianRun is the median of the runs that did not fail.
func medianRun(v []float64) float64 {
	var ok []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			ok = append(ok, x)
		}
	}
	return median(ok)
}

var epochNsRe = regexp.MustCompile(`(?m)^(\d{19})$`)

// runStartupTools times iotrace (record with and without the block layer,
// and trace, which prints as it goes), perf trace, bpftrace and strace each
// running one short command, round by round (A B C D A B C D …), and
// prints the medians: the whole process, and the time until the command
// ran (it prints CLOCK_REALTIME in ns as its first act after exec). With
// base (another iotrace binary), its record (file + block) runs in each
// round too, and this one's ratio to it is printed.
func runStartupTools(iotrace, base, dir string, rounds int) error {
	cmd := []string{"/bin/date", "+%s%N"}
	out := filepath.Join(dir, "startup.iot")
	tools := []*tool{
		{name: "iotrace record (file + block)", argv: func(c []string) []string {
			return append([]string{iotrace, "record", "-o", out, "--"}, c...)
		}},
		{name: "iotrace record --layer file", argv: func(c []string) []string {
			return append([]string{iotrace, "record", "--layer", "file", "-o", out, "--"}, c...)
		}},
		{name: "iotrace trace (file + block)", argv: func(c []string) []string {
			return append([]string{iotrace, "trace", "-o", filepath.Join(dir, "startup.txt"), "--"}, c...)
		}},
		{name: "perf trace -e pread64", argv: func(c []string) []string {
			return append([]string{"perf", "trace", "-e", "pread64", "-o", "/dev/null", "--"}, c...)
		}},
		{name: "bpftrace, one probe", argv: func(c []string) []string {
			return []string{"bpftrace", "-e", "tracepoint:syscalls:sys_enter_pread64 { @c = count(); }", "-c", strings.Join(c, " ")}
		}},
		{name: "strace -f -o /dev/null", argv: func(c []string) []string {
			return append([]string{"strace", "-f", "-o", "/dev/null"}, c...)
		}},
	}
	if base != "" {
		tools = append(tools, &tool{name: "-base iotrace record (file + block)", argv: func(c []string) []string {
			return append([]string{base, "record", "-o", out, "--"}, c...)
		}})
	}
	for r := 0; r < rounds; r++ {
		for _, t := range tools {
			a := t.argv(cmd)
			start := time.Now()
			b, err := exec.Command(a[0], a[1:]...).CombinedOutput()
			wall := time.Since(start)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s: %v\n%s", t.name, err, b)
				t.wall = append(t.wall, math.NaN())
				t.toExec = append(t.toExec, math.NaN())
				continue
			}
			m := epochNsRe.FindSubmatch(b)
			if m == nil {
				return fmt.Errorf("%s: the command's time not in its output:\n%s", t.name, b)
			}
			ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
			t.wall = append(t.wall, float64(wall.Microseconds())/1000)
			t.toExec = append(t.toExec, float64(ns-start.UnixNano())/1e6)
		}
	}
	fmt.Printf("\nstart-up, whole process, `TOOL -- /bin/date +%%s%%N`, %d rounds interleaved, medians; ratios: medians of the rounds' ratios\n\n", rounds)
	fmt.Printf("| %-30s | %12s | %22s |\n", "tool", "wall ms", "until the command ran ms")
	fmt.Printf("|%s|%s|%s|\n", strings.Repeat("-", 32), strings.Repeat("-", 14), strings.Repeat("-", 24))
	for _, t := range tools {
		fmt.Printf("| %-30s | %12.0f | %22.0f |\n", t.name, medianRun(t.wall), medianRun(t.toExec))
	}
	pt := tools[3]
	for _, io := range tools[:3] {
		fmt.Printf("%s / perf trace: whole process %.2f, until the command ran %.2f (target <= 1)\n",
			io.name, pairRatio(io.wall, pt.wall), pairRatio(io.toExec, pt.toExec))
	}
	if base != "" {
		b := tools[len(tools)-1]
		fmt.Printf("iotrace record / -base iotrace record (file + block): whole process %.2f, until the command ran %.2f\n",
			pairRatio(tools[0].wall, b.wall), pairRatio(tools[0].toExec, b.toExec))
	}
	return nil
}

// phaseMs returns the trailer's start-up and stop phases ("startup µs:
// PHASE" and "stop µs: PHASE" counters) in ms by "startup: PHASE" and
// "stop: PHASE".
func phaseMs(tr *event.Trailer) map[string]float64 {
	out := map[string]float64{}
	for _, c := range tr.Stats.Sorted() {
		if c.Kind != event.CountInfo {
			continue
		}
		for _, p := range []string{"startup", "stop"} {
			if name, ok := strings.CutPrefix(c.Name, p+" µs: "); ok {
				out[p+": "+name] = float64(c.Value) / 1000
			}
		}
	}
	return out
}

// printPhases prints each phase's median ms, by name.
func printPhases(phases map[string][]float64) {
	names := make([]string, 0, len(phases))
	for k := range phases {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Printf("|   %-62s | %6.1f ms |\n", k, median(phases[k]))
	}
}
