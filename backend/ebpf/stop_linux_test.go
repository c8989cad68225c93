package ebpf

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestStopDoesNotWaitForPoll: when the command exits the reader is woken
// at once (not at its next poll), and with no call in flight the stop
// does not wait for calls to end: with a 3 s poll interval, tracing
// /bin/true ends well within one interval (it took 3-9 s when the exit
// was noticed at the next poll and the stop waited two intervals), with
// the command's events read and the stop's phases timed.
func TestStopDoesNotWaitForPoll(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	const poll = 3 * time.Second
	sink := &memSink{}
	opts := backend.Options{Command: []string{"/bin/true"}, Layers: []event.Layer{event.LayerFile}, Warn: func(m string) { t.Logf("warn: %s", m) }}
	var started, exited time.Time
	opts.CommandStarted = func(int) { started = time.Now() }
	if err := New(Config{MarkerDir: "-", PollInterval: poll}).Run(context.Background(), opts, sink); err != nil {
		t.Fatal(err)
	}
	exited = time.Now()
	if took := exited.Sub(started); took >= poll/2 {
		t.Errorf("the trace ended %v after the command started, want well under the poll interval %v", took, poll)
	}
	if len(find(sink.events, byNative("execve"))) == 0 {
		t.Error("the command's execve was not read")
	}
	if sink.trailer == nil {
		t.Fatal("no trailer")
	}
	var phases []string
	for _, c := range sink.trailer.Stats.Counters {
		if strings.HasPrefix(c.Name, stopPrefix) {
			phases = append(phases, c.Name)
		}
	}
	if len(phases) < 5 {
		t.Errorf("stop phases timed: %q, want each phase", phases)
	}
}
