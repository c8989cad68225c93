package main

import (
	"fmt"
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
	// start until the command's exec (the command prints the time).
	wall, toExec []float64
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
	fmt.Printf("\nstart-up, whole process, `TOOL -- /bin/date +%%s%%N`, %d rounds interleaved, medians\n\n", rounds)
	fmt.Printf("| %-30s | %12s | %22s |\n", "tool", "wall ms", "until the command ran ms")
	fmt.Printf("|%s|%s|%s|\n", strings.Repeat("-", 32), strings.Repeat("-", 14), strings.Repeat("-", 24))
	for _, t := range tools {
		fmt.Printf("| %-30s | %12.0f | %22.0f |\n", t.name, median(t.wall), median(t.toExec))
	}
	pt := tools[3]
	for _, io := range tools[:3] {
		fmt.Printf("%s / perf trace: whole process %.2f, until the command ran %.2f (target <= 1)\n",
			io.name, median(io.wall)/median(pt.wall), median(io.toExec)/median(pt.toExec))
	}
	if base != "" {
		b := tools[len(tools)-1]
		fmt.Printf("iotrace record / -base iotrace record (file + block): whole process %.2f, until the command ran %.2f\n",
			median(tools[0].wall)/median(b.wall), median(tools[0].toExec)/median(b.toExec))
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
