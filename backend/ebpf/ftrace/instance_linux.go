package ftrace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Options configure an [Instance].
type Options struct {
	// Name is the instance's directory under instances/ (iotrace-PID).
	Name string
	// Events are the events to record, "SYSTEM/NAME"; one the kernel
	// lacks is left out (Instance.Missing lists it).
	Events []string
	// Clock is the instance's trace_clock: "boot", "mono"...
	Clock string
	// BufferKB is the ring buffer size per CPU in KiB (0: 1024).
	BufferKB int
	// Root is where tracefs is mounted; "" tries /sys/kernel/tracing,
	// then /sys/kernel/debug/tracing.
	Root string
}

// Instance is a tracefs instance of this process, recording a few events
// into its own per-CPU ring buffers.
type Instance struct {
	dir     string
	header  PageHeader
	formats map[uint16]*Format
	missing []string
	enabled []string
	cpus    []cpuPipe
	page    []byte
}

// cpuPipe is one CPU's trace_pipe_raw, a raw non-blocking descriptor:
// an *os.File would park the reader in Go's poller on EAGAIN, and tracefs
// files never report readiness to it.
type cpuPipe struct {
	cpu int
	fd  int
}

// Open creates the instance, sets its clock and buffer size, enables the
// events and opens every CPU's trace_pipe_raw. An instance of the same
// name left by a process of the same pid (this one's predecessor) is
// removed first.
func Open(opts Options) (*Instance, error) {
	root, err := tracefsRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	hp, err := os.ReadFile(filepath.Join(root, "events", "header_page"))
	if err != nil {
		return nil, fmt.Errorf("ftrace: %w", err)
	}
	header, err := ParsePageHeader(string(hp))
	if err != nil {
		return nil, fmt.Errorf("ftrace: %w", err)
	}
	if opts.Name == "" || strings.ContainsAny(opts.Name, "/.") {
		return nil, fmt.Errorf("ftrace: instance name %q", opts.Name)
	}
	dir := filepath.Join(root, "instances", opts.Name)
	if err := os.Mkdir(dir, 0o700); errors.Is(err, os.ErrExist) {
		if err := removeDir(dir); err != nil {
			return nil, fmt.Errorf("ftrace: a stale instance %s is in the way: %w", dir, err)
		}
		err = os.Mkdir(dir, 0o700)
	}
	if err != nil {
		return nil, fmt.Errorf("ftrace: create instance: %w", err)
	}
	in := &Instance{dir: dir, header: header, formats: map[uint16]*Format{}}
	if err := in.setup(opts); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

func (in *Instance) setup(opts Options) error {
	if opts.Clock != "" {
		if err := in.write("trace_clock", opts.Clock); err != nil {
			return err
		}
	}
	kb := opts.BufferKB
	if kb <= 0 {
		kb = 1024
	}
	if err := in.write("buffer_size_kb", strconv.Itoa(kb)); err != nil {
		return err
	}
	for _, ev := range opts.Events {
		text, err := os.ReadFile(filepath.Join(in.dir, "events", ev, "format"))
		if errors.Is(err, os.ErrNotExist) {
			in.missing = append(in.missing, ev)
			continue
		}
		if err != nil {
			return fmt.Errorf("ftrace: %s: %w", ev, err)
		}
		f, err := ParseFormat(string(text))
		if err != nil {
			return fmt.Errorf("ftrace: %s: %w", ev, err)
		}
		if err := in.write(filepath.Join("events", ev, "enable"), "1"); err != nil {
			return err
		}
		in.formats[f.ID] = f
		in.enabled = append(in.enabled, ev)
	}
	size := os.Getpagesize()
	if b, err := os.ReadFile(filepath.Join(in.dir, "buffer_subbuf_size_kb")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n <= 1024 {
			size = n << 10
		}
	}
	in.page = make([]byte, size)
	ents, err := os.ReadDir(filepath.Join(in.dir, "per_cpu"))
	if err != nil {
		return fmt.Errorf("ftrace: %w", err)
	}
	for _, e := range ents {
		cpu, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "cpu"))
		if err != nil || !strings.HasPrefix(e.Name(), "cpu") {
			continue
		}
		fd, err := unix.Open(filepath.Join(in.dir, "per_cpu", e.Name(), "trace_pipe_raw"), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // an offline CPU
		}
		in.cpus = append(in.cpus, cpuPipe{cpu: cpu, fd: fd})
	}
	if len(in.cpus) == 0 {
		return fmt.Errorf("ftrace: no per-CPU trace_pipe_raw could be opened in %s", in.dir)
	}
	return nil
}

