package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// cliChildEnv makes the test binary run as the iotrace command (as
// cmd/iotrace does), so that tests can run it as a process of its own: to
// kill it, or to read it from outside.
const cliChildEnv = "IOTRACE_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(cliChildEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
