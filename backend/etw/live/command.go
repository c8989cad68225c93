package live

import (
	"context"
	"fmt"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// settleChild is called when tracing stops before the command was seen to
// exit: it returns the exit if it has come meanwhile; otherwise it kills
// the command on cancel (Ctrl-C) or leaves it running with a warning (the
// duration is over) and returns nil.
func settleChild(ctx context.Context, child Child, done <-chan childExit, name string, warn func(string)) *childExit {
	select {
	case x := <-done:
		return &x
	default:
	}
	if ctx.Err() != nil {
		child.Kill()
	} else {
		warn(fmt.Sprintf("%s (pid %d) is still running, no longer traced", name, child.Pid()))
	}
	return nil
}

// startCommand starts opts.Command suspended, found as CreateProcess
// finds it (program.go), its standard output going to
// opts.CommandStdout when set, and returns it with what carries that
// output (for waitOutput).
func startCommand(api API, opts *backend.Options) (Child, *commandIO, error) {
	app, err := findProgram(opts.Command[0], api.ProgramSearch(), api.IsFile)
	if err != nil {
		return nil, nil, fmt.Errorf("start %q: %w", opts.Command[0], err)
	}
	cio, err := newCommandIO(opts.CommandStdout)
	if err != nil {
		return nil, nil, fmt.Errorf("start %q: %w", opts.Command[0], err)
	}
	child, err := api.StartSuspended(app, opts.Command, cio.stdio)
	cio.started()
	if err != nil {
		return nil, nil, fmt.Errorf("start %q (%s): %w", opts.Command[0], app, err)
	}
	return child, cio, nil
}

// waitOutput waits, when the command has exited, for the rest of its
// output to reach opts.CommandStdout; a command left running (or killed)
// is not waited for (one left running goes on writing there, as it would
// into a file).
func waitOutput(cio *commandIO, exit *childExit, d time.Duration, warn func(string)) {
	if cio == nil || exit == nil {
		return
	}
	if err := cio.wait(d); err != nil {
		warn(err.Error())
	}
}

// childExit is how a traced command ended.
type childExit struct {
	code uint32
	err  error
}

// waitChild waits for c on its own goroutine.
func waitChild(c Child) <-chan childExit {
	ch := make(chan childExit, 1)
	go func() {
		code, err := c.Wait()
		ch <- childExit{code: code, err: err}
	}()
	return ch
}

// reportExit passes the traced command's exit status to
// opts.CommandExited, as Windows shells show it (%ERRORLEVEL%,
// $LASTEXITCODE: the code as a signed 32-bit number, so that an
// NTSTATUS such as 0xC0000005 reads -1073741819 and os.Exit passes it on
// unchanged), and records it in stats.
func reportExit(exit *childExit, opts *backend.Options, stats *event.Stats) {
	if exit == nil {
		return
	}
	if exit.err != nil {
		opts.Warnf(fmt.Sprintf("wait for %s: %v (exit status unknown)", opts.Command[0], exit.err))
		return
	}
	stats.Add(event.CountInfo, StatCommandExit, uint64(exit.code))
	if opts.CommandExited != nil {
		opts.CommandExited(backend.CommandExit{Status: int(int32(exit.code))})
	}
}

// Child is a process started suspended for `iotrace trace -- cmd`.
type Child interface {
	// Pid is the process id.
	Pid() uint32
	// Resume lets its first thread run.
	Resume() error
	// Wait waits for it to exit and returns its exit code
	// (GetExitCodeProcess).
	Wait() (exitCode uint32, err error)
	// Kill terminates it, unless Wait has returned.
	Kill()
}
