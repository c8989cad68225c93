package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/timeorder"
)

func newPrintCmd() *cobra.Command {
	var (
		fo filter.Options
		of outputFlags
		sf stackFlags
	)
	cmd := &cobra.Command{
		Use:   "print FILE...|-",
		Short: "Print a trace file as text, jsonl or csv",
		Long: `Print the events of a trace file (.iot, Windows .etl, or jsonl written by
iotrace) with names resolved from the trace itself. The format is recognized
from the file's content, not its name.

text shows one aligned line per event (block I/O on lines of its own, linked to
the event that caused it) and ends with a summary that lists every event lost,
left unpaired, unresolved or dropped. A damaged file prints every intact event,
then fails naming the byte offset of the damage.

Several files (or glob patterns) print one after the other, each as a whole
trace: in jsonl they are concatenated traces, each with its own header and
trailer.

--stacks prints, under each event recorded with a stack, its frames, innermost
first (kernel frames marked [k]), named from the trace's modules and kernel
symbols with the symbol files found by build-id (--symbols DIR, then
/usr/lib/debug, then the module's own path); a frame that cannot be named shows
as module+0xoffset, and the summary counts such frames by reason
(docs/stacks.md).`,
		Example: `  iotrace print build.iot
  iotrace print build.iot --op open --failed
  iotrace print build.iot --path '/usr/**/*.so' --min-latency 1ms
  iotrace print build.iot -f jsonl | jq 'select(.type=="event" and .op=="read")'
  iotrace print 'fleet/*/*.iot' --failed
  iotrace print build.iot --stacks --symbols ./symbols`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := formatFor(of.format, of.path, "text", output.Formats())
			if err != nil {
				return err
			}
			paths, err := expandInputs(args, false)
			if err != nil {
				return err
			}
			if sf.show && format != "text" {
				return fmt.Errorf("--stacks prints frames in text; %s carries the stacks as facts (with --facts) for other tools", format)
			}
			return printTraces(cmd, paths, format, fo, of, sf)
		},
	}
	addFilterFlags(cmd, &fo)
	addStackFlags(cmd, &sf, "print each event's stack under it, symbolized (text)")
	addOutputFlags(cmd, &of, []string{"text", "jsonl", "csv"}, "write to this file instead of standard output")
	addQuietFlag(cmd, &of.quiet)
	return cmd
}

// printTraces reads each path in turn (every trace of it: concatenated
// jsonl traces are several) through the filter into the output format. A
// damaged input prints what it holds intact; the others still print, and
// the command fails at the end naming the damage.
func printTraces(cmd *cobra.Command, paths []string, format string, fo filter.Options, of outputFlags, sf stackFlags) error {
	w, closeOut, err := openOutput(of.path, cmd.InOrStdin(), cmd.OutOrStdout(), paths...)
	if err != nil {
		return err
	}
	w = jsonOnTerminal(w, format, of.path, cmd.OutOrStdout())
	var damaged []error
	for _, path := range paths {
		traces, err := input.OpenAllFrom(path, cmd.InOrStdin())
		if err != nil {
			closeOut(false)
			return err
		}
		for i, r := range traces {
			name := path
			if len(traces) > 1 {
				name = fmt.Sprintf("%s (trace %d of %d)", path, i+1, len(traces))
			}
			runErr, err := printTrace(cmd, w, r, name, format, fo, of, sf)
			if err != nil {
				closeAll(traces)
				closeOut(false)
				return err
			}
			if runErr != nil {
				if len(traces) > 1 || !strings.HasPrefix(runErr.Error(), path+": ") {
					runErr = fmt.Errorf("%s: %w", name, runErr)
				}
				damaged = append(damaged, runErr)
			}
		}
		closeAll(traces)
	}
	// A damaged input's output holds every intact event: it is kept.
	closeErr := closeOut(cmd.Context().Err() == nil)
	return finishRead(errors.Join(damaged...), closeErr)
}

// printTrace reads one trace through the filter into the output format
// on w. runErr is the reader's (damage, interruption); err a set-up error.
func printTrace(cmd *cobra.Command, w io.Writer, r input.Reader, name, format string, fo filter.Options, of outputFlags, sf stackFlags) (runErr, err error) {
	f, err := filter.New(fo)
	if err != nil {
		return nil, err
	}
	oo := output.Options{Facts: of.facts, WallClock: of.wallClock, Counters: of.counters, Terminal: toTerminal(of.path, cmd.OutOrStdout())}
	if !sf.show && format != "jsonl" {
		input.LeaveStacks(r) // text shows stacks with --stacks only, csv never
	}
	var tab *stacks.Table
	if sf.show {
		tab = sf.table(cmd.Context())
		defer tab.Close()
		oo.Frames = tab.Lines
	}
	out, err := output.New(format, w, oo)
	if err != nil {
		return nil, err
	}
	var sink event.Sink = out
	if tab != nil {
		// The frames' counts reach the summary with the trailer.
		sink = tab.Summary(sink)
	}
	if format != "text" || !isStdout(of.path) {
		sink = problemWarner{Sink: sink, w: cmd.ErrOrStderr()}
	}
	sink, stopProgress := readProgress(cmd.ErrOrStderr(), r, name, sink, of.quiet, isStdout(of.path) && isTerminal(cmd.OutOrStdout()))
	defer stopProgress()
	// In time order within a window: live backends record by buffer,
	// not by time.
	ord := timeorder.New(sink, timeorder.Options{Tick: -1})
	var first event.Sink = f.Sink(ord)
	if tab != nil {
		// Stack and module facts are taken in stream order, before the
		// filter and the reordering.
		first = tab.Feed(first)
	}
	runErr = r.Run(cmd.Context(), first)
	if ferr := ord.Flush(); runErr == nil && ferr != nil {
		runErr = ferr
	}
	return runErr, nil
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
// event before it; exit code 2 tells scripts the input was damaged. The
// message says what the reader did: damage skipped and read past (every
// intact event written, whether any was lost), or reading stopped.
func readError(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 1 {
		// Several damaged inputs (print): each said for itself.
		var errs []error
		for _, e := range j.Unwrap() {
			errs = append(errs, describeDamage(e))
		}
		return &ExitError{Code: 2, Err: errors.Join(errs...)}
	}
	return &ExitError{Code: 2, Err: describeDamage(err)}
}

// describeDamage prefixes a reading error with what the reader did.
func describeDamage(err error) error {
	if s, ok := summarize(err); ok {
		return fmt.Errorf("the input is damaged: %s: %w", s.message(), err)
	}
	return fmt.Errorf("reading stopped; every event before this point was written: %w", err)
}
