package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iotrace/iotrace/internal/bytesize"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw/live"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/interrupt"
)

// pickLiveBackend returns the backend named by opts.Backend, or else the
// first live backend that can run here and trace what opts ask (the
// ptrace backend only a command), or an error that says why none can.
func pickLiveBackend(opts backend.Options) (backend.Backend, error) {
	return pickBackend(liveBackends(), opts)
}

// pickBackend returns the backend of bs named by opts.Backend, or else the
// first available here that can trace what opts ask, or an error saying
// why none is: the reasons of the backends for this operating system
// only (a non-root user on Linux is not told that ETW needs Windows),
// unless every backend is for another one.
func pickBackend(bs []backend.Backend, opts backend.Options) (backend.Backend, error) {
	var why, otherOS []string
	for _, b := range bs {
		if opts.Backend != "" && b.Name() != opts.Backend {
			continue
		}
		err := b.Available()
		if s, ok := b.(backend.Selector); ok && err == nil {
			err = s.Supports(opts)
		}
		if err != nil {
			if opts.Backend != "" {
				return nil, fmt.Errorf("--backend %s: %v", opts.Backend, err)
			}
			reason := fmt.Sprintf("%s: %v", b.Name(), err)
			if errors.Is(err, backend.ErrOtherOS) {
				otherOS = append(otherOS, reason)
			} else {
				why = append(why, reason)
			}
			continue
		}
		if len(why) > 0 {
			opts.Warnf(fmt.Sprintf("using the %s backend (%s)", b.Name(), strings.Join(why, "; ")))
		}
		return b, nil
	}
	if opts.Backend != "" {
		var names []string
		for _, b := range bs {
			names = append(names, b.Name())
		}
		return nil, fmt.Errorf("--backend %q: no such backend (want %s)", opts.Backend, strings.Join(names, ", "))
	}
	if len(why) == 0 {
		why = otherOS
	}
	if len(why) == 0 {
		why = append(why, "this build of iotrace has no live tracing backend")
	}
	return nil, fmt.Errorf("cannot trace this machine: %s", strings.Join(why, "; "))
}

// runLive traces this machine with the first available live backend into
// sink until ctx is done, the command in opts exits, or opts.Duration
// elapses. The first SIGINT or SIGTERM cancels ctx (package interrupt,
// the process's one receiver of them), and the backend stops cleanly: it
// detaches everything and ends the stream with its Stats. Warnings go to
// stderr when opts.Warn is unset.
func runLive(ctx context.Context, opts backend.Options, sink event.Sink) error {
	return runLiveTo(ctx, opts, sink, os.Stderr)
}

func runLiveTo(ctx context.Context, opts backend.Options, sink event.Sink, stderr io.Writer) error {
	if err := checkLiveOptions(opts); err != nil {
		return err
	}
	var b backend.Backend
	if opts.Warn == nil {
		var mu sync.Mutex
		opts.Warn = func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			name := "live"
			if b != nil {
				name = b.Name()
			}
			fmt.Fprintf(stderr, "iotrace: %s: %s\n", name, msg)
		}
	}
	b, err := pickLiveBackend(opts)
	if err != nil {
		return err
	}
	sink, restore := startupMemory(sink)
	defer restore()
	// A kernel session outlives a process that quits without its clean
	// stop (Windows).
	defer interrupt.OnQuit(ctx, live.StopActive)()
	return b.Run(ctx, opts, sink)
}

// checkLiveOptions refuses what would trace nothing or forever by
// mistake: a negative --duration (which would mean no limit) and a --pid
// of no running process.
func checkLiveOptions(opts backend.Options) error {
	if opts.Duration < 0 {
		return fmt.Errorf("--duration %v: want a positive duration (or none to trace until stopped)", opts.Duration)
	}
	if opts.WaitWriteback < 0 {
		return fmt.Errorf("--wait-writeback %v: want a positive timeout", opts.WaitWriteback)
	}
	if opts.WaitWriteback > 0 && len(opts.Command) == 0 {
		return fmt.Errorf("--wait-writeback waits for what a command wrote: give the command after --")
	}
	for _, p := range opts.Pids {
		if !pidExists(p) {
			return fmt.Errorf("--pid %d: no such process", p)
		}
	}
	return nil
}

// commandStatus makes the traced command's exit status iotrace's, as
// strace does: it sets opts.CommandExited and returns a function that
// turns the trace's result into the command's: err itself when iotrace
// failed, else an ExitError with the command's status when that is not 0.
func commandStatus(opts *backend.Options) func(err error) error {
	var exit *backend.CommandExit
	opts.CommandExited = func(e backend.CommandExit) { exit = &e }
	return func(err error) error {
		if err != nil || exit == nil || exit.Status == 0 {
			return err
		}
		return &ExitError{Code: exit.Status, Err: errors.New(exitMessage(opts.Command[0], *exit))}
	}
}

