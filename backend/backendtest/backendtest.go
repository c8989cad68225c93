package backendtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// Config describes how to exercise a backend.
type Config struct {
	// Options are the base options of every run (Command, BufferSize,
	// ...). Duration, Layers and Pids are set by the subtests; Duration
	// defaults to one second.
	Options backend.Options
	// Workload, when set, runs while the backend traces (it starts once
	// the backend has called Begin, and its context ends with the run):
	// the I/O the backend should see.
	Workload func(ctx context.Context) error
	// MinEvents is the number of events a run must at least deliver; 0
	// means 1.
	MinEvents int
	// Layers must each appear in a run; the layer subtest selects each
	// alone. Empty means LayerFile.
	Layers []event.Layer
	// Pid is the process the pid subtest selects; 0 picks the busiest
	// process of the first run.
	Pid uint32
	// CancelWithin bounds how long Run may take to return once its
	// context is cancelled; 0 means two seconds.
	CancelWithin time.Duration
	// Rules relax event checks the source legitimately breaks.
	Rules Rules
}

func (c *Config) defaults() {
	if c.Options.Duration == 0 {
		c.Options.Duration = time.Second
	}
	if c.MinEvents == 0 {
		c.MinEvents = 1
	}
	if len(c.Layers) == 0 {
		c.Layers = []event.Layer{event.LayerFile}
	}
	if c.CancelWithin == 0 {
		c.CancelWithin = 2 * time.Second
	}
}

// Run runs the conformance subtests on b: contract, cancel, sink-error,
// layers and pid. The backend must be available (check Available and
// testenv.RequirePrivileged before).
func Run(t *testing.T, b backend.Backend, cfg Config) {
	t.Helper()
	cfg.defaults()
	if err := b.Available(); err != nil {
		t.Fatalf("backend %s is not available: %v", b.Name(), err)
	}
	if b.Name() == "" || b.Description() == "" {
		t.Errorf("backend has no name (%q) or description (%q)", b.Name(), b.Description())
	}
	var first *Checker
	t.Run("contract", func(t *testing.T) {
		c, err := run(context.Background(), b, cfg.Options, cfg, NewChecker(cfg.Rules))
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if err := c.Err(); err != nil {
			t.Fatalf("stream violates the contract:\n%v", err)
		}
		if c.Events < cfg.MinEvents {
			t.Errorf("%d events, want at least %d", c.Events, cfg.MinEvents)
		}
		for _, l := range cfg.Layers {
			if c.PerLayer[l] == 0 {
				t.Errorf("no %s events (per layer: %v)", l, c.PerLayer)
			}
		}
		first = c
	})
	t.Run("cancel", func(t *testing.T) { testCancel(t, b, cfg) })
	t.Run("sink-error", func(t *testing.T) { testSinkError(t, b, cfg) })
	t.Run("layers", func(t *testing.T) {
		for _, l := range cfg.Layers {
			opts := cfg.Options
			opts.Layers = []event.Layer{l}
			c := NewChecker(cfg.Rules)
			c.PartialCauses = true
			c, err := run(context.Background(), b, opts, cfg, c)
			if err != nil {
				t.Fatalf("Run with --layer %s: %v", l, err)
			}
			if err := c.Err(); err != nil {
				t.Fatalf("layer %s: stream violates the contract:\n%v", l, err)
			}
			for got, n := range c.PerLayer {
				if got != l && got != event.LayerMarker {
					t.Errorf("selected layer %s, got %d %s events", l, n, got)
				}
			}
			if c.PerLayer[l] == 0 {
				t.Errorf("selected layer %s, got none of it", l)
			}
		}
	})
	t.Run("pid", func(t *testing.T) {
		pid := cfg.Pid
		if pid == 0 && first != nil {
			best := 0
			for p, n := range first.PerPid {
				if p != 0 && n > best {
					pid, best = p, n
				}
			}
		}
		if pid == 0 {
			t.Fatal("no pid to select: set Config.Pid or let the contract run see a process")
		}
		opts := cfg.Options
		opts.Pids = []uint32{pid}
		c := NewChecker(cfg.Rules)
		c.PartialCauses = true
		c, err := run(context.Background(), b, opts, cfg, c)
		if err != nil {
			t.Fatalf("Run with pid %d: %v", pid, err)
		}
		if err := c.Err(); err != nil {
			t.Fatalf("pid %d: stream violates the contract:\n%v", pid, err)
		}
		for p, n := range c.PerPid {
			if p != pid {
				t.Errorf("selected pid %d, got %d events of pid %d", pid, n, p)
			}
		}
		if c.PerPid[pid] == 0 {
			t.Errorf("selected pid %d, got none of its events", pid)
		}
	})
}

