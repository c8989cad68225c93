package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/internal/termesc"
	"github.com/iotrace/iotrace/report"
)

// reportFlags are the flags of iotrace report.
type reportFlags struct {
	format        string
	top           int
	heatmap       string
	allHistograms bool
	live          bool
	liveOpts      liveFlags
	filter        filter.Options
}

func newReportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report INPUT | report --live [filters] [-- COMMAND [ARGS...]]",
		Short: "Summarise a trace: where the time went, what hit the disk, what the cache absorbed",
		Long: `report reads a trace (.iot, .etl, .jsonl) in one streaming pass and prints
totals per layer and per op, processes in process-tree order, the top files by
bytes and by time, cache hits vs disk reads, the block layer per device (IOPS,
throughput, queue vs service time, sequential vs random, sizes), errors by
result and path, the slowest operations with the block I/O they caused, and
log2 latency histograms. Events lost, unpaired or unresolved are always shown.
Latency percentiles are within 0.8%; memory stays bounded on any trace length.

With --live, report traces this machine instead (like trace: a command after
-- is started and traced with its children; otherwise until Ctrl-C or
--duration) and prints the report when the trace stops.`,
		Example: `  iotrace report trace.iot
  iotrace report trace.etl --format json > report.json
  iotrace report trace.iot --comm 'cc*' --top 20 --heatmap latency.svg
  sudo iotrace report --live -- make -j8`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.live {
				command, err := commandArgs(cmd, args)
				if err != nil {
					return err
				}
				return runReportLive(cmd.Context(), command, &f, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if len(args) != 1 || cmd.ArgsLenAtDash() >= 0 {
				return fmt.Errorf("report needs one trace file (or --live to trace this machine)")
			}
			return runReport(cmd.Context(), args[0], &f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.IntVar(&f.top, "top", 10, "number of processes, files, errors and slow operations shown")
	fl.StringVar(&f.heatmap, "heatmap", "", "also write a latency heatmap (block layer and per op) to this SVG file")
	fl.BoolVar(&f.allHistograms, "all-histograms", false, "draw a latency histogram for every op (text)")
	fl.BoolVar(&f.live, "live", false, "trace this machine now (and the command after --) instead of reading a file")
	addFilterFlags(cmd, &f.filter)
	addLiveFlags(cmd, &f.liveOpts)
	return cmd
}

// checkReportFlags validates what report and report --live share.
func checkReportFlags(f *reportFlags) error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("--format %q: want text or json", f.format)
	}
	if f.top <= 0 {
		return fmt.Errorf("--top %d: want a positive number", f.top)
	}
	return nil
}

func runReportLive(ctx context.Context, command []string, f *reportFlags, stdout, stderr io.Writer) error {
	if err := checkReportFlags(f); err != nil {
		return err
	}
	flt, err := filter.New(f.filter)
	if err != nil {
		return err
	}
	size, err := parseSize(f.liveOpts.bufferSize)
	if err != nil {
		return err
	}
	// The report is on stdout; the command's own output goes to stderr.
	opts := backend.Options{Command: command, Duration: f.liveOpts.duration, BufferSize: size, CommandStdout: stderr}
	f.filter.PushDown(&opts)
	if len(command) > 0 {
		opts.FollowChildren = true
	}
	hm, err := createHeatmap(f)
	if err != nil {
		return err
	}
	rep := report.New(report.Options{TopN: f.top, Heatmap: f.heatmap != ""})
	runErr := runLiveTo(ctx, opts, flt.Sink(rep), stderr)
	if rep.Began() {
		if err := writeReport(rep, f, stdout, hm); err != nil {
			return errors.Join(runErr, err)
		}
	} else if hm != nil {
		hm.Abort()
	}
	return runErr
}

func runReport(ctx context.Context, path string, f *reportFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := checkReportFlags(f); err != nil {
		return err
	}
	flt, err := filter.New(f.filter)
	if err != nil {
		return err
	}
	in, err := input.OpenFrom(path, stdin)
	if err != nil {
		return err
	}
	defer in.Close()
	// The heatmap file is checked (not the input, not a link) before the
	// trace is read.
	hm, err := createHeatmap(f, path)
	if err != nil {
		return err
	}
	rep := report.New(report.Options{TopN: f.top, Heatmap: f.heatmap != ""})
	sink := flt.Sink(rep)
	var prog *report.Progress
	if isTerminal(stderr) {
		prog = report.NewProgress(sink, stderr, 0)
		sink = prog
	}
	runErr := in.Run(ctx, sink)
	if prog != nil {
		prog.Done()
	}
	// A damaged or interrupted trace still gets its report: what was
	// read is not lost. The error follows it.
	if err := writeReport(rep, f, stdout, hm); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return damaged(ctx, fmt.Errorf("report on %s covers only what was read before: %w", path, runErr))
	}
	return nil
}

// createHeatmap starts the --heatmap file, if any (nil without one).
func createHeatmap(f *reportFlags, inputs ...string) (*outfile.File, error) {
	if f.heatmap == "" {
		return nil, nil
	}
	out, err := outfile.Create(f.heatmap, inputs...)
	if err != nil {
		return nil, fmt.Errorf("heatmap: %w", err)
	}
	return out, nil
}

// writeReport writes the report to stdout and the heatmap to hm (when
// not nil), which it commits or aborts.
func writeReport(rep *report.Report, f *reportFlags, stdout io.Writer, hm *outfile.File) (err error) {
	if hm != nil {
		defer func() {
			if err != nil {
				hm.Abort()
			}
		}()
	}
	res := rep.Result()
	if f.format == "json" {
		enc := json.NewEncoder(jsonOnTerminal(stdout, "json", "", stdout))
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else if err := res.WriteText(stdout, report.TextOptions{Color: useColor(stdout), AllHistograms: f.allHistograms}); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if hm != nil {
		if err := rep.WriteHeatmap(hm); err != nil {
			return fmt.Errorf("write heatmap %s: %w", f.heatmap, err)
		}
		if err := hm.Commit(); err != nil {
			return fmt.Errorf("heatmap: %w", err)
		}
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal or a
// console).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// toTerminal reports whether an output to path ("" and "-" are stdout)
// goes to a terminal, where names from the traced system are shown by the
// terminal rule (internal/termesc) in every format meant for people.
func toTerminal(path string, stdout io.Writer) bool {
	return (path == "" || path == "-") && isTerminal(stdout)
}

// jsonOnTerminal returns w, through the terminal rule (internal/termesc)
// when it is JSON (jsonl, json) going to a terminal: JSON escapes C0
// controls but lets C1 controls (U+009B, a CSI on some terminals) through.
// JSON lines end in newlines, so no character is ever held back.
func jsonOnTerminal(w io.Writer, format, path string, stdout io.Writer) io.Writer {
	if (format == "jsonl" || format == "json") && toTerminal(path, stdout) {
		return termesc.NewWriter(w)
	}
	return w
}

// useColor reports whether to colour output to w: a terminal, and NO_COLOR
// unset (https://no-color.org).
func useColor(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// filteredSource applies a filter to a trace file on its way to a sink.
type filteredSource struct {
	in  input.Reader
	flt *filter.Filter
}

func (s filteredSource) Run(ctx context.Context, sink event.Sink) error {
	return s.in.Run(ctx, s.flt.Sink(sink))
}
