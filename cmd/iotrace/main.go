// Command iotrace traces file-system and block I/O on Linux (eBPF) and
// Windows (ETW), records self-contained traces and analyses them anywhere.
package main

import (
	"context"
	"os"

	"github.com/iotrace/iotrace/cli"
	"github.com/iotrace/iotrace/internal/interrupt"
)

func main() {
	// The process's one receiver of SIGINT and SIGTERM: the first stops
	// the command cleanly, a second quits (package interrupt).
	ctx, h := interrupt.Notify(context.Background(), os.Stderr)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	h.Stop()
	os.Exit(code)
}
