package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessAdvances spins until the process has used 2 ms of CPU time by
// Process's account, for at most 10 s of wall time. The first reading may
// be 0: a process just started has used less than the clock's granularity
// (wine's GetProcessTimes counts in scheduler ticks).
func TestProcessAdvances(t *testing.T) {
	if runtime.GOOS == "plan9" {
		t.Skip("CPU time is not measured on " + runtime.GOOS)
	}
	a := Process()
	if a < 0 {
		t.Fatalf("CPU time %v, want ≥ 0", a)
	}
	deadline := time.Now().Add(10 * time.Second)
	b := a
	for b-a < 2*time.Millisecond && time.Now().Before(deadline) {
		b = Process()
	}
	if b-a < 2*time.Millisecond {
		t.Errorf("CPU time went from %v to %v in 10 s of spinning, want 2 ms more", a, b)
	}
}
