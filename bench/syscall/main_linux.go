// Command syscall is the system-call tracing benchmark (see bench/run.sh):
// a fixed workload (pread64 of 4 KiB from an mlock'ed, cached file) runs
// bare, under `iotrace record`, under a count-only BPF floor (per-syscall
// tracepoints and raw sys_enter/sys_exit), under strace -f and under
// bpftrace printing each event, interleaved round by round in one run. It
// prints each one's time per call, the added time per call and the ratios
// the targets are stated in, then the start-up time of the eBPF backend and
// the cost the two attach mechanisms put on an unrelated system call.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf"
	"github.com/iotrace/iotrace/event"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "workload" {
		os.Exit(workload(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "spin" {
		os.Exit(spin())
	}
	n := flag.Int("n", 2_000_000, "preads per run (bare, floors, iotrace)")
	nStrace := flag.Int("n-strace", 20_000, "preads per strace run")
	nBpftrace := flag.Int("n-bpftrace", 200_000, "preads per bpftrace run")
	rounds := flag.Int("rounds", 3, "rounds (modes interleaved; medians reported)")
	iotrace := flag.String("iotrace", "", "the iotrace binary (built from this tree)")
	base := flag.String("base", "", "another iotrace binary (an older build) run the same way, interleaved, for a side-by-side ratio")
	stacksOnly := flag.Bool("stacks-only", false, "run the user-stack benchmark only")
	noStacks := flag.Bool("no-stacks", false, "leave out the user-stack modes and benchmark")
	startupOnly := flag.Bool("startup-only", false, "run the start-up comparison only")
	nStacks := flag.Int("n-stacks", 200_000, "preads per run of the user-stack benchmark")
	pin := flag.Bool("pin", true, "pread64 and getppid tables: the workload on the last CPU, the tracers' processes on the others (with 2 CPUs or more)")
	keepBusy := flag.Bool("keep-busy", false, "pread64 and getppid tables, with -pin: keep the tracers' CPUs from idling (a spinner at SCHED_IDLE on each) in every mode")
	flag.Parse()
	if *iotrace == "" {
		fmt.Fprintln(os.Stderr, "usage: syscall -iotrace PATH [-n N] [-rounds R] (see bench/run.sh)")
		os.Exit(2)
	}
	if *startupOnly {
		if err := runStartupOnly(*iotrace, *base, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "bench: start-up:", err)
			os.Exit(1)
		}
		return
	}
	if !*stacksOnly {
		if err := run(*iotrace, *base, *n, *nStrace, *nBpftrace, *rounds, *noStacks, *pin, *keepBusy); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if *noStacks {
		return
	}
	if err := runStacks(*iotrace, *nStacks, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench: user stacks:", err)
		os.Exit(1)
	}
}

// runStartupOnly runs the start-up comparison and the backend's phases
// alone (STARTUP_ONLY=1 bench/run.sh).
func runStartupOnly(iotrace, base string, rounds int) error {
	dir, err := os.MkdirTemp("", "iotrace-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := runStartupTools(iotrace, base, dir, max(rounds, 15)); err != nil {
		return err
	}
	return printStartup()
}

// workload KIND N [FILE]: pread64 4 KiB from FILE (mmap'ed and mlock'ed
// so that it stays cached), or getppid; prints ns per call of the loop.
func workload(args []string) int {
	if len(args) < 2 {
		return 2
	}
	n, _ := strconv.Atoi(args[1])
	var start time.Time
	switch args[0] {
	case "pread":
		fd, err := unix.Open(args[2], unix.O_RDONLY, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		var st unix.Stat_t
		_ = unix.Fstat(fd, &st)
		m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil || unix.Mlock(m) != nil {
			fmt.Fprintln(os.Stderr, "mmap/mlock:", err)
			return 1
		}
		pages := int64(st.Size / 4096)
		buf := make([]byte, 4096)
		start = time.Now()
		for i := 0; i < n; i++ {
			if _, err := unix.Pread(fd, buf, (int64(i)%pages)*4096); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	case "getppid":
		start = time.Now()
		for i := 0; i < n; i++ {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		}
	default:
		return 2
	}
	wall := time.Since(start)
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("ns_per_op=%.1f cpu_ns_per_op=%.1f\n", float64(wall.Nanoseconds())/float64(n), float64(cpu.Nanoseconds())/float64(n))
	return 0
}

var nsRe = regexp.MustCompile(`\bns_per_op=([0-9.]+)`)
var cpuRe = regexp.MustCompile(`cpu_ns_per_op=([0-9.]+)`)
var lostRe = regexp.MustCompile(`iotrace: recorded (\d+) events, (\d+) events lost`)

func parseNs(out []byte) (float64, error) {
	m := nsRe.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no ns_per_op in output:\n%s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// parseCPU returns the workload's own CPU time per call (user + system),
// which includes the BPF programs run in its system calls but not the
// time it waits: steadier than wall time on a busy machine.
func parseCPU(out []byte) float64 {
	if m := cpuRe.FindSubmatch(out); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	return 0
}

type mode struct {
	name string
	n    int
	// run runs the workload command wl under the mode.
	run func(wl []string) ([]byte, error)
	ns  []float64
	cpu []float64
	// add and addCPU are each run's time per call less the bare runs'
	// just before and just after it (their mean): the cost it adds.
	add, addCPU []float64
	// beside, when set, is the mode this one is compared with (-base
	// against this build's record): it runs next to it in every round,
	// after it in even rounds and before it in odd ones, so that neither
	// takes the other's place in the round. (Run last, after bpftrace,
	// the same binary measured 0.90x itself: the bare runs beside it
	// were 26 % slower.)
	beside *mode
}

// order is the modes after the bare one (modes[0]) in the order round r
// runs them: a mode with beside set next to that mode.
func order(modes []*mode, r int) []*mode {
	var seq []*mode
	for _, m := range modes[1:] {
		if m.beside != nil {
			continue
		}
		var pair []*mode
		for _, o := range modes[1:] {
			if o.beside == m {
				pair = append(pair, o)
			}
		}
		if r%2 == 1 {
			seq = append(append(seq, pair...), m)
		} else {
			seq = append(append(seq, m), pair...)
		}
	}
	return seq
}

// added returns the mode's added wall and CPU ns per call: the medians
// of its runs' paired differences with the bare runs around them.
func (m *mode) added() (wall, cpu float64) { return median(m.add), median(m.addCPU) }

// harness is what the parts of the benchmark share: the binaries, the
// data file, the floor programs, the call counts, and what iotrace
// record reported.
type harness struct {
	iotrace, base, self, dir, file string
	floor                          *floorProbes
	n, nStrace, nBpftrace          int
	rounds                         int
	noStacks                       bool // leave out the --stacks modes
	// wlCPU is the CPU the workload is pinned to and toolCPUs the CPUs
	// of the tracers' processes (-pin); wlCPU -1: not pinned.
	wlCPU    int
	toolCPUs string
	taskset  string // its full path
	// Events iotrace record reported recorded and lost, without and with
	// --stacks user.
	recorded, lost, stackRecorded, stackLost uint64
}

// run runs the benchmark's parts: pread64 under every mode, then the cost
// on an untraced call, then the start-up time.
func run(iotrace, base string, n, nStrace, nBpftrace, rounds int, noStacks, pin, keepBusy bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "iotrace-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	h := &harness{iotrace: iotrace, base: base, self: self, dir: dir, file: filepath.Join(dir, "data"),
		n: n, nStrace: nStrace, nBpftrace: nBpftrace, rounds: rounds, noStacks: noStacks, wlCPU: -1}
	if pin {
		h.pinCPUs()
	}
	if err := os.WriteFile(h.file, bytes.Repeat([]byte{1}, 1<<20), 0o644); err != nil {
		return err
	}
	if h.floor, err = openFloor(); err != nil {
		return fmt.Errorf("load the count-only floor: %w", err)
	}
	defer h.floor.Close()

	stop := func() {}
	if keepBusy {
		if stop, err = h.keepBusy(); err != nil {
			return err
		}
	}
	modes, baseMode := h.preadModes()
	if err := h.measure(modes, "pread", true); err != nil {
		stop()
		return err
	}
	h.printPread(modes, baseMode)
	h.untraced()
	stop()
	if err := runStartupTools(iotrace, base, dir, max(rounds, 15)); err != nil {
		return fmt.Errorf("start-up: %w", err)
	}
	return printStartup()
}

// workload is the command line of the workload kind making n calls.
func (h *harness) workload(kind string, n int) []string {
	wl := []string{h.self, "workload", kind, strconv.Itoa(n), h.file}
	if h.wlCPU >= 0 {
		wl = append([]string{h.taskset, "-c", strconv.Itoa(h.wlCPU)}, wl...)
	}
	return wl
}

// pinCPUs puts the workload on the last CPU this process may use and the
// tracers' processes (iotrace's reader, strace, bpftrace) on the others,
// when there are two or more: where the scheduler puts a tracer's
// process (on the workload's CPU or not) is then not part of the figure,
// and the workload's CPU time is its own. The floors have no process.
func (h *harness) pinCPUs() {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() < 2 {
		return
	}
	// By its full path: bpftrace -c refuses a name found twice in PATH
	// (/bin and /usr/bin, one directory).
	ts, err := exec.LookPath("taskset")
	if err != nil {
		fmt.Printf("no taskset: nothing pinned\n\n")
		return
	}
	if ts, err = filepath.EvalSymlinks(ts); err != nil {
		return
	}
	h.taskset = ts
	var cpus []string
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, strconv.Itoa(c))
		}
	}
	h.wlCPU, _ = strconv.Atoi(cpus[len(cpus)-1])
	h.toolCPUs = strings.Join(cpus[:len(cpus)-1], ",")
	fmt.Printf("pread64 and getppid tables: the workload on CPU %d, the tracers' processes on CPU %s (-pin=false: neither pinned)\n\n", h.wlCPU, h.toolCPUs)
}

// keepBusy keeps the tracers' CPUs from idling while the per-call tables
// run (-keep-busy, with -pin): one spinning process at SCHED_IDLE on each,
// which any other task preempts at once. On a virtual machine an idle
// sibling vCPU can slow the workload's CPU: measured 2026-11-29 on a
// 2-vCPU guest, a bare pread64 took 829-967 ns with CPU 0 idle against
// 720-739 with such a spinner there, and its process was charged 8-9 %
// less CPU than its wall time. iotrace's reader keeps that CPU busy in its
// runs only, the floors (no process) and the bare runs leave it idle: by
// default the modes are measured in two states of the machine, with it
// all in one (docs/benchmarks.md). The returned function stops the
// spinners.
func (h *harness) keepBusy() (func(), error) {
	if h.wlCPU < 0 {
		return func() {}, nil
	}
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for _, cpu := range strings.Split(h.toolCPUs, ",") {
		c := exec.Command(h.taskset, "-c", cpu, h.self, "spin")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("spinner on CPU %s: %w", cpu, err)
		}
		cmds = append(cmds, c)
	}
	fmt.Printf("the tracers' CPUs kept from idling by a spinner at SCHED_IDLE each (-pin)\n\n")
	return stop, nil
}

