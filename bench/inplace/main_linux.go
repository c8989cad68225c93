// Command inplace measures parts of the eBPF backend's system-call path in
// place: run under an iotrace built with -DIOTRACE_BENCH_SWITCHES (run.sh
// builds one), it reads a cached file with pread64 in chunks and, chunk by
// chunk, flips one of the programs' measurement switches (the
// bench_switches map, enum bench_switch_bits in
// backend/ebpf/bpf/iotrace.bpf.c): off, on, off. A part's cost is the on
// chunk against the mean of the two off chunks around it, a few
// milliseconds apart, so the machine's drift (whole runs side by side
// differ by 3-5 % on a shared machine) mostly cancels; it prints the
// median over the rounds and the quartiles.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// fileSize is the data file's size: the workload reads it 4 KiB at a time,
// round and round (bench/syscall reads the same way).
const fileSize = 4 << 20

func main() {
	chunk := flag.Int("chunk", 10000, "pread64 calls per chunk")
	rounds := flag.Int("rounds", 40, "off, on, off chunks per switch")
	cpu := flag.Int("cpu", 1, "CPU the workload runs on (-1: any)")
	file := flag.String("file", "", "data file, at least 4 MiB (default: one made in a temporary directory)")
	flag.Parse()
	if err := run(*chunk, *rounds, *cpu, *file, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "inplace:", err)
		os.Exit(1)
	}
}

func run(chunk, rounds, cpu int, file string, switches []string) error {
	if len(switches) == 0 || chunk <= 0 || rounds <= 0 {
		return errors.New("usage: inplace [-chunk N] [-rounds N] [-cpu N] SWITCHES... (a switch: bits of enum bench_switch_bits, e.g. 1, 2, 4, 3)")
	}
	runtime.LockOSThread()
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin to CPU %d: %w", cpu, err)
		}
	}
	f, err := dataFile(file)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := switchMap()
	if err != nil {
		return err
	}
	defer m.Close()
	fd := int(f.Fd())
	buf := make([]byte, 4096)
	read := func(n int) (float64, error) {
		t0 := time.Now()
		for i := range n {
			if _, err := unix.Pread(fd, buf, int64(i%(fileSize/4096))*4096); err != nil {
				return 0, fmt.Errorf("pread64: %w", err)
			}
		}
		return float64(time.Since(t0).Nanoseconds()) / float64(n), nil
	}
	set := func(v uint32) error {
		if err := m.Put(uint32(0), v); err != nil {
			return fmt.Errorf("set the switches to %d: %w", v, err)
		}
		return nil
	}
	if _, err := read(chunk); err != nil { // warm-up
		return err
	}
	fmt.Printf("pread64 of 4 KiB, %d rounds of off/on/off chunks of %d calls; ns per call\n\n", rounds, chunk)
	fmt.Printf("| switches | on - off, median | first quartile | third quartile | off, median |\n|---|---|---|---|---|\n")
	for _, s := range switches {
		bits, err := strconv.ParseUint(s, 0, 32)
		if err != nil || bits == 0 {
			return fmt.Errorf("switch %q: want the non-zero bits of enum bench_switch_bits", s)
		}
		var diff, off []float64
		for range rounds {
			var t [3]float64
			for i, v := range []uint32{0, uint32(bits), 0} {
				if err := set(v); err != nil {
					return err
				}
				if t[i], err = read(chunk); err != nil {
					return err
				}
			}
			base := (t[0] + t[2]) / 2
			diff = append(diff, t[1]-base)
			off = append(off, base)
		}
		slices.Sort(diff)
		slices.Sort(off)
		q := func(x []float64, p int) float64 { return x[p*(len(x)-1)/4] }
		fmt.Printf("| %s | %+.1f | %+.1f | %+.1f | %.0f |\n", s, q(diff, 2), q(diff, 1), q(diff, 3), q(off, 2))
	}
	return set(0)
}

// switchMap finds the bench_switches map of the iotrace this runs under.
func switchMap() (*ebpf.Map, error) {
	var id ebpf.MapID
	for {
		next, err := ebpf.MapGetNextID(id)
		if err != nil {
			return nil, errors.New("no bench_switches map loaded: run under an iotrace built by bench/inplace/run.sh")
		}
		id = next
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue // gone since, or not ours to open
		}
		if info, err := m.Info(); err == nil && info.Name == "bench_switches" {
			return m, nil
		}
		m.Close()
	}
}

// dataFile opens name, or makes a 4 MiB file and reads it once (cached).
func dataFile(name string) (*os.File, error) {
	if name != "" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		// Shorter, the reads past its end would read nothing and time
		// no copy at all.
		if st, err := f.Stat(); err != nil || st.Size() < fileSize {
			f.Close()
			return nil, fmt.Errorf("data file %s: want a file of at least %d bytes", name, fileSize)
		}
		return f, nil
	}
	dir, err := os.MkdirTemp("", "inplace")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // the open file stays readable
	name = dir + "/data"
	if err := os.WriteFile(name, []byte(strings.Repeat("x", fileSize)), 0o600); err != nil {
		return nil, err
	}
	return os.Open(name)
}
