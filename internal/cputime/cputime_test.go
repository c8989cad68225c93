package cputime

import (
	"runtime"
	"testing"
)

func TestProcessAdvances(t *testing.T) {
	if runtime.GOOS == "plan9" {
		t.Skip("CPU time is not measured on " + runtime.GOOS)
	}
	a := Process()
	x := 0
	for b := a; b-a < 2e6; b = Process() { // 2 ms of CPU
		x++
	}
	if a <= 0 || x == 0 {
		t.Errorf("CPU time %v after %d rounds", a, x)
	}
}