// spin runs at SCHED_IDLE until killed (keepBusy).
func spin() int {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		fmt.Fprintln(os.Stderr, "sched_setattr SCHED_IDLE:", err)
		return 1
	}
	for {
	}
}

// tool is the command running a tracer's process, on the tool CPUs when
// pinned.
func (h *harness) tool(name string, args ...string) *exec.Cmd {
	if h.wlCPU < 0 {
		return exec.Command(name, args...)
	}
	return exec.Command(h.taskset, append([]string{"-c", h.toolCPUs, name}, args...)...)
}

// plain runs a command without tracing.
func plain(args []string) ([]byte, error) { return exec.Command(args[0], args[1:]...).CombinedOutput() }

// record runs the workload a under iotrace record (with extra flags) and
// adds the events its summary line reports recorded and lost.
func (h *harness) record(extra []string, a []string, rec, lost *uint64) ([]byte, error) {
	args := append(append([]string{"record", "-o", filepath.Join(h.dir, "t.iot")}, extra...), "--")
	out, err := h.tool(h.iotrace, append(args, a...)...).CombinedOutput()
	if m := lostRe.FindSubmatch(out); m != nil {
		ev, _ := strconv.ParseUint(string(m[1]), 10, 64)
		l, _ := strconv.ParseUint(string(m[2]), 10, 64)
		*rec += ev
		*lost += l
	} else if err == nil {
		err = fmt.Errorf("no summary line from iotrace record:\n%s", out)
	}
	return out, err
}

