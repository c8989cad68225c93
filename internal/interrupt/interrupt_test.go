package interrupt

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exits records the exit codes a handler asked for.
type exits struct {
	mu    sync.Mutex
	codes []int
	got   chan int
}

func newExits() *exits { return &exits{got: make(chan int, 4)} }

func (e *exits) exit(code int) {
	e.mu.Lock()
	e.codes = append(e.codes, code)
	e.mu.Unlock()
	e.got <- code
}

// TestFirstSignalStopsCleanly: one signal cancels the context and says how
// to quit at once; nothing exits and no quit step runs.
func TestFirstSignalStopsCleanly(t *testing.T) {
	var w bytes.Buffer
	ex := newExits()
	ctx, h := newHandler(context.Background(), &w, ex.exit)
	ran := false
	defer OnQuit(ctx, func() { ran = true })()
	h.deliver(os.Interrupt)
	select {
	case <-ctx.Done():
	default:
		t.Fatal("the first signal did not cancel the context")
	}
	time.Sleep(20 * time.Millisecond)
	if ran || len(ex.codes) != 0 {
		t.Errorf("after one signal: quit step ran %v, exits %v", ran, ex.codes)
	}
	if !strings.Contains(w.String(), "stopping (interrupt again to quit at once)") {
		t.Errorf("message %q", w.String())
	}
}

// TestSecondSignalQuits: a second signal runs the quit steps still
// registered, newest first, then exits with 128 + the signal's number.
func TestSecondSignalQuits(t *testing.T) {
	var w bytes.Buffer
	ex := newExits()
	ctx, h := newHandler(context.Background(), &w, ex.exit)
	var order []string
	OnQuit(ctx, func() { order = append(order, "first") })
	remove := OnQuit(ctx, func() { order = append(order, "removed") })
	OnQuit(ctx, func() { order = append(order, "last") })
	remove()
	t0 := time.Now()
	h.deliverAt(syscall.SIGTERM, t0)
	h.deliverAt(syscall.SIGTERM, t0.Add(Repeat))
	select {
	case code := <-ex.got:
		if code != 128+15 {
			t.Errorf("exit %d, want 143", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit after two signals")
	}
	if strings.Join(order, ",") != "last,first" {
		t.Errorf("quit steps ran %v, want last,first", order)
	}
	if !strings.Contains(w.String(), "quitting without a clean stop") {
		t.Errorf("message %q", w.String())
	}
}

// TestRepeatIsOneRequest: a signal right after the first (timeout(1)
// signals the process, then its process group) is the same request, not
// a second one.
func TestRepeatIsOneRequest(t *testing.T) {
	ex := newExits()
	ctx, h := newHandler(context.Background(), &bytes.Buffer{}, ex.exit)
	ran := false
	OnQuit(ctx, func() { ran = true })
	t0 := time.Now()
	h.deliverAt(os.Interrupt, t0)
	h.deliverAt(os.Interrupt, t0.Add(time.Millisecond))
	h.deliverAt(syscall.SIGTERM, t0.Add(Repeat-time.Millisecond))
	time.Sleep(20 * time.Millisecond)
	if ran || len(ex.codes) != 0 {
		t.Errorf("signals within %v of the first quit (step ran %v, exits %v)", Repeat, ran, ex.codes)
	}
}

// TestThirdSignalExitsAtOnce: a quit step that hangs does not keep the
// process alive past a third signal.
func TestThirdSignalExitsAtOnce(t *testing.T) {
	ex := newExits()
	ctx, h := newHandler(context.Background(), &bytes.Buffer{}, ex.exit)
	block := make(chan struct{})
	defer close(block)
	OnQuit(ctx, func() { <-block })
	t0 := time.Now()
	h.deliverAt(os.Interrupt, t0)
	h.deliverAt(os.Interrupt, t0.Add(time.Second))
	h.deliverAt(os.Interrupt, t0.Add(2*time.Second))
	select {
	case code := <-ex.got:
		if code != 130 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a hanging quit step kept the process past the third signal")
	}
}

// OnQuit without a handler in the context does nothing (a command called
// directly by a test).
func TestOnQuitWithoutHandler(t *testing.T) {
	OnQuit(context.Background(), func() { t.Error("ran") })()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
