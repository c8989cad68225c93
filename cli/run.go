package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/termesc"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/script/where"
	"github.com/iotrace/iotrace/symbolize"
)

// runFlags are the flags of iotrace run.
type runFlags struct {
	input     string
	where     string
	defines   []string
	output    string
	keepGoing bool
	maxSteps  uint64
	maxKeys   int
	symbols   []string
	maxMemory string
	fields    bool
	verbose   bool
	live      liveFlags
}

func newRunCmd() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run SCRIPT [--input FILE | -- COMMAND [ARGS...]]",
		Short: "Run a SystemTap-style script (Starlark) over live events or a recorded trace",
		Long: `Run an iotrace script: Starlark (Python syntax) handlers and aggregations over
the common event model, the same on a live Linux or Windows system, an .iot
file or an .etl file.

  FILTER = "op == 'read' and latency > ms(10)"     # compiled, never interpreted
  lat = hist_log2("path", unit="usecs")
  def on_event(e):
      lat.add(e.path, e.latency // 1000)
  def on_end():
      print(lat)

With --input the script reads a recorded trace and every() timers follow the
trace's own clock. Without it the script traces this machine live (every
backend available here, --where pushed down into the kernel where it can be),
the whole system until Ctrl-C, or only COMMAND and its children until it exits.

Scripts cannot read files or use the network; their output (print, printf,
emit, aggregations) goes to standard output or to the --output file. An error
names the script's file:line:col and, in on_event, the event that triggered
it; the run then stops (on_end still runs), unless --keep-going. Every handler
call has a step limit, so an endless loop stops with a message.

The language reference and the event fields: docs/scripts.md, or
'iotrace run --fields'. Examples: examples/scripts/.`,
		Example: `  iotrace run examples/scripts/iotop.star
  iotrace run examples/scripts/slow_reads.star -D ms=5 --input build.iot
  iotrace run examples/scripts/fsync_hist.star -- ./db-bench --sync
  iotrace run examples/scripts/biolatency.star --input trace.etl --where "dev == 'disk0'"
  iotrace run examples/scripts/errors.star -o failures.jsonl -- make -j8`,
		Args: func(cmd *cobra.Command, args []string) error {
			if rf.fields {
				return nil
			}
			n := len(args)
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				n = dash
			}
			if n != 1 {
				return fmt.Errorf("run takes one script (then, after --, a command to trace), got %d arguments before --", n)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if rf.fields {
				return printFields(cmd.OutOrStdout())
			}
			var command []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				command = args[dash:]
			}
			if len(command) > 0 && rf.input != "" {
				return errors.New("run reads either a recorded trace (--input) or traces a command (-- COMMAND), not both")
			}
			return runScript(cmd, args[0], command, rf)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&rf.input, "input", "i", "", "read this recorded trace (.iot, .etl, jsonl) instead of tracing live")
	fs.StringVarP(&rf.where, "where", "w", "", "filter expression, combined with the script's FILTER by 'and' (e.g. \"pid == 42 and latency > ms(5)\")")
	fs.StringArrayVarP(&rf.defines, "define", "D", nil, "set args[NAME] = VALUE for the script (NAME=VALUE, repeatable)")
	fs.StringVarP(&rf.output, "output", "o", "", "write the script's output to this file (the only file a script can write)")
	fs.BoolVar(&rf.keepGoing, "keep-going", false, "report handler errors and go on instead of stopping")
	fs.Uint64Var(&rf.maxSteps, "max-steps", script.DefaultMaxSteps, "Starlark steps one handler call may take")
	fs.IntVar(&rf.maxKeys, "max-keys", script.DefaultMaxKeys, "keys one aggregation may hold")
	fs.StringArrayVar(&rf.symbols, "symbols", nil, "a directory of symbol files naming e.stack's frames (debuginfod layout BUILDID/debuginfo or .build-id/xx/rest.debug); repeatable")
	fs.StringVar(&rf.maxMemory, "max-memory", "1G", "how much the script's data (lists, dicts, strings, aggregations) may grow the heap before the script is stopped (bytes, or with K, M, G)")
	fs.BoolVar(&rf.fields, "fields", false, "list the event fields scripts and --where can use, and exit")
	fs.BoolVarP(&rf.verbose, "verbose", "v", false, "say what the filter pushes down to the backend and how many events it kept")
	addLiveFlags(cmd, &rf.live)
	addCaptureStacksFlag(cmd, &rf.live)
	return cmd
}

