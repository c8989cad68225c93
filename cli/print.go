package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/timeorder"
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
	r, err := input.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	w, closeOut, err := openOutput(of.path, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	out, err := output.New(format, w, output.Options{Facts: of.facts, WallClock: of.wallClock})
	if err != nil {
		closeOut()
		return err
	}
	var sink event.Sink = out
	if format != "text" || (of.path != "" && of.path != "-") {
		sink = problemWarner{Sink: sink, w: cmd.ErrOrStderr()}
	}
	// In time order within a window: live backends record by buffer,
	// not by time.
	ord := timeorder.New(sink, timeorder.Options{Tick: -1})
	runErr := r.Run(cmd.Context(), f.Sink(ord))
	if ferr := ord.Flush(); runErr == nil && ferr != nil {
		runErr = ferr
	}
	closeErr := closeOut()
	if runErr != nil {
		return readError(runErr)
	}
	return closeErr
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