// preadModes are the ways the pread64 workload runs: bare, under the
// count-only floors, iotrace, strace and bpftrace; then --stacks user
// against bpftrace aggregating the same user stacks at the same point
// (the call's exit) in a stack map (left out with -no-stacks); last, with
// -base, the other iotrace binary (baseMode, nil without -base), run
// beside this build's record (mode.beside).
func (h *harness) preadModes() (modes []*mode, baseMode *mode) {
	bpftrace := func(out, prog string) func(a []string) ([]byte, error) {
		return func(a []string) ([]byte, error) {
			cmd := h.tool("bpftrace", "-o", filepath.Join(h.dir, out), "-e", prog, "-c", strings.Join(a, " "))
			return cmd.CombinedOutput()
		}
	}
	modes = []*mode{
		{name: "bare", n: h.n, run: plain},
		{name: "floor: count, per-syscall tracepoints", n: h.n, run: func(a []string) ([]byte, error) { return h.floor.under("tp", a) }},
		{name: "floor: count, raw sys_enter/sys_exit", n: h.n, run: func(a []string) ([]byte, error) { return h.floor.under("raw", a) }},
		{name: "iotrace record (file + block)", n: h.n, run: func(a []string) ([]byte, error) {
			return h.record(nil, a, &h.recorded, &h.lost)
		}},
		{name: "strace -f -o /dev/null", n: h.nStrace, run: func(a []string) ([]byte, error) {
			return h.tool("strace", append([]string{"-f", "-o", "/dev/null"}, a...)...).CombinedOutput()
		}},
		{name: "bpftrace printf per event", n: h.nBpftrace, run: bpftrace("bpftrace.out",
			`tracepoint:syscalls:sys_exit_pread64 /pid == cpid/ { printf("%d %d %s %d\n", pid, tid, comm, args->ret); }`)},
		{name: "iotrace record --stacks user", n: h.n, run: func(a []string) ([]byte, error) {
			return h.record([]string{"--stacks", "user"}, a, &h.stackRecorded, &h.stackLost)
		}},
		{name: "bpftrace @[ustack] = count()", n: h.n, run: bpftrace("bpftrace-ustack.out",
			`tracepoint:syscalls:sys_exit_pread64 /pid == cpid/ { @[ustack] = count(); }`)},
	}
	if h.noStacks {
		modes = modes[:6]
	}
	if h.base != "" {
		baseMode = &mode{name: "iotrace record (file + block), -base binary", n: h.n, run: func(a []string) ([]byte, error) {
			args := append([]string{"record", "-o", filepath.Join(h.dir, "b.iot"), "--"}, a...)
			out, err := h.tool(h.base, args...).CombinedOutput()
			if err == nil && lostRe.FindSubmatch(out) == nil {
				err = fmt.Errorf("no summary line from the -base iotrace record:\n%s", out)
			}
			return out, err
		}}
		baseMode.beside = modes[3]
		modes = append(modes, baseMode) // listed last (the other modes keep their places), run beside this build's record
	}
	return modes, baseMode
}

