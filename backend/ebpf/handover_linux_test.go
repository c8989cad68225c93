package ebpf

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// slowSink counts what it receives and spends spin per event: a consumer
// slower than the machine makes records, so the reader is always behind.
type slowSink struct {
	mu      sync.Mutex
	spin    time.Duration
	events  int
	block   int
	noStart int // block events of a process without its start time
	samples []string
	trailer *event.Trailer
}

func (s *slowSink) Begin(*event.Header) error { return nil }
func (s *slowSink) Fact(*event.Fact) error    { return nil }
func (s *slowSink) Event(e *event.Event) error {
	for t := time.Now(); time.Since(t) < s.spin; {
	}
	s.mu.Lock()
	s.events++
	if e.Layer == event.LayerBlock {
		s.block++
		if e.Pid != 0 && e.ProcStart == 0 && e.Flags&event.FlagNoStart == 0 {
			s.noStart++
			if len(s.samples) < 5 {
				s.samples = append(s.samples, fmt.Sprintf("pid %d comm %q flags %v", e.Pid, e.Comm, e.Flags))
			}
		}
	}
	s.mu.Unlock()
	return nil
}
func (s *slowSink) End(t *event.Trailer) error { s.trailer = t; return nil }

// TestBlockHandOverUnderLoad: with the reader always behind (a slow sink,
// a flood of system calls) and direct I/O going on, the block events are
// still handed over in time to get their process's start time: the
// reader does not wait for an empty ring buffer before handing them over
// (it never came under load, and the queue overflowed: 112,316 block
// events without their start time in a soak test).
func TestBlockHandOverUnderLoad(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	data := filepath.Join(os.TempDir(), "iotrace-handover-"+t.Name())
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+data, "bs=1M", "count=64", "conv=fsync").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v %s", err, out)
	}
	defer os.Remove(data)
	sink := &slowSink{spin: 20 * time.Microsecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- New(Config{MarkerDir: "-"}).Run(ctx, backend.Options{Warn: func(string) {}}, sink)
	}()
	time.Sleep(2 * time.Second) // attached
	flood := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=100000000")
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		exec.Command("dd", "if="+data, "of=/dev/null", "iflag=direct", "bs=4k", "count=4000").Run()
	}
	flood.Process.Kill()
	flood.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := sink.trailer.Stats
	t.Logf("%d events, %d block; ring-buffer loss %d; %s: %d", sink.events, sink.block,
		st.Total(event.CountLost), statBlockOverflow, st.Get(event.CountUnresolved, statBlockOverflow))
	if sink.block < 8192 {
		t.Fatalf("only %d block events: the test did not load the hand-over queue", sink.block)
	}
	if n := st.Get(event.CountUnresolved, statBlockOverflow); n != 0 {
		t.Errorf("%d block events found the hand-over queue full", n)
	}
	// Others may lack it when the records of their fork were lost (the
	// ring buffer overflows here by design) and they exited.
	t.Logf("%d block events without their process start time, e.g. %v", sink.noStart, sink.samples)
}
