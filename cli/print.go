package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/output"
)

func newPrintCmd() *cobra.Command {
	var (
		fo filter.Options
		of outputFlags
	)
	cmd := &cobra.Command{
		Use:   "print FILE",
		Short: "Print a trace file as text, jsonl or csv",
		Long: `Print the events of a trace file (.iot, Windows .etl, or jsonl written by
iotrace) with names resolved from the trace itself. The format is recognized
from the file's content, not its name.

text shows one aligned line per event (block I/O on lines of its own, linked to
the event that caused it) and ends with a summary that lists every event lost,
left unpaired, unresolved or dropped. A damaged file prints every intact event,
then fails naming the byte offset of the damage.`,
		Example: `  iotrace print build.iot
  iotrace print build.iot --op open --failed
  iotrace print build.iot --path '/usr/**/*.so' --min-latency 1ms
  iotrace print build.iot -f jsonl | jq 'select(.type=="event" and .op=="read")'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := formatFor(of.format, of.path, "text", output.Formats())
			if err != nil {
				return err
			}
			return printTrace(cmd, args[0], format, fo, of)
		},
	}
	addFilterFlags(cmd, &fo)
	addOutputFlags(cmd, &of, []string{"text", "jsonl", "csv"}, "write to this file instead of standard output")
	return cmd
}

// printTrace reads path through the filter into the output format.
func printTrace(cmd *cobra.Command, path, format string, fo filter.Options, of outputFlags) error {
	f, err := filter.New(fo)
	if err != nil {
		return err
	}
	r, err := input.OpenFrom(path, cmd.InOrStdin())
	if err != nil {
		return err
	}
	defer r.Close()
	w, closeOut, err := openOutput(of.path, cmd.OutOrStdout(), path)
	if err != nil {
		return err
	}
	w = jsonOnTerminal(w, format, of.path, cmd.OutOrStdout())
	out, err := output.New(format, w, output.Options{Facts: of.facts, WallClock: of.wallClock, Terminal: toTerminal(of.path, cmd.OutOrStdout())})
	if err != nil {
		closeOut(false)
		return err
	}
	var sink event.Sink = out
	if format != "text" || (of.path != "" && of.path != "-") {
		sink = problemWarner{Sink: sink, w: cmd.ErrOrStderr()}
	}
	prog := withProgress(sink, cmd.ErrOrStderr(), of.path, cmd.OutOrStdout())
	if prog != nil {
		sink = prog
	}
	runErr := r.Run(cmd.Context(), f.Sink(sink))
	if prog != nil {
		prog.Done()
	}
	// A damaged input's output holds every intact event: it is kept.
	closeErr := closeOut(cmd.Context().Err() == nil)
	return finishRead(runErr, closeErr)
}

// damaged gives err, the error that stopped reading an input after its
// output was written, the exit code of damaged input (2), as readError
// does, unless the user interrupted the command (ctx done).
func damaged(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: 2, Err: err}
}

// readError marks an error from reading a trace: the output holds every
// event before it; exit code 2 tells scripts the input was damaged.
func readError(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: 2, Err: fmt.Errorf("reading stopped; every event before this point was written: %w", err)}
}
