// Package backend defines what every live tracing backend provides: a small
// [Backend] interface, the [Options] that push filters down to the kernel,
// and [ErrNotSupported] for a backend that cannot run on this machine.
//
// A backend delivers its trace to an [event.Sink]; the [event.Stats] in the
// trailer it ends with count what was received, lost (with the reason),
// left unpaired and left unresolved.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/iotrace/iotrace/event"
)

// ErrNotSupported is wrapped by Available and Run when a backend cannot run
// on this operating system or machine. The wrapping error says why.
var ErrNotSupported = errors.New("not supported")

// Backend is a live source of events.
type Backend interface {
	// Name is the short name users select the backend by ("ebpf", "etw").
	Name() string
	// Description says in one line what the backend traces.
	Description() string
	// Available returns nil when the backend can run here, or an error
	// that says exactly why not (wrapping ErrNotSupported when the OS or
	// kernel lacks what it needs, or a permission error).
	Available() error
	// Run traces until ctx is cancelled, the traced command exits, or
	// opts.Duration elapses. It calls sink.Begin first and sink.End last
	// (also on error, when Begin was called), and detaches everything it
	// attached before returning.
	Run(ctx context.Context, opts Options, sink event.Sink) error
}

// Options configure a live trace. Filters here are pushed down into the
// kernel where the backend can; the rest is applied in user space.
type Options struct {
	// Command, when set, is started after the probes are attached; only it
	// and its descendants are traced and the trace stops when it exits.
	Command []string
	// CommandStarted, when set, is called with the pid of Command once it
	// runs.
	CommandStarted func(pid int)
	// CommandExited, when set, is called once, before Run returns, with
	// Command's exit status when it exited while traced: its exit code,
	// or 128 plus the signal number when a signal killed it (as shells
	// report it). It is not called when the command is still running.
	CommandExited func(status int)
	// CommandStdout, when set, is Command's standard output instead of
	// iotrace's: the CLI sends it to stderr when the trace itself goes to
	// stdout, so that the command's output never lands in the trace.
	// Every backend honours it; an *os.File is handed to the command
	// as it is, any other writer gets what the command writes through a
	// pipe.
	CommandStdout io.Writer
	// Pids restricts tracing to these processes (and, with FollowChildren,
	// their descendants).
	Pids []uint32
	// FollowChildren extends Pids to processes forked after the start.
	FollowChildren bool
	// Comms restricts tracing to processes with these names.
	Comms []string
	// Layers selects the layers to trace; empty means all the backend has.
	Layers []event.Layer
	// Ops selects the ops to trace; empty means all.
	Ops []event.Op
	// Duration stops the trace after this long; 0 means no limit.
	Duration time.Duration
	// WaitWriteback, with a Command, keeps tracing after it exits until
	// the files it wrote have no dirty page left (written back to disk,
	// so that their writeback I/O is in the trace), at most this long;
	// reaching the limit is counted. 0 stops at its exit (the trace then
	// counts the pages it left dirty).
	WaitWriteback time.Duration
	// BufferSize is the kernel buffer size in bytes (ring buffer, ETW
	// buffers); 0 means the backend's default.
	BufferSize int
	// Stacks selects the stacks captured with each event (--stacks);
	// StacksNone captures none and costs nothing.
	Stacks Stacks
	// StackWalk selects how user stacks are walked (--stack-walk).
	StackWalk StackWalk
	// Warn is called with a one-line message when something goes wrong
	// while tracing (loss starts, a probe could not attach). May be nil.
	Warn func(msg string)
	// Progress, when set, is called about once a second while the trace
	// runs with the counters so far: what the trailer would carry if the
	// trace ended then (events lost, unpaired, unresolved, by reason).
	// iotrace serve exports them live. It is called from the backend's
	// reading goroutine and must return quickly; the Stats are the
	// callee's to keep.
	Progress func(event.Stats)
}

// ProgressEvery is how often a backend calls Options.Progress.
const ProgressEvery = time.Second

// Stacks selects the call stacks a backend captures.
type Stacks uint8

// Stack selections: the code that issued each I/O (user), the kernel's
// path to it (kernel), or both.
const (
	StacksNone   Stacks = 0
	StacksUser   Stacks = 1
	StacksKernel Stacks = 2
	StacksBoth   Stacks = StacksUser | StacksKernel
)

// ParseStacks reads a --stacks value: none, user, kernel or both.
func ParseStacks(s string) (Stacks, error) {
	switch s {
	case "", "none":
		return StacksNone, nil
	case "user":
		return StacksUser, nil
	case "kernel":
		return StacksKernel, nil
	case "both":
		return StacksBoth, nil
	}
	return 0, fmt.Errorf("--stacks %q: want user, kernel, both or none", s)
}

// StackWalk selects how a backend walks user stacks.
type StackWalk uint8

// Stack walks.
const (
	// WalkTables walks with unwind tables built from each module's call
	// frame information (.eh_frame, .debug_frame): through code built
	// without frame pointers, every frame checked (Linux x86-64; elsewhere
	// as WalkFramePointers).
	WalkTables StackWalk = 0
	// WalkFramePointers follows frame pointers (the kernel's walk):
	// cheaper, but it skips the caller of a function without a frame
	// pointer and ends early in code built without them.
	WalkFramePointers StackWalk = 1
)

// ParseStackWalk reads a --stack-walk value: tables or frame-pointers.
func ParseStackWalk(s string) (StackWalk, error) {
	switch s {
	case "", "tables":
		return WalkTables, nil
	case "frame-pointers":
		return WalkFramePointers, nil
	}
	return 0, fmt.Errorf("--stack-walk %q: want tables or frame-pointers", s)
}

// WantLayer reports whether opts select layer l.
func (o *Options) WantLayer(l event.Layer) bool {
	if len(o.Layers) == 0 {
		return true
	}
	for _, x := range o.Layers {
		if x == l {
			return true
		}
	}
	return false
}

// Warnf calls o.Warn when it is set.
func (o *Options) Warnf(msg string) {
	if o.Warn != nil {
		o.Warn(msg)
	}
}
