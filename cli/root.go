// Package cli holds iotrace's commands. Each command is built by a
// constructor that turns flags into an options struct and calls a library
// package; no command holds logic of its own.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/internal/termesc"
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
	if err == nil || errors.Is(err, errListed) {
		return 0
	}
	// Errors quote paths and names from traces: the terminal rule applies.
	fmt.Fprintf(stderr, "iotrace: %s\n", termesc.Lines(err.Error()))
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
	root.Version = versionString()
	root.SetVersionTemplate("iotrace {{.Version}}\n")
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
		newServeCmd(),
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
		Short: "Print the iotrace version (module version, VCS revision, Go version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "iotrace %s\n", versionString())
			return err
		},
	}
}

// versionString describes this binary from its build information: the
// version (Version when set at link time, else the module's), the VCS
// revision and time, "modified" when built from a changed tree, and the Go
// version.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version + " (no build information)"
	}
	return formatVersion(Version, bi)
}

func formatVersion(v string, bi *debug.BuildInfo) string {
	if v == "" || v == "dev" {
		v = "dev"
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v = mv
		}
	}
	var rev, when, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	parts := []string{}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		p := "revision " + rev
		if when != "" {
			p += " of " + when
		}
		parts = append(parts, p+modified)
	} else {
		parts = append(parts, "no VCS revision")
	}
	parts = append(parts, bi.GoVersion)
	return v + " (" + strings.Join(parts, ", ") + ")"
}
