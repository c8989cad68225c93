package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/unwind"
)

// The user-stack benchmark: what walking user stacks costs per event
// with unwind tables (the default), with frame pointers (the kernel's
// walk, --stack-walk frame-pointers) and under bpftrace's ustack, on a C
// program built with and one built without frame pointers (its pread64
// calls go through four of its functions and Debian's libc); the trace's
// size against perf record --call-graph dwarf for the same calls; the
// unwind tables' memory for libc, libstdc++ and libpython; the time to
// build the tables of every running process's files at start.

// stackProg is the workload: N pread64 of 4 KiB of FILE (mlock'ed) from
// main → outer → middle → inner → leaf → libc's pread64.
const stackProg = `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static char buf[4096];
__attribute__((noinline)) long leaf(int fd, long off) { return pread(fd, buf, sizeof buf, off); }
__attribute__((noinline)) long inner(int fd, long off) { long r = leaf(fd, off); __asm__ volatile("" ::: "memory"); return r; }
__attribute__((noinline)) long middle(int fd, long off) { long r = inner(fd, off); __asm__ volatile("" ::: "memory"); return r; }
__attribute__((noinline)) long outer(int fd, long off) { long r = middle(fd, off); __asm__ volatile("" ::: "memory"); return r; }
int main(int argc, char **argv) {
	long n = atol(argv[1]);
	int fd = open(argv[2], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) return 1;
	void *m = mmap(0, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || mlock(m, st.st_size)) return 1;
	long pages = st.st_size / 4096;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		if (outer(fd, (i % pages) * 4096) != 4096) return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double wall = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	double cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
	printf("ns_per_op=%.1f cpu_ns_per_op=%.1f\n", wall / n, cpu / n);
	return 0;
}
`

// runStacks is the user-stack benchmark.
func runStacks(iotrace string, n, rounds int) error {
	dir, err := os.MkdirTemp("", "iotrace-bench-stacks")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(src, []byte(stackProg), 0o644); err != nil {
		return err
	}
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, bytes.Repeat([]byte{1}, 1<<20), 0o644); err != nil {
		return err
	}
	progs := map[string]string{"without frame pointers": "-fomit-frame-pointer", "with frame pointers": "-fno-omit-frame-pointer"}
	for _, name := range []string{"without frame pointers", "with frame pointers"} {
		bin := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if out, err := exec.Command("gcc", "-O2", progs[name], "-o", bin, src).CombinedOutput(); err != nil {
			return fmt.Errorf("gcc: %v\n%s", err, out)
		}
		if err := stackCost(iotrace, dir, bin, file, name, n, rounds); err != nil {
			return err
		}
	}
	if err := traceSize(iotrace, dir, filepath.Join(dir, "without-frame-pointers"), file); err != nil {
		fmt.Fprintf(os.Stderr, "bench: trace size: %v\n", err)
	}
	tableMemory()
	return startupTables(rounds)
}

// stackCost runs bin's preads bare, under iotrace without stacks, with
// stacks walked by frame pointers and by tables, and under bpftrace's
// ustack, interleaved round by round.
func stackCost(iotrace, dir, bin, file, name string, n, rounds int) error {
	cache := filepath.Join(dir, "cache")
	rec := func(extra ...string) func([]string) ([]byte, error) {
		return func(a []string) ([]byte, error) {
			args := append(append([]string{"record", "-o", filepath.Join(dir, "s.iot")}, extra...), "--")
			cmd := exec.Command(iotrace, append(args, a...)...)
			cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
			return cmd.CombinedOutput()
		}
	}
	modes := []*mode{
		{name: "bare", n: n, run: func(a []string) ([]byte, error) { return exec.Command(a[0], a[1:]...).CombinedOutput() }},
		{name: "iotrace record", n: n, run: rec()},
		{name: "iotrace record --stacks user (frame pointers)", n: n, run: rec("--stacks", "user", "--stack-walk", "frame-pointers")},
		{name: "iotrace record --stacks user (tables)", n: n, run: rec("--stacks", "user")},
		{name: "bpftrace @[ustack] = count()", n: n, run: func(a []string) ([]byte, error) {
			prog := `tracepoint:syscalls:sys_exit_pread64 /pid == cpid/ { @[ustack] = count(); }`
			return exec.Command("bpftrace", "-o", filepath.Join(dir, "bt.out"), "-e", prog, "-c", strings.Join(a, " ")).CombinedOutput()
		}},
	}
	for r := 0; r < rounds; r++ {
		for _, m := range modes {
			out, err := m.run([]string{bin, strconv.Itoa(m.n), file})
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s: %v\n%s", m.name, err, out)
				continue
			}
			ns, err := parseNs(out)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			m.ns = append(m.ns, ns)
			m.cpu = append(m.cpu, parseCPU(out))
		}
	}
	bare, bareCPU := median(modes[0].ns), median(modes[0].cpu)
	fmt.Printf("\nuser stacks: pread64 4 KiB through 5 functions and libc, a C program %s, %d calls, %d rounds, medians\n\n", name, n, rounds)
	fmt.Printf("| %-46s | %8s | %8s | %10s |\n", "mode", "wall ns", "added", "added cpu")
	for _, m := range modes {
		fmt.Printf("| %-46s | %8.0f | %8.0f | %10.0f |\n", m.name, median(m.ns), median(m.ns)-bare, median(m.cpu)-bareCPU)
	}
	noStacks := median(modes[1].ns)
	fp, tab, bt := median(modes[2].ns)-noStacks, median(modes[3].ns)-noStacks, median(modes[4].ns)-bare
	fmt.Printf("stack walk per event (added over iotrace without stacks): frame pointers %.0f ns, tables %.0f ns: tables / frame pointers = %.2f (target <= 2); tables walk + iotrace / bpftrace ustack = %.2f\n",
		fp, tab, tab/fp, (median(modes[3].ns)-bare)/bt)
	return nil
}

