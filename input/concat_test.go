package input

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestConcatenatedJSONL: jsonl traces written by iotrace concatenate and
// read back as several traces, each resolved from its own facts.
func TestConcatenatedJSONL(t *testing.T) {
	var parts [][]byte
	var traces []*synth.Recorded
	for i, o := range []synth.Options{{Seed: 41, Events: 800}, {Seed: 42, Events: 600, OS: "windows"}, {Seed: 43, Events: 700}} {
		tr := synth.Trace(o)
		traces = append(traces, tr)
		b, err := os.ReadFile(writeJSONL(t, tr))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			b = append([]byte("\n"), b...) // blank lines between traces are fine
		}
		parts = append(parts, b)
	}
	path := filepath.Join(testenv.TempDir(t), "all.jsonl")
	var all []byte
	for _, p := range parts {
		all = append(all, p...)
	}
	if err := os.WriteFile(path, all, 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := OpenAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d traces, want 3", len(rs))
	}
	for i, r := range rs {
		rec := synth.NewRecorder()
		if err := r.Run(context.Background(), rec); err != nil {
			t.Errorf("trace %d: %v", i+1, err)
		}
		got := rec.Trace()
		if len(got.Events) != len(traces[i].Events) || got.Header.OS != traces[i].Header.OS || !got.Ended {
			t.Errorf("trace %d: %d events (want %d), os %q", i+1, len(got.Events), len(traces[i].Events), got.Header.OS)
		}
	}
	for _, r := range rs {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}

	// Open (one trace) still refuses data after the first trailer, and a
	// damaged second trace is named as such.
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background(), synth.NewRecorder()); err == nil || !strings.Contains(err.Error(), "after the trailer") {
		t.Errorf("Open of concatenated traces: %v", err)
	}
	r.Close()
	cut := append(append([]byte(nil), parts[0]...), parts[1][:len(parts[1])/2]...)
	cut = append(cut, parts[2]...)
	if err := os.WriteFile(path, cut, 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err = OpenAll(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range rs {
			r.Close()
		}
	}()
	if len(rs) != 2 {
		t.Fatalf("cut trace: %d traces, want 2 (the cut one runs into the next)", len(rs))
	}
	if err := rs[1].Run(context.Background(), synth.NewRecorder()); err == nil || !strings.Contains(err.Error(), "trace 2 of 2") {
		t.Errorf("damaged second trace: %v", err)
	}
	// Other formats are one trace.
	if rs, err := OpenAll(writeIOT(t, traces[0])); err != nil || len(rs) != 1 {
		t.Errorf("iot: %d traces, %v", len(rs), err)
	} else {
		rs[0].Close()
	}
}
