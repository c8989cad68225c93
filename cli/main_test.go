package cli

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/interrupt"
)

// cliChildEnv makes the test binary run as the iotrace command (as
// cmd/iotrace does), so that tests can run it as a process of its own: to
// kill it, or to read it from outside.
const cliChildEnv = "IOTRACE_TEST_RUN_CLI"

// testChildren are the other roles the test binary plays as a child
// process of a test (a workload of known behaviour): when the environment
// variable named by a key is set, its function runs with the variable's
// value and its result is the exit status.
var testChildren = map[string]func(value string) int{}

func TestMain(m *testing.M) {
	for env, fn := range testChildren {
		if v := os.Getenv(env); v != "" {
			os.Exit(fn(v))
		}
	}
	if os.Getenv(cliChildEnv) == "1" {
		ctx, h := interrupt.Notify(context.Background(), os.Stderr)
		code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		h.Stop()
		if f := os.Getenv(childPeakEnv); f != "" {
			writePeakMemory(f)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// childPeakEnv names the file a child writes its peak resident memory to
// (bytes) when it ends.
const childPeakEnv = "IOTRACE_TEST_PEAK_FILE"

// writePeakMemory writes the process's peak resident memory (Linux's
// VmHWM) to path; nothing where it is not known.
func writePeakMemory(path string) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			os.WriteFile(path, []byte(strconv.FormatInt(kb<<10, 10)), 0o600)
		}
	}
}
