package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/internal/termesc"
	"github.com/iotrace/iotrace/output"
)

// addFilterFlags binds the shared filter flags (--pid, --comm, --path,
// --op, --layer, --min-latency, --failed, --follow-children) with their
// shell completions.
func addFilterFlags(cmd *cobra.Command, o *filter.Options) {
	filter.AddFlags(cmd.Flags(), o)
	// --op help lists the ops and exits (before the command runs).
	opFlag := cmd.Flags().Lookup("op")
	help := &opHelp{Value: opFlag.Value}
	opFlag.Value = help
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if help.asked {
				return nil // "iotrace print --op help" needs no file
			}
			return args(c, a)
		}
	}
	run := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if help.asked {
			if _, err := io.WriteString(c.OutOrStdout(), opList()); err != nil {
				return err
			}
			return errListed
		}
		if run != nil {
			return run(c, args)
		}
		return nil
	}
	ops := make([]string, 0, event.NumOps)
	for op := event.Op(1); int(op) < event.NumOps; op++ {
		ops = append(ops, op.String())
	}
	_ = cmd.RegisterFlagCompletionFunc("op", fixedCompletion(ops...))
	_ = cmd.RegisterFlagCompletionFunc("layer", fixedCompletion("file", "block", "marker"))
}

// opHelp is the --op flag's value that also takes "help".
type opHelp struct {
	pflag.Value
	asked bool
}

func (h *opHelp) Set(v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "help") {
		h.asked = true
		return nil
	}
	return h.Value.Set(v)
}

// errListed ends a command that printed what was asked (--op help) with
// exit code 0.
var errListed = errors.New("listed")

// opList is the text of --op help: every op name, by layer.
func opList() string {
	var b strings.Builder
	b.WriteString("Ops --op selects (comma-separated; docs/events.md maps each to system calls and ETW events):\n")
	for _, l := range []event.Layer{event.LayerFile, event.LayerBlock, event.LayerMarker} {
		var names []string
		for op := event.Op(1); int(op) < event.NumOps; op++ {
			if op.Layer() == l {
				names = append(names, op.String())
			}
		}
		fmt.Fprintf(&b, "  %-7s %s\n", l.String()+":", strings.Join(names, " "))
	}
	return b.String()
}

// outputFlags are the flags of commands that write a trace.
type outputFlags struct {
	quiet     bool // -q: no progress bar (print, convert)
	format    string
	path      string
	facts     bool
	wallClock bool
	counters  bool
}

// addOutputFlags binds --format/-f (one of formats), --output/-o, --facts
// and --wall-clock.
func addOutputFlags(cmd *cobra.Command, o *outputFlags, formats []string, outputHelp string) {
	fs := cmd.Flags()
	fs.StringVarP(&o.format, "format", "f", "", "output format: "+strings.Join(formats, ", ")+" (default: from the output file's extension, else "+formats[0]+")")
	fs.StringVarP(&o.path, "output", "o", "", outputHelp)
	fs.BoolVar(&o.facts, "facts", false, "also print the trace's facts (name bindings, processes, devices)")
	fs.BoolVar(&o.wallClock, "wall-clock", false, "print UTC times of day instead of seconds from the trace start")
	fs.BoolVar(&o.counters, "counters", false, "text: list every counter at the end, those that are 0 included (jsonl always carries them all)")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion(formats...))
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// formatFor picks the output format: the flag, else the output file's
// extension, else def. It checks the result is one of valid.
func formatFor(flag, path, def string, valid []string) (string, error) {
	f := strings.ToLower(flag)
	if f == "" && !isStdout(path) {
		f = formatForExt(path)
		// .json is Perfetto's trace-event JSON where the command writes
		// it (convert), jsonl elsewhere.
		if l := strings.ToLower(path); strings.HasSuffix(l, ".json") && slices.Contains(valid, "perfetto") {
			f = "perfetto"
		}
	}
	if f == "" {
		f = def
	}
	for _, v := range valid {
		if f == v {
			return f, nil
		}
	}
	if flag == "" {
		return "", fmt.Errorf("cannot tell the output format from %q: use --format (%s)", path, strings.Join(valid, ", "))
	}
	return "", fmt.Errorf("unknown output format %q (valid: %s)", flag, strings.Join(valid, ", "))
}

// formatForExt maps an output file's extension to a format.
func formatForExt(path string) string {
	switch l := strings.ToLower(path); {
	case strings.HasSuffix(l, ".iot"):
		return "iot"
	case strings.HasSuffix(l, ".parquet"):
		return "parquet"
	case strings.HasSuffix(l, ".pftrace"), strings.HasSuffix(l, ".perfetto"):
		return "perfetto"
	case strings.HasSuffix(l, ".pb.gz"), strings.HasSuffix(l, ".pprof"):
		return "pprof"
	case strings.HasSuffix(l, ".folded"):
		return "folded"
	}
	return output.FormatForPath(path)
}

// openOutput returns the writer for path (standard output when
// isStdout(path)) and a function that finishes it: the file is created by
// internal/outfile's rule (never one of inputs, nor the file on stdin
// when an input is "-"; never through a symlink, 0600, written to a
// temporary file) and finish(true) renames it into place, reporting any
// write error; finish(false), or any write error, removes it and leaves
// what was at path.
//
// A failed write makes finish return a *writeError, which a command
// reports (exit 1) rather than the reading error it caused.
func openOutput(path string, stdin io.Reader, stdout io.Writer, inputs ...string) (io.Writer, func(keep bool) error, error) {
	return openOutputLimit(path, stdin, stdout, outputLimit(stdin, inputs), inputs...)
}

