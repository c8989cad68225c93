package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/internal/interrupt"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/internal/termesc"
	"github.com/iotrace/iotrace/metrics"
	"github.com/iotrace/iotrace/rotate"
	"github.com/iotrace/iotrace/script"
	"github.com/iotrace/iotrace/serve"
	"github.com/iotrace/iotrace/tracefile"
)

// serveFlags are the flags of iotrace serve.
type serveFlags struct {
	filter       filter.Options
	live         liveFlags
	listen       string
	top          int
	script       string
	defines      []string
	scriptOutput string
	output       string
	rot          rotateFlags
}

const serveLong = `Trace this machine continuously and serve its I/O as Prometheus metrics on
/metrics (Prometheus text, OpenMetrics, and protobuf with native histograms),
with a health check on /healthz; nothing else is served.

Metrics: operations, bytes and latency histograms (classic buckets and native
histograms) by layer, op, device and process name; errors by errno (NTSTATUS
on Windows); the tracer's own health (events, what was lost, unpaired and
unresolved by reason, CPU, memory, start-up time). Process names, devices and
error names are bounded: the --top busiest have series of their own, the rest
are summed under "(other)" (re-ranked every minute), so memory depends on
--top, not on how long it runs or how many processes come and go.

With --script FILE.star, the script's aggregations (count, sum, avg, min, max,
hist_log2, hist_linear) are exported too, named iotrace_script_NAME with their
keys as labels, bounded the same way; the script runs as 'iotrace run' runs it.
With -o, serve records at the same time, as 'record' does (-o FILE.iot, or
-o DIR/ --rotate 1h,1GiB --max-total 20GiB), so a spike on a dashboard has the
trace behind it.

It listens on 127.0.0.1 only unless --listen says otherwise; the metrics name
the processes of this machine. The metrics, the PromQL to read them and a
scrape configuration: docs/fleet.md.`

