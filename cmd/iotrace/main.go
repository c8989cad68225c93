// Command iotrace traces file-system and block I/O on Linux (eBPF) and
// Windows (ETW), records self-contained traces and analyses them anywhere.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/iotrace/iotrace/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
