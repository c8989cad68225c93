// Package cli holds iotrace's commands. Each command is built by a
// constructor that turns flags into an options struct and calls a library
// package; no command holds logic of its own.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Version is the iotrace version, set at build time with
// -ldflags "-X github.com/iotrace/iotrace/cli.Version=...".
var Version = "dev"

// ExitError carries a specific exit code out of a command.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Main runs iotrace with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := New(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "iotrace: %v\n", err)
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}

// New returns the root command with every subcommand.
func New(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "iotrace",
		Short: "Trace file-system and block I/O on Linux and Windows, and analyse the traces anywhere",
		Long: `iotrace traces file-system and block I/O with one event model on Linux (eBPF)
and Windows (ETW), records self-contained trace files (.iot) that resolve on any
machine, and reads, reports on, compares and converts traces (.iot and .etl).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, c := range []*cobra.Command{
		newVersionCmd(),
		newPrintCmd(),
		newConvertCmd(),
		newReportCmd(),
		newCompareCmd(),
		newBackendsCmd(liveBackends),
		newRunCmd(),
		newTraceCmd(),
		newRecordCmd(),
		newMarkCmd(),
		newSessionsCmd(),
	} {
		root.AddCommand(c)
	}
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the iotrace version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "iotrace %s\n", Version)
			return err
		},
	}
}
