package cli

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/input"
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
	line := status.NewLine(stderr, terminalWidth(stderr))
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

// readProgress shows how far the read of in (the file name) has come on
// stderr, when that is a terminal, not quiet, and
// not the terminal the output goes to (sharesOutput): once the read has
// taken a second, a bar of the bytes read when the reader can say how
// many it reads (input.Progress), else the events so far; redrawn once a
// second. It returns next wrapped to count the events and to clear the
// line before the stream's end goes on (its warnings), and the function
// that clears it for a read that stopped before its end.
func readProgress(stderr io.Writer, in input.Reader, name string, next event.Sink, quiet, sharesOutput bool) (event.Sink, func()) {
	if quiet || sharesOutput || !isTerminal(stderr) {
		return next, func() {}
	}
	line := status.NewLine(stderr, terminalWidth(stderr))
	c := &countSink{Sink: next}
	if name == "-" {
		name = "standard input"
	} else {
		name = filepath.Base(name)
	}
	start := time.Now()
	var bar *status.Bar // the ticker's once started
	if _, total, ok := input.Progress(in); ok {
		bar = status.NewBar(name, total, 20)
	}
	c.stop = status.Start(line, time.Second, func() string {
		if bar == nil {
			return status.Reading(name, c.n.Load(), time.Since(start))
		}
		done, _, _ := input.Progress(in)
		return bar.Text(done)
	})
	return c, c.stop
}

// terminalWidth returns the columns of the terminal w (x/term), 0 when
// not known.
func terminalWidth(w io.Writer) func() int {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	return func() int {
		n, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return n
	}
}

// countSink counts the events for a progress line (a load and a store:
// the stream's goroutine alone writes) and stops the line at the end.
type countSink struct {
	event.Sink
	n    atomic.Uint64
	stop func()
}

func (c *countSink) Event(e *event.Event) error {
	c.n.Store(c.n.Load() + 1)
	return c.Sink.Event(e)
}

func (c *countSink) End(t *event.Trailer) error {
	c.stop()
	return c.Sink.End(t)
}

// addQuietFlag binds -q, --quiet.
func addQuietFlag(cmd *cobra.Command, quiet *bool) {
	cmd.Flags().BoolVarP(quiet, "quiet", "q", false, "no status line or progress bar on standard error (drawn only on a terminal: events, bytes, lost and time of a live trace; how far a long read has come)")
}