// liveFlags are the flags trace and record share.
type liveFlags struct {
	duration      time.Duration
	bufferSize    string
	stacks        string
	stackWalk     string
	waitWriteback time.Duration
	backend       string
	quiet         bool
}

func addLiveFlags(cmd *cobra.Command, l *liveFlags) {
	fs := cmd.Flags()
	fs.DurationVar(&l.duration, "duration", 0, "stop after this long (10s, 5m); default: until Ctrl-C or the command exits")
	fs.StringVar(&l.bufferSize, "buffer-size", "", "kernel buffer size (bytes, or with K, M, G suffix); default: the backend's (8M for eBPF, 1M per buffer for ETW, which takes 4K to 16M)")
	fs.DurationVar(&l.waitWriteback, "wait-writeback", 0, "with -- CMD: after it exits, keep tracing until the files it wrote are written back to disk (at most TIMEOUT, 30s without one), so that their writeback I/O is in the trace; without it the trace counts the pages it left dirty")
	fs.Lookup("wait-writeback").NoOptDefVal = "30s"
	addQuietFlag(cmd, &l.quiet)
	fs.StringVar(&l.backend, "backend", "", "the live backend: ebpf (root), ptrace (a command and its descendants without root; file layer only), etw (Windows); default: the first that can run here (iotrace backends)")
}

// addCaptureStacksFlag binds --stacks, the stacks a live trace captures
// (trace, record, run; report's --stacks reports a file's stacks).
func addCaptureStacksFlag(cmd *cobra.Command, l *liveFlags) {
	cmd.Flags().StringVar(&l.stacks, "stacks", "", "capture the call stack of each event: user (the code that asked for the I/O), kernel (the kernel's path to a block I/O), or both (docs/stacks.md)")
	cmd.Flags().StringVar(&l.stackWalk, "stack-walk", "", "how user stacks are walked: tables (unwind tables from each module's .eh_frame: through code without frame pointers; the default) or frame-pointers (cheaper, incomplete through code built without them)")
}

// stacksInto sets opts's stack options from --stacks and --stack-walk.
func (l *liveFlags) stacksInto(opts *backend.Options) error {
	opts.Backend = l.backend
	var err error
	if opts.Stacks, err = backend.ParseStacks(l.stacks); err != nil {
		return err
	}
	opts.StackWalk, err = backend.ParseStackWalk(l.stackWalk)
	return err
}

// parseSize parses "8M", "512K", "1G" or a byte count (bytesize.Parse);
// "" is 0: the default.
func parseSize(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	return bytesize.Parse(s)
}

// commandArgs returns the command after "--", rejecting other arguments.
func commandArgs(cmd *cobra.Command, args []string) ([]string, error) {
	dash := cmd.ArgsLenAtDash()
	if dash < 0 {
		if len(args) > 0 {
			return nil, fmt.Errorf("unexpected argument %q: put the command to trace after --", args[0])
		}
		return nil, nil
	}
	if dash > 0 {
		return nil, fmt.Errorf("unexpected argument %q: put the command to trace after --", args[0])
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("no command after --")
	}
	if err := checkCommand(args[0]); err != nil {
		return nil, err
	}
	return args, nil
}

// summary counts events and, at the end, prints one line with the count
// and the events lost, so that loss is never silent.
type summary struct {
	event.Sink
	w io.Writer
	// events written: stored by the stream's goroutine alone (a load and
	// a store, no locked add), loaded by the status line's.
	events atomic.Uint64
	verb   string
	failed error // the output's first error
}

func (s *summary) Event(e *event.Event) error {
	if err := s.Sink.Event(e); err != nil {
		s.fail(err)
		return err
	}
	s.events.Store(s.events.Load() + 1)
	return nil
}

func (s *summary) Fact(f *event.Fact) error {
	err := s.Sink.Fact(f)
	s.fail(err)
	return err
}

// fail remembers the first error of the output.
func (s *summary) fail(err error) {
	if s.failed == nil {
		s.failed = err
	}
}

func (s *summary) End(t *event.Trailer) error {
	err := s.Sink.End(t)
	s.fail(err)
	lost := t.Stats.Total(event.CountLost)
	if s.failed != nil {
		// The kernel's count says nothing of what the output dropped.
		fmt.Fprintf(s.w, "iotrace: %s %d events (%d lost by the kernel), then writing the output failed: %v; the output lacks the events after that\n", s.verb, s.events.Load(), lost, s.failed)
		return err
	}
	fmt.Fprintf(s.w, "iotrace: %s %d events, %d events lost\n", s.verb, s.events.Load(), lost)
	return err
}

// exitMessage says how the traced command ended: "make exited with status
// 2", "make was killed by SIGTERM (exit status 143)".
func exitMessage(name string, e backend.CommandExit) string {
	if e.Signal != "" {
		return fmt.Sprintf("%s was killed by %s (exit status %d)", name, e.Signal, e.Status)
	}
	return fmt.Sprintf("%s exited with status %d", name, e.Status)
}
