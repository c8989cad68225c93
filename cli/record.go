package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/internal/interrupt"
	"github.com/iotrace/iotrace/internal/outfile"
	"github.com/iotrace/iotrace/parquetfile"
	"github.com/iotrace/iotrace/resolve"
	"github.com/iotrace/iotrace/rotate"
	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/tracefile"
)

// periodicFlush flushes a trace file writer at most once per interval,
// from the stream's own calls, so that a crash loses little; then it
// checks that the file is still there (out, when set): a recording whose
// file or directory was removed stops, rather than go on into a file
// nobody can open.
type periodicFlush struct {
	*tracefile.Writer
	out   *outfile.File
	every time.Duration
	next  time.Time
	size  sizeOf // the file's size at the last flush, for the status line
}

// errOutputRemoved stops a recording whose temporary file was removed.
var errOutputRemoved = errors.New("the output's directory (or its temporary file) was removed while recording")

func (p *periodicFlush) tick() error {
	if now := time.Now(); now.After(p.next) {
		p.next = now.Add(p.every)
		if err := p.Writer.Flush(); err != nil {
			return err
		}
		p.size.n.Store(uint64(p.Writer.Offset()))
		if p.out != nil && p.out.Removed() {
			return errOutputRemoved
		}
	}
	return nil
}

// Event and Fact tick first: a record refused is never in the file.
func (p *periodicFlush) Event(e *event.Event) error {
	if err := p.tick(); err != nil {
		return err
	}
	return p.Writer.Event(e)
}

func (p *periodicFlush) Fact(f *event.Fact) error {
	if err := p.tick(); err != nil {
		return err
	}
	return p.Writer.Fact(f)
}

// recordLong is the record command's help.
const recordLong = `Record file system calls and block I/O to a self-contained .iot trace file
that resolves on any machine (iotrace print, report, compare, convert).
With a command after --, iotrace starts it once the probes are attached and
records only it and its descendants; the recording stops when it exits,
and iotrace exits with its status (128+N when signal N killed it).
Otherwise it runs until Ctrl-C, SIGTERM or --duration (unattended use).
The file is flushed every second, so a crash loses little.
With --rotate (1h, 1GiB or both), the recording is a series of files, each
self-contained (it starts with the open files, processes and devices its
events need), named with the host and its UTC start time, closed and fsynced
before the next; --keep and --max-total remove the oldest. This is what a
systemd unit runs (docs/fleet.md).
-o FILE.parquet writes the events as Parquet rows with names resolved
(docs/parquet.md): for a bounded recording (a command, --duration), since a
Parquet file is readable only once its footer is written at the end; for
unattended use record .iot files and convert them.
On Windows, -o FILE.etl records a file-mode ETW kernel session instead, which
every iotrace command reads on any OS (names resolve in two passes).

With --ring SIZE, record is a flight recorder: it keeps only the most recent
SIZE of events in memory (with the processes, open files and devices they
need) and writes them out when asked, so it can run for days and capture the
minute before a stall. Each "iotrace mark --save" (or, on Linux, SIGUSR1)
writes a new FILE.1.iot, FILE.2.iot, ... (never replacing a file); the end
of the recording writes FILE. Every saved file counts the older events that
were overwritten as lost ("flight recorder: older events overwritten").`

// recordExample are its examples.
const recordExample = `  sudo iotrace record -o build.iot -- make -j8
  sudo iotrace record -o db.iot --comm postgres --duration 10m
  sudo iotrace record -o /var/log/iotrace/ --rotate 1h,1GiB --max-total 20GiB
  sudo iotrace record --ring 256M -o stall.iot    # then: iotrace mark --save`

// recordFlags are the record command's flags.
type recordFlags struct {
	fo       filter.Options
	path     string
	live     liveFlags
	rot      rotateFlags
	ringSize string
}

// recordPlan is what a record command line asks for, checked: where the
// recording goes (a .iot file, a series of them, a flight recorder, a
// Parquet file, an .etl on Windows) and what it traces.
type recordPlan struct {
	opts             backend.Options
	f                *filter.Filter
	path             string
	toETL, toParquet bool
	rot              *rotate.Options // a series of files (--rotate)
	ringBytes        int             // a flight recorder (--ring)
	st               *liveStatus     // the status line; nil for none
}