// runScript loads the script and runs it over the input or live.
func runScript(cmd *cobra.Command, path string, command []string, rf runFlags) error {
	if path == "-" && rf.input == "-" {
		return fmt.Errorf("run: the script and the --input trace cannot both be standard input (-)")
	}
	src, err := readScript(path, cmd.InOrStdin())
	if err != nil {
		return err
	}
	defines, err := parseDefines(rf.defines)
	if err != nil {
		return err
	}
	live := rf.input == ""
	var st *liveStatus
	if live {
		st = newLiveStatus(cmd, rf.live.quiet, command, isStdout(rf.output))
		defer st.done()
	}
	var in input.Reader
	if !live {
		// A missing or unrecognized input is an error (exit 1), found
		// before the script runs or its output is created; damage
		// inside a recognized one is found while reading (exit 2).
		if in, err = input.OpenFrom(rf.input, cmd.InOrStdin()); err != nil {
			return err
		}
		defer in.Close()
	}
	openOut := openOutput
	if live {
		openOut = openLiveOutput
	}
	out, closeOut, err := openOut(rf.output, cmd.InOrStdin(), cmd.OutOrStdout(), rf.input, path)
	if err != nil {
		return err
	}
	var esc *termesc.Writer
	if toTerminal(rf.output, cmd.OutOrStdout()) {
		// On a terminal the script's output follows the terminal rule:
		// a path it prints cannot drive the terminal.
		esc = termesc.NewWriter(out)
		out = esc
	}
	var size sizeOf
	if st != nil {
		out = countingWriter{out, &size}
	}
	maxMem, err := parseSize(rf.maxMemory)
	if err != nil {
		closeOut(false)
		return fmt.Errorf("--max-memory: %w", err)
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	s, err := script.Load(path, src, script.Options{
		MaxMemory: uint64(maxMem),
		Stdout:    out,
		Stderr:    termesc.NewWriter(cmd.ErrOrStderr()), // warnings quote events
		Where:     rf.where,
		Args:      defines,
		MaxSteps:  rf.maxSteps,
		MaxKeys:   rf.maxKeys,
		KeepGoing: rf.keepGoing,
		WallClock: live,
		Stop:      cancel,
		Symbols:   symbolize.Options{Dirs: rf.symbols},
	})
	if err != nil {
		closeOut(false)
		return err
	}
	stderr := cmd.ErrOrStderr()
	sink := problemWarner{Sink: s, w: stderr}
	var runErr error
	if live {
		var cmdOut io.Writer
		if isStdout(rf.output) {
			cmdOut = stderr // the script's output is on stdout
		}
		st.run(s.Seen, size.get)
		runErr = runScriptLive(ctx, s, sink, command, rf.live, rf.verbose, stderr, cmdOut, st)
		st.done()
	} else {
		runErr = in.Run(ctx, sink)
	}
	// on_end runs here if the source stopped without ending the trace.
	closeErr := s.Close()
	if esc != nil {
		if err := esc.Flush(); closeErr == nil {
			closeErr = err
		}
	}
	if err := closeOut(true); closeErr == nil {
		closeErr = err
	}
	if rf.verbose {
		fmt.Fprintf(stderr, "iotrace run: %d events, %d passed the filter\n", s.Seen(), s.Matched())
	}
	if err := runOutcome(cmd.Context(), runErr, s.Err(), live, rf.output); err != nil {
		return err
	}
	if closeErr != nil {
		return closeErr
	}
	if n := s.Errors(); n > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d handler error(s) (--keep-going)", n)}
	}
	return nil
}

// runOutcome turns how a run ended into the command's error. scriptErr,
// the script's own failure (a runtime error, the memory limit; maybe in a
// timer while no event came), is the error to report whatever the source
// said, and is a script error (exit 1). Else runErr, the source's: an
// interruption by the user (ctx done) is no error, a live backend's
// failure is exit 1, a recorded trace's damage exit 2. output is the -o
// path, to say where what the script printed went.
func runOutcome(ctx context.Context, runErr, scriptErr error, live bool, output string) error {
	if scriptErr != nil {
		runErr = scriptErr
	}
	if runErr == nil || errors.Is(runErr, script.ErrExit) {
		return nil
	}
	var (
		re *script.RuntimeError
		me *script.MemoryLimitError
	)
	switch {
	case errors.As(runErr, &re):
		return re
	case errors.As(runErr, &me):
		where := "standard output"
		if !isStdout(output) {
			where = output
		}
		return &ExitError{Code: 1, Err: fmt.Errorf("%w (what the script printed before it was stopped, and on_end's output if it ran, went to %s)", me, where)}
	case errors.Is(runErr, context.Canceled) && ctx.Err() != nil:
		// Ctrl-C: like SystemTap, on_end has printed the results.
		return nil
	case live:
		return runErr
	}
	return readError(runErr)
}

// runScriptLive traces this machine into the script (runLiveTo picks the
// backend and handles Ctrl-C), with the script's filter pushed down.
// cmdOut, when set, is the command's standard output.
func runScriptLive(ctx context.Context, s *script.Script, sink event.Sink, command []string, lf liveFlags, verbose bool, stderr, cmdOut io.Writer, st *liveStatus) error {
	size, err := parseSize(lf.bufferSize)
	if err != nil {
		return err
	}
	opts := backend.Options{Command: command, Duration: lf.duration, BufferSize: size, FollowChildren: len(command) > 0, CommandStdout: cmdOut, WaitWriteback: lf.waitWriteback}
	if err = lf.stacksInto(&opts); err != nil {
		return err
	}
	push := s.Pushdown()
	if push.Never {
		return fmt.Errorf("the filter %q can match no event", s.Filter())
	}
	push.Apply(&opts)
	if verbose {
		fmt.Fprintf(stderr, "iotrace run: filter pushed down to the backend: %s\n", push)
	}
	st.watch(&opts)
	return runLiveTo(ctx, opts, sink, stderr)
}

// readScript reads the script file, or standard input for "-".
func readScript(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		src, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read the script from standard input: %w", err)
		}
		return src, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	return src, nil
}

// parseDefines turns NAME=VALUE flags into the script's args.
func parseDefines(defs []string) (map[string]string, error) {
	m := make(map[string]string, len(defs))
	for _, d := range defs {
		name, value, ok := strings.Cut(d, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--define %q: want NAME=VALUE", d)
		}
		m[name] = value
	}
	return m, nil
}

// printFields lists the event fields.
func printFields(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tTYPE\tMEANING")
	for _, f := range where.Fields() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Kind, f.Doc)
	}
	fmt.Fprintf(tw, "device\tstring\tblock device name when the trace names it (sda, nvme0n1), else dev (scripts only)\n")
	fmt.Fprintf(tw, "copy()\tmethod\ta copy of the event that stays valid after on_event returns (scripts only)\n")
	return tw.Flush()
}