// openLiveOutput is openOutput for a command that traces live (trace,
// serve, run without an input): no output limit, since no trace file
// bounds what it may write; inputs (its script) are still never written
// over.
func openLiveOutput(path string, stdin io.Reader, stdout io.Writer, inputs ...string) (io.Writer, func(keep bool) error, error) {
	return openOutputLimit(path, stdin, stdout, 0, inputs...)
}

// openOutputLimit is openOutput with the output's limit (0: none).
func openOutputLimit(path string, stdin io.Reader, stdout io.Writer, limit int64, inputs ...string) (io.Writer, func(keep bool) error, error) {
	if isStdout(path) {
		w := &errWriter{w: stdout, limit: limit}
		return w, func(bool) error {
			if w.err != nil && !isOutputLimit(w.err) {
				return &writeError{what: "standard output", err: w.err}
			}
			return nil
		}, nil
	}
	f, err := outfile.CreateReading(path, stdinFile(stdin, inputs), inputs...)
	if err != nil {
		return nil, nil, err
	}
	w := &errWriter{w: f, limit: limit}
	return w, func(keep bool) error {
		if isOutputLimit(w.err) {
			// Stopped at its limit: what was written is kept, the
			// command fails with the reader's error.
			w.err = nil
		}
		if !keep || w.err != nil {
			f.Abort()
			if w.err != nil {
				return &writeError{what: path, err: w.err}
			}
			return nil
		}
		if err := f.Commit(); err != nil {
			return &writeError{what: path, err: err}
		}
		return nil
	}, nil
}

// isStdout reports whether an output path names standard output: "" (no
// -o), "-", or /dev/stdout (a symbolic link, which outfile would refuse,
// to the descriptor the command already holds).
func isStdout(path string) bool {
	return path == "" || path == "-" || (runtime.GOOS != "windows" && path == "/dev/stdout")
}

// stdinFile describes the file on standard input when one of inputs is
// "-" and stdin is a file, so that the output cannot be it; else nil.
func stdinFile(stdin io.Reader, inputs []string) fs.FileInfo {
	if !slices.Contains(inputs, "-") {
		return nil
	}
	f, ok := stdin.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	return st
}

// writeError is a failure to write the output: the input may be intact.
type writeError struct {
	what string
	err  error
}

func (e *writeError) Error() string {
	return fmt.Sprintf("writing %s failed, the output is incomplete: %v", e.what, e.err)
}
func (e *writeError) Unwrap() error { return e.err }

// finishRead turns what a reading command's run and output returned into
// its error: a write error first (exit 1: the output is incomplete, the
// input may be intact), then a reading error (exit 2: damaged input).
func finishRead(runErr, closeErr error) error {
	var we *writeError
	if errors.As(closeErr, &we) {
		return closeErr
	}
	if runErr != nil {
		return readError(runErr)
	}
	return closeErr
}

// errWriter remembers the first write error. With a limit (not 0), a
// write that would take the output past it writes nothing and fails with
// an *outputLimitError.
type errWriter struct {
	w     io.Writer
	err   error
	n     int64
	limit int64
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.limit > 0 && e.n+int64(len(b)) > e.limit {
		e.err = &outputLimitError{limit: e.limit}
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.n += int64(n)
	if err != nil {
		e.err = err
	}
	return n, err
}

// problemWarner passes a stream on and, at its end, warns on w about every
// problem counter of the trailer (events lost, unpaired, unresolved,
// dropped), so that they are seen even when the output goes to a file or
// a format without a summary.
type problemWarner struct {
	event.Sink
	w io.Writer
}

func (p problemWarner) End(t *event.Trailer) error {
	if probs := t.Stats.Problems(); len(probs) > 0 {
		parts := make([]string, len(probs))
		for i, c := range probs {
			parts[i] = fmt.Sprintf("%d %s (%s)", c.Value, c.Kind, termesc.String(c.Name))
		}
		fmt.Fprintf(p.w, "iotrace: warning: the trace is incomplete: %s\n", strings.Join(parts, ", "))
	}
	return p.Sink.End(t)
}

// openSummary opens the output of a command that writes one summary
// (report, compare): standard output is passed through as it is (its
// colours and the terminal rule still apply); a file (-o) is created by
// openOutput's rule. finish(runErr) ends it: the file is kept when the
// summary was written to it whole (a damaged input's summary included),
// removed otherwise; a write error wins over runErr.
func openSummary(path string, stdin io.Reader, stdout io.Writer, inputs ...string) (io.Writer, func(runErr error) error, error) {
	if isStdout(path) {
		return stdout, func(runErr error) error { return runErr }, nil
	}
	w, closeOut, err := openOutput(path, stdin, stdout, inputs...)
	if err != nil {
		return nil, nil, err
	}
	cw := &countWriter{w: w}
	return cw, func(runErr error) error {
		closeErr := closeOut(cw.n > 0)
		var we *writeError
		if errors.As(closeErr, &we) || runErr == nil {
			return closeErr
		}
		return runErr
	}, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