func newRecordCmd() *cobra.Command {
	var rf recordFlags
	cmd := &cobra.Command{
		Use:     "record -o FILE.iot|FILE.etl|FILE.parquet [filters] [--duration D] [-- COMMAND [ARGS...]]",
		Short:   "Record this machine's file and block I/O to a trace file",
		Long:    recordLong,
		Example: recordExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Before the plan: what it prints later (a rotation's new
			// file) goes through the status line.
			st := newLiveStatus(cmd, rf.live.quiet, args, false)
			defer st.done()
			p, err := rf.plan(cmd, args)
			if err != nil {
				return err
			}
			p.st = st
			return p.record(cmd)
		},
	}
	addFilterFlags(cmd, &rf.fo)
	cmd.Flags().StringVarP(&rf.path, "output", "o", "", "the trace file to write (FILE.iot; FILE.etl on Windows)")
	addLiveFlags(cmd, &rf.live)
	addCaptureStacksFlag(cmd, &rf.live)
	addRotateFlags(cmd, &rf.rot)
	cmd.Flags().StringVar(&rf.ringSize, "ring", "", "flight recorder: keep only the most recent SIZE of events in memory (64M, 1G) and write them at exit, on iotrace mark --save or SIGUSR1 (each request to a new FILE.N.iot)")
	return cmd
}

// plan checks the command line and says what to record.
func (rf *recordFlags) plan(cmd *cobra.Command, args []string) (recordPlan, error) {
	p := recordPlan{path: rf.path}
	if cmd.Flags().Changed("ring") {
		// Before the arguments: "--ring -o t.iot" took "-o" as the size.
		n, err := parseRingSize(rf.ringSize, physicalMemory())
		if err != nil {
			return p, err
		}
		p.ringBytes = n
	}
	command, err := commandArgs(cmd, args)
	if err != nil {
		return p, err
	}
	if isStdout(p.path) {
		return p, fmt.Errorf("record needs an output file: -o FILE.iot")
	}
	lower := strings.ToLower(p.path)
	p.toETL, p.toParquet = strings.HasSuffix(lower, ".etl"), strings.HasSuffix(lower, ".parquet")
	if rf.rot.set() {
		o, err := rf.rot.options(p.path, cmd.ErrOrStderr())
		if err != nil {
			return p, err
		}
		p.rot = &o
	} else if !p.toETL && !p.toParquet && !strings.HasSuffix(lower, ".iot") {
		return p, fmt.Errorf("record writes .iot trace files (or .etl on Windows): %q should end in .iot (use trace -o for text, jsonl or csv)", p.path)
	}
	if p.f, err = filter.New(rf.fo); err != nil {
		return p, err
	}
	size, err := parseSize(rf.live.bufferSize)
	if err != nil {
		return p, err
	}
	live := &rf.live
	if err := checkLiveOptions(backend.Options{Duration: live.duration, Pids: rf.fo.Pids, Command: command, WaitWriteback: live.waitWriteback}); err != nil {
		return p, err
	}
	if p.ringBytes > 0 && (p.toETL || p.toParquet || p.rot != nil) {
		return p, fmt.Errorf("--ring writes a .iot file: use -o FILE.iot (without --rotate)")
	}
	p.opts = backend.Options{Command: command, Duration: live.duration, BufferSize: size, FollowChildren: len(command) > 0, WaitWriteback: live.waitWriteback}
	if err = live.stacksInto(&p.opts); err != nil {
		return p, err
	}
	rf.fo.PushDown(&p.opts)
	return p, nil
}

// record records as planned.
func (p *recordPlan) record(cmd *cobra.Command) error {
	if p.toETL {
		finish := commandStatus(&p.opts)
		return finish(recordETL(cmd.Context(), p.opts, p.path, cmd.ErrOrStderr()))
	}
	if _, err := pickLiveBackend(p.opts); err != nil {
		return err
	}
	switch {
	case p.rot != nil:
		return recordSeries(cmd, p.opts, p.f, *p.rot, p.st)
	case p.ringBytes > 0:
		finish := commandStatus(&p.opts)
		return finish(recordRing(cmd.Context(), p.opts, p.f, p.path, p.ringBytes, cmd.ErrOrStderr(), p.st))
	case p.toParquet:
		return recordParquet(cmd, p.opts, p.f, p.path, p.st)
	}
	out, err := outfile.Create(p.path)
	if err != nil {
		return err
	}
	defer interrupt.OnQuit(cmd.Context(), func() { rescueRecording(out, cmd.ErrOrStderr()) })()
	w := tracefile.NewWriter(out, tracefile.WriterOptions{})
	pf := &periodicFlush{Writer: w, out: out, every: time.Second}
	return recordLive(cmd, p.opts, p.f, pf, liveOut{p.st, pf.size.get}, func(err error, recorded uint64) error {
		return finishRecording(out, w, err, recorded, cmd.ErrOrStderr())
	})
}

// liveOut is the status line of a recording and the size of what it
// wrote so far (nil when not known).
type liveOut struct {
	st   *liveStatus
	size func() (n, of uint64)
}