func newServeCmd() *cobra.Command {
	var sf serveFlags
	cmd := &cobra.Command{
		Use:   "serve [filters] [--listen ADDR] [--script FILE.star] [-o DIR/ --rotate 1h,1GiB]",
		Short: "Serve this machine's I/O as Prometheus metrics, continuously (and record it, with -o)",
		Long:  serveLong,
		Example: `  sudo iotrace serve
  sudo iotrace serve --listen 0.0.0.0:9477 --top 50
  sudo iotrace serve --script examples/scripts/biolatency.star
  sudo iotrace serve -o /var/lib/iotrace/ --rotate 1h,1GiB --max-total 20GiB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, sf, time.Now())
		},
	}
	addFilterFlags(cmd, &sf.filter)
	fs := cmd.Flags()
	fs.StringVar(&sf.listen, "listen", serve.DefaultListen, "the address to serve /metrics and /healthz on (HOST:PORT; port 0 picks a free one)")
	fs.IntVar(&sf.top, "top", metrics.DefaultTop, "how many process names, devices, error names and keys of each script aggregation have series of their own (the rest are summed under \"(other)\")")
	fs.StringVar(&sf.script, "script", "", "also run this script (FILE.star) and export its aggregations as metrics")
	fs.StringArrayVarP(&sf.defines, "define", "D", nil, "with --script: set args[NAME] = VALUE for the script (NAME=VALUE, repeatable)")
	fs.StringVar(&sf.scriptOutput, "script-output", "", "with --script: write what the script prints to this file (default: standard output)")
	fs.StringVarP(&sf.output, "output", "o", "", "also record to this trace file (FILE.iot), or with --rotate to a series of files in this directory")
	addLiveFlags(cmd, &sf.live)
	addRotateFlags(cmd, &sf.rot)
	return cmd
}

// runServe checks the flags, listens, opens the recording and the script,
// and runs serve.Run until the trace ends.
func runServe(cmd *cobra.Command, sf serveFlags, start time.Time) error {
	stderr := cmd.ErrOrStderr()
	f, err := filter.New(sf.filter)
	if err != nil {
		return err
	}
	if sf.top < 1 {
		return fmt.Errorf("--top %d: want at least 1", sf.top)
	}
	size, err := parseSize(sf.live.bufferSize)
	if err != nil {
		return err
	}
	opts := backend.Options{Duration: sf.live.duration, BufferSize: size}
	sf.filter.PushDown(&opts)
	if err := checkLiveOptions(opts); err != nil {
		return err
	}
	if sf.script == "" && (len(sf.defines) > 0 || sf.scriptOutput != "") {
		return fmt.Errorf("--define and --script-output go with --script")
	}
	opts.Backend = sf.live.backend
	b, err := pickLiveBackend(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", sf.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", sf.listen, err)
	}
	defer ln.Close()
	if !loopback(ln.Addr()) {
		fmt.Fprintf(stderr, "iotrace: warning: serving on %s, reachable from other machines: the metrics name this machine's processes\n", ln.Addr())
	}

	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	so := serve.Options{
		Listener: ln, Filter: f, Metrics: metrics.Options{Top: sf.top},
		Start: start, Version: Version, Backend: b.Name(), Log: stderr,
		Trace: func(ctx context.Context, progress func(event.Stats), sink event.Sink) error {
			o := opts
			o.Progress = progress
			s := &summary{Sink: problemWarner{Sink: sink, w: stderr}, w: stderr, verb: "traced"}
			return runLiveTo(ctx, o, s, stderr)
		},
	}
	var finishRec func(error) error
	if sf.output != "" {
		if so.Record, finishRec, err = openServeRecording(cmd.Context(), sf.output, &sf.rot, stderr); err != nil {
			return err
		}
	} else if sf.rot.set() {
		return fmt.Errorf("--rotate, --keep and --max-total go with -o DIR/")
	}
	var closeScript func(runErr error) error
	if sf.script != "" {
		so.Script, closeScript, err = loadServeScript(cmd, sf, cancel)
		if err != nil {
			if finishRec != nil {
				err = finishRec(err)
			}
			return err
		}
		so.ScriptSource = sf.script
	}
	fmt.Fprintf(stderr, "iotrace: serving metrics on http://%s%s (health: %s)\n", ln.Addr(), serve.MetricsPath, serve.HealthPath)
	err = serve.Run(ctx, so)
	if closeScript != nil {
		err = closeScript(err)
	}
	if finishRec != nil {
		err = finishRec(err)
	}
	return err
}

// loopback reports whether addr is a loopback address.
func loopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// openServeRecording opens what -o asks serve to record, with record's
// parts: a rotated series (--rotate, package rotate and record's rotation
// flags), or one .iot file flushed every second, rescued on a second
// Ctrl-C and renamed into place at the end (finishRecording). done
// finishes it with the run's error.
func openServeRecording(ctx context.Context, path string, rot *rotateFlags, stderr io.Writer) (sink event.Sink, done func(error) error, err error) {
	if rot.set() {
		ro, err := rot.options(path, stderr)
		if err != nil {
			return nil, nil, err
		}
		series, err := rotate.New(ro)
		if err != nil {
			return nil, nil, err
		}
		return series, func(err error) error {
			if cerr := series.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("write %s: %w", series.Path(), cerr)
			}
			return err
		}, nil
	}
	if !strings.HasSuffix(strings.ToLower(path), ".iot") {
		return nil, nil, fmt.Errorf("serve records .iot trace files: %q should end in .iot (or give a directory with --rotate)", path)
	}
	out, err := outfile.Create(path)
	if err != nil {
		return nil, nil, err
	}
	unrescue := interrupt.OnQuit(ctx, func() { rescueRecording(out, stderr) })
	w := tracefile.NewWriter(out, tracefile.WriterOptions{})
	rec := &recordedCount{Sink: &periodicFlush{Writer: w, out: out, every: time.Second}}
	return rec, func(err error) error {
		unrescue()
		return finishRecording(out, w, err, rec.n, stderr)
	}, nil
}

// recordedCount counts the events its sink took (finishRecording says how
// many a failed write lost).
type recordedCount struct {
	event.Sink
	n uint64
}

func (c *recordedCount) Event(e *event.Event) error {
	if err := c.Sink.Event(e); err != nil {
		return err
	}
	c.n++
	return nil
}

// loadServeScript loads --script as run does, printing to --script-output
// (standard output by default) and stopping serve when it calls exit() or
// fails. done runs on_end, closes the output and turns the outcome into
// the command's error (as run does).
func loadServeScript(cmd *cobra.Command, sf serveFlags, stop func()) (*script.Script, func(runErr error) error, error) {
	src, err := readScript(sf.script, cmd.InOrStdin())
	if err != nil {
		return nil, nil, err
	}
	defines, err := parseDefines(sf.defines)
	if err != nil {
		return nil, nil, err
	}
	out, closeOut, err := openLiveOutput(sf.scriptOutput, cmd.InOrStdin(), cmd.OutOrStdout(), sf.script)
	if err != nil {
		return nil, nil, err
	}
	var esc *termesc.Writer
	if toTerminal(sf.scriptOutput, cmd.OutOrStdout()) {
		esc = termesc.NewWriter(out)
		out = esc
	}
	s, err := script.Load(sf.script, src, script.Options{
		Stdout:    out,
		Stderr:    termesc.NewWriter(cmd.ErrOrStderr()),
		Args:      defines,
		WallClock: true,
		Stop:      stop,
	})
	if err != nil {
		closeOut(false)
		return nil, nil, err
	}
	return s, func(runErr error) error {
		closeErr := s.Close()
		if esc != nil {
			if err := esc.Flush(); closeErr == nil {
				closeErr = err
			}
		}
		if err := closeOut(true); closeErr == nil {
			closeErr = err
		}
		if err := runOutcome(cmd.Context(), runErr, s.Err(), true, sf.scriptOutput); err != nil {
			return err
		}
		return closeErr
	}, nil
}