// run traces with opts into sink, running the workload once Begin was
// seen.
func run(ctx context.Context, b backend.Backend, opts backend.Options, cfg Config, c *Checker) (*Checker, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &startSink{Checker: c, started: make(chan struct{})}
	wait := startWorkload(ctx, cfg, s.started)
	err := b.Run(ctx, opts, s)
	cancel()
	werr := wait()
	if err == nil && werr != nil && !errors.Is(werr, context.Canceled) {
		err = werr
	}
	return c, err
}

// startWorkload runs cfg.Workload once started is closed, until ctx ends.
// The returned function waits for it and returns its error.
func startWorkload(ctx context.Context, cfg Config, started <-chan struct{}) (wait func() error) {
	if cfg.Workload == nil {
		return func() error { return nil }
	}
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-started:
			werr = cfg.Workload(ctx)
		case <-ctx.Done():
		}
	}()
	return func() error { wg.Wait(); return werr }
}

// startSink signals the first Begin.
type startSink struct {
	*Checker
	started chan struct{}
	once    sync.Once
}

func (s *startSink) Begin(h *event.Header) error {
	s.once.Do(func() { close(s.started) })
	return s.Checker.Begin(h)
}

// cancelSink cancels the run at the first event (or fact) it sees.
type cancelSink struct {
	*startSink
	cancel   context.CancelFunc
	once     sync.Once
	canceled time.Time
}

func (s *cancelSink) fire() {
	s.once.Do(func() {
		s.canceled = time.Now()
		s.cancel()
	})
}

func (s *cancelSink) Event(e *event.Event) error { s.fire(); return s.startSink.Event(e) }
func (s *cancelSink) Fact(f *event.Fact) error   { s.fire(); return s.startSink.Fact(f) }

func testCancel(t *testing.T, b backend.Backend, cfg Config) {
	opts := cfg.Options
	opts.Duration = 0 // only the cancel may stop it (or a command's exit)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewChecker(cfg.Rules)
	c.PartialCauses = true
	s := &cancelSink{startSink: &startSink{Checker: c, started: make(chan struct{})}, cancel: cancel}
	wait := startWorkload(ctx, cfg, s.started)
	// Backstop: a backend that sees nothing must still stop when
	// cancelled.
	backstop := time.AfterFunc(10*time.Second, s.fire)
	defer backstop.Stop()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, opts, s) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10*time.Second + cfg.CancelWithin + 5*time.Second):
		t.Fatalf("Run did not return %v after its context was cancelled", cfg.CancelWithin+5*time.Second)
	}
	returned := time.Now()
	_ = wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v", err)
	}
	if !s.canceled.IsZero() {
		if took := returned.Sub(s.canceled); took > cfg.CancelWithin {
			t.Errorf("Run returned %v after cancel, want within %v", took, cfg.CancelWithin)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream violates the contract after cancel:\n%v", err)
	}
}

// errSink fails at its third event.
var errSink = errors.New("backendtest: sink refuses the event")

type failSink struct {
	*startSink
	n int
}

func (s *failSink) Event(e *event.Event) error {
	s.n++
	_ = s.startSink.Event(e)
	if s.n == 3 {
		return errSink
	}
	return nil
}

func testSinkError(t *testing.T, b backend.Backend, cfg Config) {
	s := &failSink{startSink: &startSink{Checker: NewChecker(cfg.Rules), started: make(chan struct{})}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := startWorkload(ctx, cfg, s.started)
	err := b.Run(ctx, cfg.Options, s)
	cancel()
	_ = wait()
	if s.n < 3 {
		t.Skipf("only %d events delivered; the sink error needs 3", s.n)
	}
	if !errors.Is(err, errSink) {
		t.Errorf("Run returned %v, want the sink's error", err)
	}
	if s.n > 3 {
		t.Errorf("%d events delivered after the sink failed", s.n-3)
	}
	if s.Begins != 1 || s.Ends != 1 {
		t.Errorf("Begin %d times, End %d times after a sink error; want 1 and 1", s.Begins, s.Ends)
	}
}
