package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/tracefile"
)

// periodicFlush flushes a trace file writer at most once per interval,
// from the stream's own calls, so that a crash loses little.
type periodicFlush struct {
	*tracefile.Writer
	every time.Duration
	next  time.Time
}

func (p *periodicFlush) tick() error {
	if now := time.Now(); now.After(p.next) {
		p.next = now.Add(p.every)
		return p.Writer.Flush()
	}
	return nil
}

func (p *periodicFlush) Event(e *event.Event) error {
	if err := p.Writer.Event(e); err != nil {
		return err
	}
	return p.tick()
}

func (p *periodicFlush) Fact(f *event.Fact) error {
	if err := p.Writer.Fact(f); err != nil {
		return err
	}
	return p.tick()
}

func newRecordCmd() *cobra.Command {
	var (
		fo   filter.Options
		path string
		live liveFlags
	)
	cmd := &cobra.Command{
		Use:   "record -o FILE.iot|FILE.etl [filters] [--duration D] [-- COMMAND [ARGS...]]",
		Short: "Record this machine's file and block I/O to a trace file",
		Long: `Record file system calls and block I/O to a self-contained .iot trace file
that resolves on any machine (iotrace print, report, compare, convert).
With a command after --, iotrace starts it once the probes are attached and
records only it and its descendants; the recording stops when it exits,
and iotrace exits with its status (128+N when signal N killed it).
Otherwise it runs until Ctrl-C, SIGTERM or --duration (unattended use).
The file is flushed every second, so a crash loses little.
On Windows, -o FILE.etl records a file-mode ETW kernel session instead, which
every iotrace command reads on any OS (names resolve in two passes).`,
		Example: `  sudo iotrace record -o build.iot -- make -j8
  sudo iotrace record -o db.iot --comm postgres --duration 10m`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			command, err := commandArgs(cmd, args)
			if err != nil {
				return err
			}
			if path == "" || path == "-" {
				return fmt.Errorf("record needs an output file: -o FILE.iot")
			}
			toETL := strings.HasSuffix(strings.ToLower(path), ".etl")
			if !toETL && !strings.HasSuffix(strings.ToLower(path), ".iot") {
				return fmt.Errorf("record writes .iot trace files (or .etl on Windows): %q should end in .iot (use trace -o for text, jsonl or csv)", path)
			}
			f, err := filter.New(fo)
			if err != nil {
				return err
			}
			size, err := parseSize(live.bufferSize)
			if err != nil {
				return err
			}
			if toETL {
				opts := backend.Options{Command: command, Duration: live.duration, BufferSize: size, FollowChildren: len(command) > 0}
				fo.PushDown(&opts)
				finish := commandStatus(&opts)
				return finish(recordETL(cmd.Context(), opts, path, cmd.ErrOrStderr()))
			}
			if _, err := pickLiveBackend(); err != nil {
				return err
			}
			w, err := tracefile.Create(path, tracefile.WriterOptions{})
			if err != nil {
				return fmt.Errorf("create %s: %w", path, err)
			}
			opts := backend.Options{Command: command, Duration: live.duration, BufferSize: size}
			fo.PushDown(&opts)
			if len(command) > 0 {
				opts.FollowChildren = true
			}
			finish := commandStatus(&opts)
			stderr := cmd.ErrOrStderr()
			pf := &periodicFlush{Writer: w, every: time.Second}
			s := &summary{Sink: problemWarner{Sink: pf, w: stderr}, w: stderr, verb: "recorded"}
			err = runLiveTo(cmd.Context(), opts, f.Sink(s), stderr)
			if cerr := w.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("write %s: %w", path, cerr)
			}
			if err == nil {
				fmt.Fprintf(stderr, "iotrace: wrote %s\n", path)
			}
			return finish(err)
		},
	}
	addFilterFlags(cmd, &fo)
	cmd.Flags().StringVarP(&path, "output", "o", "", "the trace file to write (FILE.iot; FILE.etl on Windows)")
	addLiveFlags(cmd, &live)
	return cmd
}
