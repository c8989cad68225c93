package testenv

import (
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFailHungOnlyWhileFuzzing: outside fuzzing FailHung does nothing,
// however long the call runs.
func TestFailHungOnlyWhileFuzzing(t *testing.T) {
	t.Setenv("IOTRACE_FUZZ_HANG_LIMIT", "10ms")
	stop := FailHung("a test")
	time.Sleep(100 * time.Millisecond)
	stop()
}

// TestFailHungCrashes: while fuzzing, a call running past the limit
// crashes the process with a message that names it; one that ends in
// time does not (this test binary, re-run as the child).
func TestFailHungCrashes(t *testing.T) {
	if os.Getenv("IOTRACE_FAILHUNG_CHILD") != "" {
		if err := flag.Set("test.fuzz", "FuzzAnything"); err != nil {
			t.Fatal(err)
		}
		FailHung("a quick input")() // stopped in time: no crash
		stop := FailHung("a slow input")
		time.Sleep(5 * time.Second)
		stop()
		return
	}
	SkipUnderWine(t, "re-runs the test binary")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailHungCrashes$")
	cmd.Env = append(os.Environ(), "IOTRACE_FAILHUNG_CHILD=1", "IOTRACE_FUZZ_HANG_LIMIT=200ms")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a slow input still running after 200ms: a hang") || strings.Contains(string(out), "a quick input") {
		t.Errorf("child: %v\n%s", err, out)
	}
}