// measure runs the workload kind under every mode, the modes interleaved
// round by round, with a bare run (modes[0]) before the first and after
// each other mode, and keeps each run's time per call and the cost it
// adds over the bare runs on either side of it. Pairing each run with the
// bare runs next to it, seconds apart, is what makes the added cost
// measurable on a shared machine: the bare time drifts by more than a
// floor's cost between runs a round apart (the median of bare runs taken
// across rounds once came out above a floor's median, an added cost of
// -11 ns). A run that fails is reported and left out (with its pair);
// with strict, output without a time is an error, else it is left out
// too.
func (h *harness) measure(modes []*mode, kind string, strict bool) error {
	bare := modes[0]
	one := func(m *mode) (ns, cpu float64, ok bool, err error) {
		out, err := m.run(h.workload(kind, m.n))
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n%s", m.name, err, out)
			return 0, 0, false, nil
		}
		ns, err = parseNs(out)
		if err != nil {
			if strict {
				return 0, 0, false, fmt.Errorf("%s: %w", m.name, err)
			}
			return 0, 0, false, nil
		}
		cpu = parseCPU(out)
		m.ns = append(m.ns, ns)
		m.cpu = append(m.cpu, cpu)
		return ns, cpu, true, nil
	}
	for r := 0; r < h.rounds; r++ {
		bns, bcpu, bok, err := one(bare)
		if err != nil {
			return err
		}
		for _, m := range order(modes, r) {
			ns, cpu, ok, err := one(m)
			if err != nil {
				return err
			}
			ans, acpu, aok, err := one(bare)
			if err != nil {
				return err
			}
			if ok && bok && aok {
				m.add = append(m.add, ns-(bns+ans)/2)
				m.addCPU = append(m.addCPU, cpu-(bcpu+acpu)/2)
			}
			bns, bcpu, bok = ans, acpu, aok
		}
	}
	return nil
}

