package cli

import (
	"context"
	"os"
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
		os.Exit(code)
	}
	os.Exit(m.Run())
}