// recordLive runs the live backend into sink (through the filter, the
// problem warnings and the end summary), with out's status line; done
// closes what sink writes and returns the run's error with its own. The
// traced command's status becomes iotrace's.
func recordLive(cmd *cobra.Command, opts backend.Options, f *filter.Filter, sink event.Sink, out liveOut, done func(runErr error, recorded uint64) error) error {
	finish := commandStatus(&opts)
	stderr := cmd.ErrOrStderr()
	s := &summary{Sink: problemWarner{Sink: sink, w: stderr}, w: stderr, verb: "recorded"}
	out.st.watch(&opts)
	out.st.run(s.events.Load, out.size)
	err := runLiveTo(cmd.Context(), opts, f.Sink(s), stderr)
	out.st.done()
	return finish(done(err, s.events.Load()))
}

// recordParquet records to a Parquet file, names resolved as the events
// arrive.
func recordParquet(cmd *cobra.Command, opts backend.Options, f *filter.Filter, path string, st *liveStatus) error {
	out, err := outfile.Create(path)
	if err != nil {
		return err
	}
	// Frames are named from the modules' files on this machine (matched
	// by build ID), as they load.
	tab := stacks.New(stacks.Options{})
	defer tab.Close()
	pw := parquetfile.New(out, parquetfile.Options{Stack: tab.FrameStrings})
	// Rows are buffered into row groups: the file's size is not known
	// until its end.
	return recordLive(cmd, opts, f, resolve.NewResolver(tab.Feed(tab.Summary(pw))), liveOut{st: st}, func(err error, _ uint64) error {
		if !pw.Ended() {
			// No footer: a Parquet reader cannot read it. Keep the rows
			// for whoever wants them, and say where.
			tmp, _ := out.Keep()
			if err == nil {
				err = fmt.Errorf("the recording ended without its Parquet footer; its rows are in %s", tmp)
			}
			return err
		}
		if cerr := out.Commit(); err == nil {
			err = cerr
		}
		if err == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "iotrace: wrote %s (%d rows)\n", path, pw.Rows())
		}
		return err
	})
}

// recordSeries records to a rotated series of files.
func recordSeries(cmd *cobra.Command, opts backend.Options, f *filter.Filter, ro rotate.Options, st *liveStatus) error {
	series, err := rotate.New(ro)
	if err != nil {
		return err
	}
	written := func() (uint64, uint64) { return series.Written(), 0 }
	return recordLive(cmd, opts, f, series, liveOut{st, written}, func(err error, _ uint64) error {
		if cerr := series.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", series.Path(), cerr)
		}
		return err
	})
}

// rescueRecording keeps a recording that quits before its clean stop (a
// second Ctrl-C) under its name: the file holds what was flushed (every
// second), without a trailer, and readers say where it stops.
func rescueRecording(out *outfile.File, stderr io.Writer) {
	ok, err := out.Rescue()
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "iotrace: %v: the recording so far is in %s\n", err, out.TempPath())
	case ok:
		fmt.Fprintf(stderr, "iotrace: %s holds the recording up to its last flush (it ends without a trailer: readers say where it stops)\n", out.Path())
	}
}

// finishRecording ends the trace file of a recording that stopped with
// err, after recorded events. A recording is renamed into place whenever
// it holds a trace, even when the trace stopped on an error (what was
// recorded is not lost); one whose writing failed (a full disk) is cut to
// its last whole chunk and renamed into place all the same, and the error
// says how many events it kept and how many it lost; one whose file was
// removed while recording is copied to the temporary directory and the
// error says where; one that never began is removed, leaving what was at
// the path.
func finishRecording(out *outfile.File, w *tracefile.Writer, err error, recorded uint64, stderr io.Writer) error {
	werr := w.Close() // the writer's first error, if any
	kept, whole := w.Written()
	var cerr error
	switch {
	case w.Offset() == 0 && werr == nil:
		out.Abort()
	case out.Removed():
		// Into the temporary directory: the output's own was removed,
		// and is not made again behind the user's back.
		at, serr := out.Salvage(os.TempDir())
		if serr != nil {
			cerr = fmt.Errorf("%s: %w: %v", out.Path(), errOutputRemoved, serr)
			break
		}
		cerr = fmt.Errorf("%s: %w: its %d events are in %s instead", out.Path(), errOutputRemoved, kept, at)
	case werr != nil:
		lost := recorded - min(kept, recorded)
		if kerr := out.CommitAt(whole); kerr != nil {
			tmp, _ := out.Keep()
			cerr = fmt.Errorf("write %s: %w (what was written is in %s; %v)", out.Path(), werr, tmp, kerr)
			break
		}
		cerr = fmt.Errorf("write %s: %w: the file keeps the first %d events (to its last whole chunk; it ends without a trailer), %d recorded events were not written", out.Path(), werr, kept, lost)
	default:
		cerr = out.Commit()
		if cerr == nil && err == nil {
			fmt.Fprintf(stderr, "iotrace: wrote %s\n", out.Path())
		}
	}
	// A run that stopped on the output's own failure is said once, by the
	// output's error.
	if err == nil || (cerr != nil && (errors.Is(err, errOutputRemoved) || (werr != nil && errors.Is(err, werr)))) {
		return cerr
	}
	if cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}