// printPread prints the pread64 table and the ratios the targets are
// stated in (and, with -base, this iotrace against the other).
func (h *harness) printPread(modes []*mode, baseMode *mode) {
	addCPU := func(m *mode) float64 { _, c := m.added(); return c }
	add := func(m *mode) float64 { w, _ := m.added(); return w }
	fmt.Printf("pread64 4 KiB from an mlock'ed cached file, %d rounds, medians; added: each run less the bare runs just before and after it\n\n", h.rounds)
	fmt.Printf("| %-38s | %9s | %8s | %8s | %10s | %10s |\n", "mode", "calls", "wall ns", "added", "cpu ns", "added cpu")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 40), strings.Repeat("-", 11), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 12), strings.Repeat("-", 12))
	for _, m := range modes {
		if len(m.ns) == 0 {
			fmt.Printf("| %-38s | %9d | %8s | %8s | %10s | %10s |\n", m.name, m.n, "failed", "", "", "")
			continue
		}
		fmt.Printf("| %-38s | %9d | %8.0f | %8.0f | %10.0f | %10.0f |\n", m.name, m.n, median(m.ns), add(m), median(m.cpu), addCPU(m))
	}
	io, fl, st, bt := add(modes[3]), add(modes[1]), add(modes[4]), add(modes[5])
	if baseMode != nil {
		fmt.Printf("\niotrace / -base iotrace (same workload, run side by side, in turn first) = %.3f by wall time, %.3f by workload CPU time; by added time %.3f and %.3f\n",
			median(modes[3].ns)/median(baseMode.ns), median(modes[3].cpu)/median(baseMode.cpu), add(modes[3])/add(baseMode), addCPU(modes[3])/addCPU(baseMode))
	}
	fmt.Printf("\niotrace / floor (per-syscall tracepoints) = %.2f (target <= 1.5, issue 28; 2 before)\n", io/fl)
	fmt.Printf("iotrace / floor (raw sys_enter/exit)      = %.2f\n", io/add(modes[2]))
	fmt.Printf("iotrace / bpftrace printf                 = %.3f (target <= 0.1)\n", io/bt)
	fmt.Printf("iotrace / strace                          = %.4f (target <= 0.05)\n", io/st)
	fmt.Printf("by workload CPU time: iotrace / floor (per-syscall tp) = %.2f (target <= 1.5), / floor (raw) = %.2f, / bpftrace = %.3f\n",
		addCPU(modes[3])/addCPU(modes[1]), addCPU(modes[3])/addCPU(modes[2]), addCPU(modes[3])/addCPU(modes[5]))
	fmt.Printf("iotrace record: %d events recorded, %d events lost at the default buffer size (target 0)\n", h.recorded, h.lost)
	if h.noStacks {
		return
	}
	fmt.Printf("iotrace --stacks user: added over iotrace without stacks %.0f ns; iotrace --stacks user / bpftrace ustack count = %.2f (target <= 2); %d events recorded, %d lost (target 0)\n",
		add(modes[6])-io, add(modes[6])/add(modes[7]), h.stackRecorded, h.stackLost)
}

