// Package interrupt is iotrace's one handler of the signals that ask it to
// stop: SIGINT and SIGTERM (on Windows Ctrl-C, Ctrl-Break and closing the
// console, which Go delivers as the same two).
//
// The first signal starts a clean stop: it cancels the context every
// command runs under, and a recording then detaches, drains, writes its
// trailer and renames its file into place. A second signal, while that
// stop runs, is the only way to quit without it (a repeat within Repeat
// of the first is the same request: timeout(1) sends its signal to the
// process and then to its process group, so iotrace receives two at
// once): the steps registered
// with OnQuit run first (a recording renames its partial file into place,
// so that what was flushed is kept under its name), then the process
// exits with 128 + the signal's number. A third signal exits at once.
//
// There is exactly one receiver of these signals in the process: when the
// main function and a command both received them, one Ctrl-C could count
// as two and quit without a clean stop.
package interrupt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Signals are the signals that ask iotrace to stop.
var Signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// Repeat is how soon after the first signal another one counts as the
// same request, not as a second one.
const Repeat = 300 * time.Millisecond

// Handler receives Signals for the whole process (see the package doc).
type Handler struct {
	cancel context.CancelFunc
	w      io.Writer
	exit   func(code int)

	mu    sync.Mutex
	n     int       // signals acted on
	first time.Time // when the first came
	quits []*quitStep

	sig  chan os.Signal
	done chan struct{}
}

type quitStep struct{ fn func() }

type ctxKey struct{}

// Notify starts receiving Signals: the returned context, derived from
// parent, is canceled by the first one; messages go to w. Call Stop when
// the command has returned.
func Notify(parent context.Context, w io.Writer) (context.Context, *Handler) {
	return notify(parent, w, os.Exit)
}

func notify(parent context.Context, w io.Writer, exit func(int)) (context.Context, *Handler) {
	ctx, h := newHandler(parent, w, exit)
	h.sig = make(chan os.Signal, 4)
	h.done = make(chan struct{})
	signal.Notify(h.sig, Signals...)
	go func() {
		for {
			select {
			case <-h.done:
				return
			case s := <-h.sig:
				h.deliver(s)
			}
		}
	}()
	return ctx, h
}

// newHandler returns a handler that exits through exit and receives no
// signal by itself (tests deliver them).
func newHandler(parent context.Context, w io.Writer, exit func(int)) (context.Context, *Handler) {
	h := &Handler{w: w, exit: exit}
	ctx, cancel := context.WithCancel(parent)
	h.cancel = cancel
	return context.WithValue(ctx, ctxKey{}, h), h
}

// Stop stops receiving the signals (they kill the process again) and
// cancels the context. When a second signal is quitting the process, Stop
// waits for that instead: a command that finished meanwhile must not exit
// as if it had stopped cleanly.
func (h *Handler) Stop() {
	h.mu.Lock()
	quitting := h.n >= 2
	h.mu.Unlock()
	if quitting {
		select {} // the quit goroutine exits the process
	}
	if h.sig != nil {
		signal.Stop(h.sig)
		close(h.done)
	}
	h.cancel()
}

// deliver acts on one signal received.
func (h *Handler) deliver(s os.Signal) {
	h.deliverAt(s, time.Now())
}

func (h *Handler) deliverAt(s os.Signal, now time.Time) {
	h.mu.Lock()
	if h.n == 1 && now.Sub(h.first) < Repeat {
		h.mu.Unlock()
		return // the first one again (sent to the process and its group)
	}
	if h.n == 0 {
		h.first = now
	}
	h.n++
	n := h.n
	steps := make([]*quitStep, len(h.quits))
	copy(steps, h.quits)
	h.mu.Unlock()
	switch n {
	case 1:
		h.cancel()
		fmt.Fprintf(h.w, "iotrace: stopping (%v again to quit at once)\n", s)
	case 2:
		fmt.Fprintln(h.w, "iotrace: quitting without a clean stop")
		// The steps run apart, so that a third signal still exits at
		// once if one of them hangs.
		go func() {
			for i := len(steps) - 1; i >= 0; i-- {
				steps[i].fn()
			}
			h.exit(exitCode(s))
		}()
	default:
		h.exit(exitCode(s))
	}
}

// exitCode is the shell's status for a process ended by s: 128 + its
// number.
func exitCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}

// OnQuit registers fn to run before the process quits on a second signal
// (see the package doc), when ctx comes from Notify; the returned function
// removes it. Steps run in the reverse order of their registration, in
// another goroutine than the command's, which may still be running: fn
// must be safe against it. Without a handler in ctx (tests calling a
// command directly) it does nothing.
func OnQuit(ctx context.Context, fn func()) (remove func()) {
	h, _ := ctx.Value(ctxKey{}).(*Handler)
	if h == nil {
		return func() {}
	}
	st := &quitStep{fn: fn}
	h.mu.Lock()
	h.quits = append(h.quits, st)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, q := range h.quits {
			if q == st {
				h.quits = append(h.quits[:i], h.quits[i+1:]...)
				return
			}
		}
	}
}
