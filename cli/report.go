package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/internal/termesc"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/rotate"
	"github.com/iotrace/iotrace/stackprof"
)

// reportFlags are the flags of iotrace report.
type reportFlags struct {
	format        string
	top           int
	output        string
	heatmap       string
	allHistograms bool
	live          bool
	merge         bool
	liveOpts      liveFlags
	filter        filter.Options
	stacks        stackFlags
}

func newReportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report INPUT... | report --merge REPORT.json... | report --live [filters] [-- COMMAND [ARGS...]]",
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
--duration) and prints the report when the trace stops.

With several inputs (files or globs: iotrace report 'traces/*/*.iot'), each
trace is read in turn and the reports are merged into one fleet report: a
per-host breakdown, fleet totals, op latency percentiles from the merged
sketches, and the top processes, files, errors and slowest operations of all
traces, each marked with its host. --format json carries the op latency
sketches in a mergeable encoding (docs/analysis.md), so per-host reports merge
later without their events: iotrace report --merge a.json b.json.`,
		Example: `  iotrace report trace.iot
  iotrace report trace.etl --format json > report.json
  iotrace report trace.iot --comm 'cc*' --top 20 --heatmap latency.svg
  sudo iotrace report --live -- make -j8
  iotrace report 'fleet/*/*.iot' --format json > week.json
  iotrace report --merge monday.json tuesday.json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.stacks.show && (f.live || f.merge || f.format != "text") {
				return fmt.Errorf("--stacks reports the stacks of a trace file in text (not with --live, --merge or --format json)")
			}
			if f.heatmap != "" && f.heatmap == f.output {
				return fmt.Errorf("--heatmap and -o name the same file %s", f.output)
			}
			var command, paths []string
			var err error
			if f.live {
				if command, err = commandArgs(cmd, args); err != nil {
					return err
				}
			} else {
				if len(args) == 0 || cmd.ArgsLenAtDash() >= 0 {
					return fmt.Errorf("report needs a trace file (or several, or --merge with report JSON files, or --live to trace this machine)")
				}
				if paths, err = expandInputs(args, true); err != nil {
					return err
				}
			}
			stdout, finish, err := openSummary(f.output, cmd.InOrStdin(), cmd.OutOrStdout(), paths...)
			if err != nil {
				return err
			}
			switch {
			case f.live:
				err = runReportLive(cmd.Context(), command, &f, stdout, cmd.ErrOrStderr())
			case f.merge:
				err = runReportMerge(paths, &f, stdout)
			default:
				err = runReports(cmd.Context(), paths, &f, cmd.InOrStdin(), stdout, cmd.ErrOrStderr())
			}
			return finish(err)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.IntVar(&f.top, "top", 10, "number of processes, files, errors and slow operations shown")
	fl.StringVarP(&f.output, "output", "o", "", "write the report to this file instead of standard output")
	fl.StringVar(&f.heatmap, "heatmap", "", "also write a latency heatmap (block layer and per op) to this SVG file")
	fl.BoolVar(&f.allHistograms, "all-histograms", false, "draw a latency histogram for every op (text)")
	fl.BoolVar(&f.live, "live", false, "trace this machine now (and the command after --) instead of reading a file")
	fl.BoolVar(&f.merge, "merge", false, "merge reports written by report --format json (the arguments) into one")
	addFilterFlags(cmd, &f.filter)
	addLiveFlags(cmd, &f.liveOpts)
	addStackFlags(cmd, &f.stacks, "also report the top stacks by time, bytes and count, per op and for block I/O (text, one trace)")
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
	opts := backend.Options{Command: command, Duration: f.liveOpts.duration, BufferSize: size, CommandStdout: stderr, WaitWriteback: f.liveOpts.waitWriteback, Backend: f.liveOpts.backend}
	f.filter.PushDown(&opts)
	if len(command) > 0 {
		opts.FollowChildren = true
	}
	hm, err := createHeatmap(f, nil)
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

// reportOf reads one trace into a report. A damaged trace returns the
// report of what was read and an error saying so.
func reportOf(ctx context.Context, in input.Reader, name string, f *reportFlags, flt *filter.Filter, stderr io.Writer) (*report.Report, error) {
	return reportOfStacks(ctx, in, name, f, flt, stderr, nil)
}