// untraced measures and prints the attach mechanisms' cost on a system
// call that is not traced (getppid).
func (h *harness) untraced() {
	fmt.Printf("\ngetppid (not traced), %d calls, medians of %d\n\n", h.n, h.rounds)
	un := []*mode{
		{name: "bare", n: h.n, run: plain},
		{name: "per-syscall tracepoints on pread64", n: h.n, run: func(a []string) ([]byte, error) { return h.floor.under("tp", a) }},
		{name: "raw sys_enter/sys_exit, array filter", n: h.n, run: func(a []string) ([]byte, error) { return h.floor.under("raw", a) }},
		{name: "iotrace record (file + block)", n: h.n, run: func(a []string) ([]byte, error) {
			return h.tool(h.iotrace, append([]string{"record", "-o", filepath.Join(h.dir, "u.iot"), "--"}, a...)...).CombinedOutput()
		}},
	}
	_ = h.measure(un, "getppid", false)
	for _, m := range un {
		w, c := m.added()
		fmt.Printf("| %-38s | wall %6.0f ns/call (%+5.0f) | cpu %6.0f ns/call (%+5.0f) |\n",
			m.name, median(m.ns), w, median(m.cpu), c)
	}
}

// printStartup measures and prints the start-up of the eBPF backend:
// load, attach, rundown (in process, as iotrace does).
func printStartup() error {
	fmt.Printf("\nstart-up of the eBPF backend (load + attach + /proc rundown) and its stop phases, median of 5\n\n")
	for _, layers := range [][]event.Layer{{event.LayerFile}, nil} {
		var ms []float64
		var procs uint64
		phases := map[string][]float64{}
		for i := 0; i < 5; i++ {
			d, p, ph, err := startup(layers)
			if err != nil {
				return fmt.Errorf("start-up: %w", err)
			}
			ms = append(ms, d)
			procs = p
			for k, v := range ph {
				phases[k] = append(phases[k], v)
			}
		}
		name := "file + block"
		if layers != nil {
			name = "file"
		}
		fmt.Printf("| %-14s | %6.1f ms | (%d processes in the rundown) |\n", name, median(ms), procs)
		printPhases(phases)
	}
	return nil
}

// startup runs the backend system-wide for an instant and returns its
// start-up time in ms (from its own counter), the rundown size and each
// start-up and stop phase's ms (the trace's "startup µs: " and "stop µs: "
// counters).
func startup(layers []event.Layer) (float64, uint64, map[string]float64, error) {
	tr, err := runInstant(ebpf.Config{MarkerDir: "-"}, backend.Options{Layers: layers})
	if err != nil {
		return 0, 0, nil, err
	}
	us := tr.Stats.Get(event.CountInfo, "startup (load, attach, rundown) µs")
	return float64(us) / 1000, tr.Stats.Get(event.CountInfo, "processes in the rundown"), phaseMs(tr), nil
}

// runInstant runs the backend system-wide with cfg and opts until its
// first event (at most 2 s) and returns the trace's trailer.
func runInstant(cfg ebpf.Config, opts backend.Options) (*event.Trailer, error) {
	var tr *event.Trailer
	sink := &trailerSink{end: func(t *event.Trailer) { tr = t }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for sink.events.Load() == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	opts.Duration = 2 * time.Second
	if err := ebpf.New(cfg).Run(ctx, opts, sink); err != nil {
		return nil, err
	}
	if tr == nil {
		return nil, errors.New("no trailer")
	}
	return tr, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// floorProbes is the count-only floor.
type floorProbes struct{ objs floorObjects }

func openFloor() (*floorProbes, error) {
	f := &floorProbes{}
	if err := loadFloorObjects(&f.objs, nil); err != nil {
		return nil, err
	}
	if err := f.objs.Traced.Put(uint32(unix.SYS_PREAD64), uint64(1)); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *floorProbes) Close() { f.objs.Close() }

// under runs args with the floor's "tp" or "raw" programs attached.
func (f *floorProbes) under(kind string, args []string) ([]byte, error) {
	var ls []link.Link
	var err error
	attach := func(l link.Link, e error) {
		if e != nil && err == nil {
			err = e
		}
		if l != nil {
			ls = append(ls, l)
		}
	}
	if kind == "tp" {
		attach(link.Tracepoint("syscalls", "sys_enter_pread64", f.objs.TpEnter, nil))
		attach(link.Tracepoint("syscalls", "sys_exit_pread64", f.objs.TpExit, nil))
	} else {
		attach(link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: f.objs.RawEnter}))
		attach(link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_exit", Program: f.objs.RawExit}))
	}
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	return exec.Command(args[0], args[1:]...).CombinedOutput()
}
