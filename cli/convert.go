package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/parquetfile"
	"github.com/iotrace/iotrace/perfetto"
	"github.com/iotrace/iotrace/stackprof"
	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/tracefile"
)

// convertFormats are the formats convert writes; the first is the
// default when neither --format nor the extension tells.
var convertFormats = []string{"iot", "jsonl", "csv", "text", "perfetto", "parquet", "pprof", "folded"}

func newConvertCmd() *cobra.Command {
	var (
		fo     filter.Options
		of     outputFlags
		sf     stackFlags
		weight string
	)
	cmd := &cobra.Command{
		Use:   "convert INPUT -o OUTPUT",
		Short: "Convert a trace file to another format (iot, jsonl, csv, text, perfetto, parquet, pprof, folded)",
		Long: `Convert a trace file (.iot, Windows .etl, or jsonl written by iotrace) to iot,
jsonl, csv, text, perfetto or parquet, keeping only the events the filter flags select. The
output format comes from --format, else from OUTPUT's extension (.iot, .jsonl, .csv, .txt,
.parquet; .json and .pftrace are Perfetto's trace-event JSON).

iot and jsonl keep everything (events, facts, stats) and read back with every
command; csv and text are for people and spreadsheets; parquet is one row per
event with names resolved and the trace's host, OS and id on every row, for
DuckDB, Spark, Trino or ClickHouse (docs/parquet.md). pprof and folded
aggregate the events by stack for flame graphs (docs/stacks.md): pprof
(.pb.gz, .pprof) is a profile for go tool pprof, speedscope or Pyroscope with
three values per sample (count, bytes, latency in ns); folded (.folded) is the
collapsed-stack text of flamegraph.pl, one value per line (--weight); frames
are named with the trace's modules and --symbols. A damaged input converts
every intact event, then fails naming the byte offset of the damage.`,
		Example: `  iotrace convert build.iot -o build.jsonl
  iotrace convert build.iot -o reads.csv --op read,write
  iotrace convert build.jsonl -o build.iot
  iotrace convert boot.etl -o boot.iot
  iotrace convert build.iot -o build.parquet
  iotrace convert build.iot -o build.pb.gz --symbols ./symbols
  iotrace convert build.iot -f folded --weight latency -o - | flamegraph.pl > io.svg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if of.path == "" {
				return fmt.Errorf("convert needs an output file: -o OUTPUT")
			}
			format, err := formatFor(of.format, of.path, "", convertFormats)
			if err != nil {
				return err
			}
			w, err := stackprof.ParseWeight(weight)
			if err != nil {
				return err
			}
			if weight != "" && format != "folded" {
				return fmt.Errorf("--weight applies to -f folded (pprof holds every weight)")
			}
			return convertTrace(cmd, args[0], format, fo, of, sf, w)
		},
	}
	addFilterFlags(cmd, &fo)
	addStackFlags(cmd, &sf, "")
	cmd.Flags().StringVar(&weight, "weight", "", "what a folded line counts: count (events, the default), bytes or latency (ns)")
	_ = cmd.RegisterFlagCompletionFunc("weight", fixedCompletion("count", "bytes", "latency"))
	addOutputFlags(cmd, &of, convertFormats, "the file to write (required; - for standard output)")
	addQuietFlag(cmd, &of.quiet)
	return cmd
}

// convertTrace reads in through the filter into the writer of format.
func convertTrace(cmd *cobra.Command, in, format string, fo filter.Options, of outputFlags, sf stackFlags, weight stackprof.Weight) error {
	f, err := filter.New(fo)
	if err != nil {
		return err
	}
	traces, err := input.OpenAllFrom(in, cmd.InOrStdin())
	if err != nil {
		return err
	}
	defer closeAll(traces)
	if len(traces) > 1 && (format == "iot" || format == "perfetto" || format == "parquet" || format == "pprof" || format == "folded") {
		return fmt.Errorf("%s holds %d concatenated traces; a %s file holds one: convert to jsonl, csv or text, or split the input", in, len(traces), format)
	}
	w, closeOut, err := openOutput(of.path, cmd.InOrStdin(), cmd.OutOrStdout(), in)
	if err != nil {
		return err
	}
	w = jsonOnTerminal(w, format, of.path, cmd.OutOrStdout())
	var runErr error
	for _, r := range traces {
		var (
			sink event.Sink
			tab  *stacks.Table
		)
		if format == "csv" || format == "text" || format == "perfetto" {
			input.LeaveStacks(r) // formats that show no stacks
		}
		switch format {
		case "pprof":
			tab = sf.table(cmd.Context())
			sink = stackprof.NewPprof(w, tab)
		case "folded":
			tab = sf.table(cmd.Context())
			sink = stackprof.NewFolded(w, tab, weight)
		case "parquet":
			tab = sf.table(cmd.Context())
			sink = parquetfile.New(w, parquetfile.Options{Stack: tab.FrameStrings})
		default:
			sink, err = newTraceSink(format, w, output.Options{Facts: of.facts, WallClock: of.wallClock, Counters: of.counters, Terminal: toTerminal(of.path, cmd.OutOrStdout())})
			if err != nil {
				closeOut(false)
				return err
			}
		}
		if tab != nil {
			defer tab.Close()
		}
		var s event.Sink = problemWarner{Sink: sink, w: cmd.ErrOrStderr()}
		if tab != nil {
			// The unnamed frames' counts reach the warning.
			s = tab.Summary(s)
		}
		s, stopProgress := readProgress(cmd.ErrOrStderr(), r, in, s, of.quiet, isStdout(of.path) && isTerminal(cmd.OutOrStdout()))
		first := f.Sink(s)
		if tab != nil {
			first = tab.Feed(first)
		}
		runErr = r.Run(cmd.Context(), first)
		stopProgress()
		if runErr != nil {
			break
		}
	}
	// A damaged input's output holds every intact event: it is kept.
	closeErr := closeOut(cmd.Context().Err() == nil)
	return finishRead(runErr, closeErr)
}

// newTraceSink returns the sink that writes format to w.
func newTraceSink(format string, w io.Writer, o output.Options) (event.Sink, error) {
	switch format {
	case "iot":
		return tracefile.NewWriter(w, tracefile.WriterOptions{}), nil
	case "perfetto": // Chrome / Perfetto trace-event JSON (engineer G)
		return perfetto.New(w, perfetto.Options{}), nil
	}
	if format != "text" {
		o.Facts = true // jsonl is the lossless form; csv ignores facts
	}
	return output.New(format, w, o)
}
