//go:build linux && (amd64 || arm64)

package ptrace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// memSink keeps a trace.
type memSink struct {
	mu      sync.Mutex
	hdr     event.Header
	events  []event.Event
	facts   []event.Fact
	trailer *event.Trailer
	onFact  func(*event.Fact)
}

func (s *memSink) Begin(h *event.Header) error { s.hdr = *h; return nil }
func (s *memSink) Event(e *event.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, *e)
	return nil
}
func (s *memSink) Fact(f *event.Fact) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.facts = append(s.facts, *f)
	if s.onFact != nil {
		s.onFact(f)
	}
	return nil
}
func (s *memSink) End(t *event.Trailer) error { s.trailer = t; return nil }

// trace runs cmd under the backend.
func trace(t *testing.T, ctx context.Context, opts backend.Options, cmd ...string) (*memSink, int) {
	t.Helper()
	b := New(Config{})
	if err := b.Available(); err != nil {
		t.Skipf("ptrace backend: %v", err)
	}
	s := &memSink{}
	opts.Command = cmd
	status := -1
	opts.CommandExited = func(x backend.CommandExit) { status = x.Status }
	opts.Warn = func(m string) { t.Logf("warn: %s", m) }
	if err := b.Run(ctx, opts, s); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if s.trailer == nil {
		t.Fatal("no trailer")
	}
	return s, status
}

// find returns the events of op whose path is path.
func find(s *memSink, native, path string) []event.Event {
	var out []event.Event
	for _, e := range s.events {
		if e.Native == native && (path == "" || e.Path == path) {
			out = append(out, e)
		}
	}
	return out
}

// TestTraceShell traces a shell that writes, reads and renames a file in
// a child process: every call is there with its absolute path, offset,
// size, bytes, result, latency and process.
func TestTraceShell(t *testing.T) {
	dir := t.TempDir()
	s, status := trace(t, context.Background(), backend.Options{},
		"sh", "-c", `cd "$0" && echo hello > a && (cat a; cat a) > /dev/null && mv a b && cat nosuch 2>/dev/null; exit 3`, dir)
	if status != 3 {
		t.Errorf("exit status %d, want 3", status)
	}
	if s.hdr.Source != event.SourcePtrace || !strings.Contains(s.hdr.Tool, "no block I/O") || s.hdr.Layers != event.LayersOf(event.LayerFile) {
		t.Errorf("header %+v", s.hdr)
	}
	a := filepath.Join(dir, "a")
	if w := find(s, "write", a); len(w) != 1 || w[0].Bytes != 6 || w[0].Size != 6 || w[0].Offset != 0 {
		t.Errorf("write of a: %+v", w)
	}
	reads := find(s, "read", a)
	if len(reads) < 2 {
		t.Fatalf("reads of a: %d", len(reads))
	}
	pids := map[uint32]bool{}
	for _, e := range reads {
		pids[e.Pid] = true
		if e.Duration <= 0 || e.ProcStart == 0 || e.Comm != "cat" {
			t.Errorf("read: %+v", e)
		}
	}
	if len(pids) < 2 {
		t.Errorf("reads from %d processes, want the two cats", len(pids))
	}
	if r := find(s, "renameat2", a); len(r) != 1 || r[0].Path2 != filepath.Join(dir, "b") {
		t.Errorf("rename: %+v", r)
	}
	fail := 0
	for _, e := range s.events {
		if e.Op == event.OpOpen && strings.HasSuffix(e.Path, "/nosuch") && e.Status == event.StatusNotFound {
			fail++
		}
	}
	if fail != 1 {
		t.Errorf("%d failed opens of nosuch, want 1", fail)
	}
	for _, c := range s.trailer.Stats.Counters {
		t.Logf("%v %s: %d", c.Kind, c.Name, c.Value)
	}
}

// TestKilledOnStop: when the trace is stopped (Ctrl-C, --duration)
// before the command ends, the command is killed, and Run returns.
func TestKilledOnStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, status := trace(t, ctx, backend.Options{}, "sh", "-c", "trap '' INT TERM; while :; do cat /dev/null; done")
	if status != 128+9 {
		t.Errorf("status %d, want killed (137)", status)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v", d)
	}
	if len(find(s, "openat", "/dev/null")) == 0 {
		t.Error("no open of /dev/null")
	}
	_ = os.Getpid()
}
