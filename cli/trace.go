package cli

import (
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/stacks"
	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/timeorder"
)

func newTraceCmd() *cobra.Command {
	var (
		fo   filter.Options
		out  outputFlags
		live liveFlags
	)
	cmd := &cobra.Command{
		Use:   "trace [filters] [-- COMMAND [ARGS...]]",
		Short: "Stream this machine's file and block I/O as it happens",
		Long: `Trace file system calls and block I/O live and print each event as it
completes. With a command after --, iotrace starts it once the probes are
attached and traces only it and its descendants (like strace -f); the
trace stops when it exits, and iotrace exits with its status (128+N when
signal N killed it), like strace. Otherwise the trace runs until Ctrl-C or
--duration. The last line says how many events were lost.`,
		Example: `  sudo iotrace trace -- make -j8
  sudo iotrace trace --comm postgres --op read,write --min-latency 1ms
  sudo iotrace trace --pid 1234 --follow-children -f jsonl -o trace.jsonl`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			command, err := commandArgs(cmd, args)
			if err != nil {
				return err
			}
			f, err := filter.New(fo)
			if err != nil {
				return err
			}
			size, err := parseSize(live.bufferSize)
			if err != nil {
				return err
			}
			format, err := formatFor(out.format, out.path, "text", []string{"text", "jsonl", "csv"})
			if err != nil {
				return err
			}
			st := newLiveStatus(cmd, live.quiet, command, isStdout(out.path))
			defer st.done()
			w, closeOut, err := openLiveOutput(out.path, nil, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			w = jsonOnTerminal(w, format, out.path, cmd.OutOrStdout())
			var written sizeOf
			if st != nil {
				w = countingWriter{w, &written}
			}
			opts := backend.Options{Command: command, Duration: live.duration, BufferSize: size, WaitWriteback: live.waitWriteback}
			if err = live.stacksInto(&opts); err != nil {
				closeOut(false)
				return err
			}
			oo := output.Options{Facts: out.facts, WallClock: out.wallClock, Counters: out.counters, Terminal: toTerminal(out.path, cmd.OutOrStdout())}
			var tab *stacks.Table
			if opts.Stacks != backend.StacksNone && format == "text" {
				// Frames printed under their events, named from the
				// modules on this machine, as print --stacks does.
				tab = (&stackFlags{}).table(cmd.Context())
				defer tab.Close()
				oo.Frames = tab.Lines
			}
			var sink event.Sink
			sink, err = output.New(format, w, oo)
			if err != nil {
				closeOut(false)
				return err
			}
			if tab != nil {
				sink = tab.Summary(sink)
			}
			fo.PushDown(&opts)
			if len(command) > 0 {
				opts.FollowChildren = true
			}
			finish := commandStatus(&opts)
			stderr := cmd.ErrOrStderr()
			if isStdout(out.path) {
				// The trace is on stdout: the command's own output goes
				// to stderr, as it would beside strace's trace, so that
				// "trace -f jsonl -- CMD | jq" reads only the trace.
				opts.CommandStdout = stderr
			}
			s := &summary{Sink: problemWarner{Sink: sink, w: stderr}, w: stderr, verb: "traced"}
			// In time order within a window: backends deliver by buffer, not by time.
			var first event.Sink = f.Sink(timeorder.New(s, timeorder.Options{}))
			if tab != nil {
				first = tab.Feed(first) // stack and module facts in stream order
			}
			st.watch(&opts)
			st.run(s.events.Load, written.get)
			err = runLiveTo(cmd.Context(), opts, first, stderr)
			st.done()
			if cerr := closeOut(true); err == nil {
				err = cerr
			}
			return finish(err)
		},
	}
	addFilterFlags(cmd, &fo)
	addOutputFlags(cmd, &out, []string{"text", "jsonl", "csv"}, "write the events to this file instead of stdout")
	addLiveFlags(cmd, &live)
	addCaptureStacksFlag(cmd, &live)
	return cmd
}