// Formats returns the enabled events' formats by event ID.
func (in *Instance) Formats() map[uint16]*Format { return in.formats }

// Missing lists the requested events the kernel does not have.
func (in *Instance) Missing() []string { return in.missing }

// Read reads what every CPU's buffer holds now and calls fn for each
// record (see DecodePage). It returns the number of events the kernel
// said it dropped before pages read now.
func (in *Instance) Read(fn func(cpu int, ts uint64, rec []byte)) (missed uint64, err error) {
	for _, c := range in.cpus {
		for {
			n, err := unix.Read(c.fd, in.page)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if n <= 0 || err != nil {
				if err != nil && !errors.Is(err, unix.EAGAIN) {
					return missed, fmt.Errorf("ftrace: read cpu %d: %w", c.cpu, err)
				}
				break
			}
			cpu := c.cpu
			info, derr := DecodePage(in.page[:n], in.header, func(ts uint64, rec []byte) { fn(cpu, ts, rec) })
			if info.Missed {
				missed += max(info.MissedCount, 1)
			}
			if derr != nil {
				return missed, fmt.Errorf("ftrace: cpu %d: %w", c.cpu, derr)
			}
		}
	}
	return missed, nil
}

// Dropped returns the events the instance's buffers lost (overwritten
// before they were read, or dropped when full), from per_cpu/*/stats.
func (in *Instance) Dropped() uint64 {
	var n uint64
	for _, c := range in.cpus {
		b, err := os.ReadFile(filepath.Join(in.dir, "per_cpu", "cpu"+strconv.Itoa(c.cpu), "stats"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || (k != "overrun" && k != "dropped events") {
				continue
			}
			if x, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				n += x
			}
		}
	}
	return n
}

// Close closes the pipes and removes the instance. Removing it disables
// its events (the kernel's instance_rmdir: event_trace_del_tracer clears
// every event of the instance, then waits once for the tracepoints'
// grace periods), so they are disabled here one by one only when the
// removal fails, not to leave them recording.
func (in *Instance) Close() error {
	for _, c := range in.cpus {
		unix.Close(c.fd)
	}
	in.cpus = nil
	if in.dir == "" {
		return nil
	}
	err := removeDir(in.dir)
	if err != nil {
		for _, ev := range in.enabled {
			_ = in.write(filepath.Join("events", ev, "enable"), "0")
		}
	}
	in.enabled = nil
	in.dir = ""
	return err
}

func (in *Instance) write(name, value string) error {
	p := filepath.Join(in.dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("ftrace: %w", err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ftrace: write %q to %s: %w", value, p, err)
	}
	return nil
}

// removeDir removes an instance; the kernel refuses while a reader of a
// previous close is still leaving, so it tries for a moment.
func removeDir(dir string) error {
	var err error
	for range 50 {
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("ftrace: remove instance %s: %w", dir, err)
}

func tracefsRoot(root string) (string, error) {
	cands := []string{root}
	if root == "" {
		cands = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}
	}
	for _, c := range cands {
		if st, err := os.Stat(filepath.Join(c, "instances")); err == nil && st.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("ftrace: no tracefs with instances at %s", strings.Join(cands, " or "))
}

// RemoveStale removes the instances named PREFIX-PID or PREFIX-PID-ANY
// whose process PID is gone (a tracer killed before its Close), and
// returns how many it removed. root is as in Options.
func RemoveStale(root, prefix string) (int, error) {
	root, err := tracefsRoot(root)
	if err != nil {
		return 0, err
	}
	dir := filepath.Join(root, "instances")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("ftrace: %w", err)
	}
	n := 0
	var errs []error
	for _, e := range ents {
		pid, ok := StalePid(e.Name(), prefix)
		if !ok {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
			continue // alive
		}
		if err := removeDir(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