// reportOfStacks is reportOf that, with --stacks, also aggregates the
// events by stack into *agg; the frames it cannot name are counted in
// the report's problems.
func reportOfStacks(ctx context.Context, in input.Reader, name string, f *reportFlags, flt *filter.Filter, stderr io.Writer, agg **stackprof.Aggregator) (*report.Report, error) {
	rep := report.New(report.Options{TopN: f.top, Heatmap: f.heatmap != ""})
	var sink event.Sink
	if agg != nil && f.stacks.show {
		tab := f.stacks.table(ctx)
		*agg = stackprof.NewAggregator(tab)
		sink = tab.Feed(flt.Sink(tab.Summary(stackTee{rep, *agg})))
	} else {
		sink = flt.Sink(rep)
		input.LeaveStacks(in) // a report without --stacks shows none
	}
	// The report is written once the read is over: the progress may
	// share its terminal.
	sink, stopProgress := readProgress(stderr, in, name, sink, f.liveOpts.quiet, false)
	runErr := in.Run(ctx, sink)
	stopProgress()
	if runErr != nil {
		return rep, fmt.Errorf("report on %s covers only what was read before: %w", name, runErr)
	}
	return rep, nil
}

// stackTee passes everything to the report and every event to the
// stack aggregator.
type stackTee struct {
	*report.Report
	agg *stackprof.Aggregator
}

func (t stackTee) Event(e *event.Event) error {
	if e.Layer != event.LayerMarker {
		t.agg.Add(e)
	}
	return t.Report.Event(e)
}

// openTraces opens every trace of the files at paths (a jsonl file may
// hold several). The caller closes them.
func openTraces(paths []string, stdin io.Reader) ([]input.Reader, error) {
	var all []input.Reader
	for _, p := range paths {
		rs, err := input.OpenAllFrom(p, stdin)
		if err != nil {
			closeAll(all)
			return nil, err
		}
		all = append(all, rs...)
	}
	return all, nil
}

func closeAll(rs []input.Reader) {
	for _, r := range rs {
		r.Close()
	}
}

