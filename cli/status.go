package cli

import (
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/status"
)

// liveStatus is the status line of a live trace (trace -o, record, run)
// on standard error: events, bytes written, events lost, elapsed, redrawn
// once a second (package status). It reads counters the trace keeps
// anyway: the events its summary counts, the output's size as published
// at its flushes, the losses of the backend's progress calls. A nil
// *liveStatus shows nothing; every method is a no-op on it.
type liveStatus struct {
	line  *status.Line
	lost  atomic.Uint64
	start time.Time
	stop  func()
}

// newLiveStatus returns the status line of cmd when its standard error is
// a terminal that nothing else writes to in the meantime: not with
// --quiet, not while a traced command (which writes to the same terminal)
// runs, not when the trace itself goes to that terminal (toStdout: the
// output is standard output, and that is a terminal). Else nil. The
// command's standard error then goes through the line, so that whatever
// the command says clears the status first.
func newLiveStatus(cmd *cobra.Command, quiet bool, command []string, toStdout bool) *liveStatus {
	stderr := cmd.ErrOrStderr()
	if quiet || len(command) > 0 || !isTerminal(stderr) || (toStdout && isTerminal(cmd.OutOrStdout())) {
		return nil
	}
	f := stderr.(*os.File) // isTerminal
	line := status.NewLine(stderr, func() int {
		w, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return w
	})
	cmd.SetErr(line)
	return &liveStatus{line: line, stop: func() {}}
}

// watch takes the losses from the backend's progress calls (about once a
// second), before calling the one opts had.
func (s *liveStatus) watch(opts *backend.Options) {
	if s == nil {
		return
	}
	next := opts.Progress
	opts.Progress = func(st event.Stats) {
		s.lost.Store(st.Total(event.CountLost))
		if next != nil {
			next(st)
		}
	}
}

// run starts drawing: events and, when bytes is not nil, the size written
// (of a budget when of is not 0). Both are called from the line's
// goroutine, once a second.
func (s *liveStatus) run(events func() uint64, bytes func() (n, of uint64)) {
	if s == nil {
		return
	}
	s.start = time.Now()
	s.stop = status.Start(s.line, time.Second, func() string {
		c := status.Counts{Events: events(), Lost: s.lost.Load(), Elapsed: time.Since(s.start)}
		if bytes != nil {
			c.Bytes, c.BytesOf = bytes()
			c.HaveBytes = true
		}
		return status.Format(c)
	})
}

// done stops drawing and clears the line.
func (s *liveStatus) done() {
	if s != nil {
		s.stop()
	}
}

// sizeOf is a counter of bytes the stream's goroutine publishes for the
// status line's: at each flush, or each write of a buffered output.
type sizeOf struct{ n atomic.Uint64 }

func (z *sizeOf) get() (uint64, uint64) { return z.n.Load(), 0 }

// countingWriter counts what it writes into n.
type countingWriter struct {
	w io.Writer
	n *sizeOf
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.n.Add(uint64(n))
	return n, err
}
