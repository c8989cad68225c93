package fake

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/backendtest"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

func newFake(t *testing.T, cfg Config) *Backend {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var allLayers = []event.Layer{event.LayerFile, event.LayerBlock, event.LayerMarker}

func TestConformance(t *testing.T) {
	for _, os := range []string{"linux", "windows"} {
		t.Run(os, func(t *testing.T) {
			b := newFake(t, Config{Trace: synth.Options{OS: os, Events: 2000, Seed: 7}})
			backendtest.Run(t, b, backendtest.Config{MinEvents: 2000, Layers: allLayers})
		})
	}
	t.Run("paced loop", func(t *testing.T) {
		// Real time, over and over: only the cancel or Duration stops it.
		b := newFake(t, Config{Trace: synth.Options{Events: 300}, Speed: 1, Loop: true})
		backendtest.Run(t, b, backendtest.Config{
			Options:      backend.Options{Duration: 300 * time.Millisecond},
			Layers:       []event.Layer{event.LayerFile},
			CancelWithin: time.Second,
		})
	})
}

func TestReplayIsTheSynthTrace(t *testing.T) {
	cfg := synth.Options{OS: "windows", Events: 500, Seed: 3}
	want := synth.Trace(cfg)
	r := synth.NewRecorder()
	if err := newFake(t, Config{Trace: cfg}).Run(context.Background(), backend.Options{}, r); err != nil {
		t.Fatal(err)
	}
	got := r.Trace()
	if len(got.Events) != len(want.Events) || len(got.Facts) != len(want.Facts) {
		t.Fatalf("replayed %d events and %d facts, want %d and %d", len(got.Events), len(got.Facts), len(want.Events), len(want.Facts))
	}
	for i := range want.Events {
		if got.Events[i] != want.Events[i] {
			t.Fatalf("event %d:\n got %+v\nwant %+v", i, got.Events[i], want.Events[i])
		}
	}
	// Every problem counter of the synthetic trace is reported.
	for _, c := range want.Trailer.Stats.Problems() {
		if v := got.Trailer.Stats.Get(c.Kind, c.Name); v != c.Value {
			t.Errorf("%s %q: %d, want %d", c.Kind, c.Name, v, c.Value)
		}
	}
	if got.Trailer.End != want.Trailer.End {
		t.Errorf("trailer end %d, want %d", got.Trailer.End, want.Trailer.End)
	}
	if n := got.Trailer.Stats.Get(event.CountInfo, CounterDelivered); n != uint64(len(want.Events)) {
		t.Errorf("%s = %d", CounterDelivered, n)
	}
}

func TestDurationStopsLoop(t *testing.T) {
	b := newFake(t, Config{Trace: synth.Options{Events: 200}, Loop: true})
	c := backendtest.NewChecker(backendtest.Rules{})
	start := time.Now()
	if err := b.Run(context.Background(), backend.Options{Duration: 200 * time.Millisecond}, c); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 10*time.Second {
		t.Errorf("a 200ms trace took %v", took)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if rounds := c.Trailer.Stats.Get(event.CountInfo, CounterRounds); rounds < 2 || c.Events < 400 {
		t.Errorf("%d rounds, %d events: the loop did not loop", rounds, c.Events)
	}
}

func TestFilters(t *testing.T) {
	b := newFake(t, Config{Trace: synth.Options{Events: 1000}})
	c := backendtest.NewChecker(backendtest.Rules{})
	opts := backend.Options{Ops: []event.Op{event.OpOpen}, Comms: []string{"cc1"}}
	if err := b.Run(context.Background(), opts, c); err != nil {
		t.Fatal(err)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if c.Events == 0 || c.Trailer.Stats.Get(event.CountInfo, CounterSkipped) == 0 {
		t.Fatalf("%d events, skipped %d", c.Events, c.Trailer.Stats.Get(event.CountInfo, CounterSkipped))
	}
}

func TestCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses /bin/sh")
	}
	b := newFake(t, Config{Trace: synth.Options{Events: 100}, Speed: 1, Loop: true})
	var pid int
	c := backendtest.NewChecker(backendtest.Rules{})
	start := time.Now()
	err := b.Run(context.Background(), backend.Options{
		Command:        []string{"/bin/sh", "-c", "sleep 0.2"},
		CommandStarted: func(p int) { pid = p },
	}, c)
	if err != nil {
		t.Fatal(err)
	}
	if pid == 0 {
		t.Error("CommandStarted not called")
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 10*time.Second {
		t.Errorf("trace of a 0.2 s command took %v", took)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	err = b.Run(context.Background(), backend.Options{Command: []string{"/nonexistent/cmd"}}, c)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/cmd") {
		t.Errorf("missing command: %v", err)
	}
}