// runReports reports on the traces of paths: one trace gives its report
// (with a heatmap if asked); several are read in turn (memory stays that
// of one report) and their reports merged. A damaged or interrupted trace
// still gets its report: what was read is not lost; the error follows it.
func runReports(ctx context.Context, paths []string, f *reportFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := checkReportFlags(f); err != nil {
		return err
	}
	flt, err := filter.New(f.filter)
	if err != nil {
		return err
	}
	traces, err := openTraces(paths, stdin)
	if err != nil {
		return err
	}
	defer closeAll(traces)
	if len(traces) == 1 {
		// The heatmap file is checked (not the input, not a link) before
		// the trace is read.
		hm, err := createHeatmap(f, stdin, paths[0])
		if err != nil {
			return err
		}
		var agg *stackprof.Aggregator
		rep, runErr := reportOfStacks(ctx, traces[0], paths[0], f, flt, stderr, &agg)
		if err := writeReport(rep, f, stdout, hm); err != nil {
			return errors.Join(runErr, err)
		}
		if agg != nil {
			if err := agg.WriteReport(stdout, f.top); err != nil {
				return errors.Join(runErr, fmt.Errorf("write report: %w", err))
			}
		}
		if runErr != nil {
			return damaged(ctx, runErr)
		}
		return nil
	}
	if f.heatmap != "" {
		return fmt.Errorf("--heatmap draws one trace; the input holds %d", len(traces))
	}
	if f.stacks.show {
		return fmt.Errorf("--stacks reports one trace; the input holds %d", len(traces))
	}
	// Traces of one timeline (a rotated series, recordings of one host
	// and boot) go into one report: one row per process and per file.
	series := report.NewSeries(report.Options{TopN: f.top})
	var damagedErrs []error
	for i, in := range traces {
		name := fmt.Sprintf("trace %d of %d", i+1, len(traces))
		input.LeaveStacks(in)
		sink, stopProgress := readProgress(stderr, in, name, series.Trace(flt.Sink), f.liveOpts.quiet, false)
		err := in.Run(ctx, sink)
		stopProgress()
		if err != nil {
			damagedErrs = append(damagedErrs, fmt.Errorf("report on %s covers only what was read before: %w", name, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	res, err := series.Result(f.top)
	if err != nil {
		return err
	}
	if err := writeResult(res, f, stdout); err != nil {
		return errors.Join(append(damagedErrs, err)...)
	}
	if len(damagedErrs) > 0 {
		return damaged(ctx, errors.Join(damagedErrs...))
	}
	return nil
}

// runReportMerge merges reports written by report --format json.
func runReportMerge(paths []string, f *reportFlags, stdout io.Writer) error {
	if err := checkReportFlags(f); err != nil {
		return err
	}
	if f.heatmap != "" {
		return fmt.Errorf("--heatmap needs the events: it cannot be drawn from merged reports")
	}
	if flt, err := filter.New(f.filter); err != nil || flt.String() != "" {
		return fmt.Errorf("--merge merges finished reports: filters apply when each report is made")
	}
	var parts []*report.Result
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var res report.Result
		if err := json.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("%s: not a report written by iotrace report --format json: %w", p, err)
		}
		if res.Trace.Source == "" && len(res.Ops) == 0 && len(res.Traces) == 0 {
			return fmt.Errorf("%s: not a report written by iotrace report --format json (no trace, no ops)", p)
		}
		parts = append(parts, &res)
	}
	res, err := report.Merge(parts, f.top)
	if err != nil {
		return err
	}
	return writeResult(res, f, stdout)
}

// expandInputs expands the glob patterns among args (for shells that do
// not, and for quoted patterns) and, with dirs (report), directories
// (their .iot files, in name order: a rotated series in time order); a
// pattern that matches nothing, a directory without .iot files, is an
// error; a plain name is kept as it is (a directory given to print is
// then refused by name).
func expandInputs(args []string, dirs bool) ([]string, error) {
	var out []string
	for _, a := range args {
		if st, err := os.Stat(a); err == nil && st.IsDir() && dirs {
			m, err := filepath.Glob(filepath.Join(a, "*"+rotate.Ext))
			if err != nil || len(m) == 0 {
				return nil, fmt.Errorf("input directory %s holds no %s file", a, rotate.Ext)
			}
			slices.Sort(m)
			out = append(out, m...)
			continue
		}
		if !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("input pattern %q: %w", a, err)
		}
		if len(m) == 0 {
			if _, err := os.Stat(a); err == nil {
				out = append(out, a) // a file whose name holds glob characters
				continue
			}
			return nil, fmt.Errorf("input pattern %q matches no file", a)
		}
		out = append(out, m...)
	}
	return out, nil
}

// createHeatmap starts the --heatmap file, if any (nil without one).
// stdin is standard input, an input when one of inputs is "-".
func createHeatmap(f *reportFlags, stdin io.Reader, inputs ...string) (*outfile.File, error) {
	if f.heatmap == "" {
		return nil, nil
	}
	out, err := outfile.CreateReading(f.heatmap, stdinFile(stdin, inputs), inputs...)
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
	if err := writeResult(rep.Result(), f, stdout); err != nil {
		return err
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

// writeResult writes a report as text or JSON.
func writeResult(res *report.Result, f *reportFlags, stdout io.Writer) error {
	if f.format == "json" {
		enc := json.NewEncoder(jsonOnTerminal(stdout, "json", "", stdout))
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else if err := res.WriteText(stdout, report.TextOptions{Color: useColor(stdout), AllHistograms: f.allHistograms}); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// isTerminal reports whether w is a terminal (or a console). Not any
// character device: /dev/null is one, and output sent there is not seen.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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

// toTerminal reports whether an output to path (isStdout: standard output)
// goes to a terminal, where names from the traced system are shown by the
// terminal rule (internal/termesc) in every format meant for people.
func toTerminal(path string, stdout io.Writer) bool {
	return isStdout(path) && isTerminal(stdout)
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