// traceSize records the same 10,000 preads with iotrace --stacks user and
// with perf record --call-graph dwarf (8 KiB of stack per sample) and
// compares the files.
func traceSize(iotrace, dir, bin, file string) error {
	const n = 10000
	t := filepath.Join(dir, "size.iot")
	if out, err := exec.Command(iotrace, "record", "--stacks", "user", "-o", t, "--", bin, strconv.Itoa(n), file).CombinedOutput(); err != nil {
		return fmt.Errorf("iotrace: %v\n%s", err, out)
	}
	p := filepath.Join(dir, "perf.data")
	if _, err := exec.LookPath("perf"); err != nil {
		return errors.New("perf not installed (scripts/setup installs linux-perf)")
	}
	if out, err := exec.Command("perf", "record", "-q", "-e", "syscalls:sys_exit_pread64", "--call-graph", "dwarf", "-o", p, "--", bin, strconv.Itoa(n), file).CombinedOutput(); err != nil {
		return fmt.Errorf("perf record: %v\n%s", err, out)
	}
	si, err1 := os.Stat(t)
	sp, err2 := os.Stat(p)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	fmt.Printf("\ntrace size, %d pread64 with user stacks: iotrace record --stacks user %d bytes (%.1f per call), perf record --call-graph dwarf %d bytes (%.1f per call): perf / iotrace = %.0f\n",
		n, si.Size(), float64(si.Size())/n, sp.Size(), float64(sp.Size())/n, float64(sp.Size())/float64(si.Size()))
	return nil
}

// tableMemory prints the unwind tables' size in the kernel (8-byte rows,
// 20-byte rules) for libc, libstdc++ and libpython, and the time to build
// and to read back each.
func tableMemory() {
	fmt.Printf("\nunwind tables (kernel memory: 8 bytes a row, 20 a distinct rule)\n\n")
	var rows, rules int
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libpython3.11.so.1.0"} {
		f, err := elf.Open(p)
		if err != nil {
			fmt.Printf("| %s: %v |\n", p, err)
			continue
		}
		start := time.Now()
		t, err := unwind.Build(f)
		build := time.Since(start)
		f.Close()
		if err != nil {
			fmt.Printf("| %s: %v |\n", p, err)
			continue
		}
		enc, _ := t.MarshalBinary()
		start = time.Now()
		var back unwind.Table
		_ = back.UnmarshalBinary(enc)
		read := time.Since(start)
		rows += len(t.Rows)
		rules += len(t.Rules())
		fmt.Printf("| %-44s | %7d rows | %4d rules | %7.0f KiB | built in %5.1f ms, read from the cache in %4.1f ms |\n",
			filepath.Base(p), len(t.Rows), len(t.Rules()), float64(len(t.Rows)*8+len(t.Rules())*20)/1024, ms(build), ms(read))
	}
	fmt.Printf("| %-44s | %7d rows | %4d rules | %7.0f KiB | (rules shared between files count once) |\n", "a process mapping all three", rows, rules, float64(rows*8+rules*20)/1024)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// startupTables starts the backend system-wide with user stacks, the
// cache empty (every table built) and then full (read back), and prints
// the time taken to load the tables of every running process's files
// before tracing.
func startupTables(rounds int) error {
	cache, err := os.MkdirTemp("", "iotrace-bench-cache")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	fmt.Printf("\nunwind tables at start, system-wide (every running process's mapped files), medians of %d\n\n", rounds)
	for _, c := range []struct {
		name  string
		fresh bool
	}{{"cache empty (tables built)", true}, {"cache full (tables read)", false}} {
		var msv []float64
		var procs, files, built uint64
		if !c.fresh {
			if _, err := startupWith(filepath.Join(cache, "warm")); err != nil { // fills the cache
				return err
			}
		}
		for r := 0; r < rounds; r++ {
			dir := filepath.Join(cache, "warm")
			if c.fresh {
				dir = filepath.Join(cache, "cold"+strconv.Itoa(r))
			}
			tr, err := startupWith(dir)
			if err != nil {
				return err
			}
			msv = append(msv, float64(tr.Get(event.CountInfo, "unwind tables: preload time before tracing (ms)")))
			procs = tr.Get(event.CountInfo, "processes in the rundown")
			files = tr.Get(event.CountInfo, "unwind tables: distinct files (build IDs)")
			built = tr.Get(event.CountInfo, "unwind tables: built")
		}
		fmt.Printf("| %-28s | %6.0f ms | %d processes, %d distinct files, %d built in the last run |\n", c.name, median(msv), procs, files, built)
	}
	return nil
}

// startupWith runs the backend system-wide with user stacks for an
// instant, its tables cached in dir, and returns its counters.
func startupWith(dir string) (*event.Stats, error) {
	tr, err := runInstant(ebpf.Config{MarkerDir: "-", UnwindCacheDir: filepath.Join(dir, "unwind")},
		backend.Options{Layers: []event.Layer{event.LayerFile}, Stacks: backend.StacksUser})
	if err != nil {
		return nil, err
	}
	return &tr.Stats, nil
}
