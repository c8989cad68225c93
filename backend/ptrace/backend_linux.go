//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf"
	"github.com/iotrace/iotrace/backend/ebpf/procfs"
	"github.com/iotrace/iotrace/event"
)

// Available implements backend.Backend: Linux 5.3 or later
// (PTRACE_GET_SYSCALL_INFO), seccomp filters, and ptrace not disabled by
// Yama.
func (b *Backend) Available() error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("%w: uname: %v", backend.ErrNotSupported, err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil || major < 5 || major == 5 && minor < 3 {
		return fmt.Errorf("%w: kernel %s: the ptrace backend needs Linux 5.3 or later (PTRACE_GET_SYSCALL_INFO)", backend.ErrNotSupported, rel)
	}
	if st, err := os.ReadFile(b.procRoot() + "/self/status"); err == nil && !bytes.Contains(st, []byte("\nSeccomp:")) {
		return fmt.Errorf("%w: this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)", backend.ErrNotSupported)
	}
	if s, err := os.ReadFile(b.procRoot() + "/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(s)) == "3" {
		return fmt.Errorf("%w: ptrace is disabled on this machine (kernel.yama.ptrace_scope = 3)", backend.ErrNotSupported)
	}
	return nil
}

func (b *Backend) procRoot() string {
	if b.cfg.ProcRoot != "" {
		return b.cfg.ProcRoot
	}
	return "/proc"
}

// Run implements backend.Backend: it starts opts.Command under the
// tracer and traces it and its descendants until the last of them exits.
// When ctx is done first, the command gets a second to end by itself
// (Ctrl-C reaches it from the terminal too), then it and its descendants
// are killed: their seccomp filter needs the tracer (without it their
// traced calls would fail with ENOSYS), so they cannot go on untraced.
func (b *Backend) Run(ctx context.Context, opts backend.Options, sink event.Sink) error {
	if err := b.Available(); err != nil {
		return err
	}
	if err := b.Supports(opts); err != nil {
		return err
	}
	path, err := exec.LookPath(opts.Command[0])
	if err != nil {
		return fmt.Errorf("command %q: %w", opts.Command[0], err)
	}
	prog, err := Filter(runtime.GOARCH, TracedCalls(runtime.GOARCH, opts.Ops))
	if err != nil {
		return err
	}
	if opts.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Duration)
		defer cancel()
	}
	errc := make(chan error, 1)
	go func() {
		// Every ptrace request comes from the thread that attached;
		// the thread is left locked, so it ends with this goroutine.
		runtime.LockOSThread()
		errc <- b.trace(ctx, opts, sink, path, prog)
	}()
	return <-errc
}

// trace starts the command through the helper, seizes it, sends it the
// filter and handles stops until the last traced process is gone.
func (b *Backend) trace(ctx context.Context, opts backend.Options, sink event.Sink, path string, prog []Instruction) error {
	origin := bootNanos()
	host, _ := os.Hostname()
	var u unix.Utsname
	_ = unix.Uname(&u)
	hdr := event.Header{
		Source: event.SourcePtrace, OS: "linux", OSVersion: unix.ByteSliceToString(u.Release[:]), Hostname: host,
		CPUs: uint32(runtime.NumCPU()), PointerSize: 8, StartWall: time.Now().UnixNano(),
		Clock:   event.Clock{Kind: event.ClockBoottime, Freq: 1_000_000_000, Origin: int64(origin)},
		Command: strings.Join(opts.Command, " "),
		Tool:    "iotrace ptrace (file layer only: no block I/O)",
		Layers:  event.LayersOf(event.LayerFile),
	}
	if err := sink.Begin(&hdr); err != nil {
		return err
	}
	fs := &procfs.FS{Root: b.procRoot(), Origin: int64(origin)}
	dec := ebpf.NewDecoder(sink, origin, event.SourcePtrace, fs)
	dec.SelectOps(opts.Ops)
	if opts.Stacks&backend.StacksUser != 0 {
		dec.EnableStacks(b.procRoot())
	}
	var stats event.Stats
	end := func(err error) error {
		dec.Stats(&stats)
		if err == nil {
			err = dec.Err()
		}
		last := max(dec.LastTime(), dec.Time(bootNanos()))
		if eerr := sink.End(&event.Trailer{End: last, Stats: stats}); err == nil {
			err = eerr
		}
		return err
	}

	stdout, copied, err := commandStdout(opts.CommandStdout)
	if err != nil {
		return end(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return end(err)
	}
	defer pw.Close()
	attr := &os.ProcAttr{
		Env:   append(os.Environ(), childEnv+"=3"),
		Files: []*os.File{os.Stdin, stdout, os.Stderr, pr},
	}
	p, err := os.StartProcess("/proc/self/exe", append([]string{childArg0, path}, opts.Command...), attr)
	pr.Close()
	if copied != nil {
		stdout.Close() // the command's copy is what keeps the pipe open
	}
	if err != nil {
		return end(fmt.Errorf("starting %s: %w", opts.Command[0], err))
	}
	defer p.Release()
	const options = unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
		unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_EXITKILL
	if err := ptrace(unix.PTRACE_SEIZE, p.Pid, 0, options); err != nil {
		_ = p.Kill()
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.Pid, &ws, 0, nil)
		return end(fmt.Errorf("ptrace(PTRACE_SEIZE) of the command: %w", err))
	}
	live := &liveSet{pids: map[int]bool{}}
	t := newTracer(opts, dec, fs, p.Pid, live)
	if _, err := pw.Write(encodeFilter(prog)); err != nil {
		live.kill()
	}
	pw.Close()
	if opts.CommandStarted != nil {
		opts.CommandStarted(p.Pid)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done:
		case <-time.After(time.Second):
			live.kill()
		}
	}()
	t.loop()
	close(done)
	<-stopped
	if copied != nil {
		<-copied
	}
	t.stats(&stats)
	if t.rootEnd && opts.CommandExited != nil {
		ws := t.rootWS
		if ws.Signaled() {
			opts.CommandExited(backend.CommandExit{Status: 128 + int(ws.Signal()), Signal: unix.SignalName(ws.Signal())})
		} else {
			opts.CommandExited(backend.CommandExit{Status: ws.ExitStatus()})
		}
	}
	if ctx.Err() != nil && t.rootEnd && t.rootWS.Signaled() && t.rootWS.Signal() == unix.SIGKILL {
		stats.Add(event.CountInfo, "the command was killed when the trace stopped (its seccomp filter needs the tracer)", 1)
	}
	return end(nil)
}

// commandStdout returns the command's standard output: w itself when it
// is a file, else a pipe copied into w until the command closes it (the
// channel is closed then).
func commandStdout(w io.Writer) (*os.File, chan struct{}, error) {
	if w == nil {
		return os.Stdout, nil, nil
	}
	if f, ok := w.(*os.File); ok {
		return f, nil, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(w, r)
		r.Close()
	}()
	return pw, done, nil
}
