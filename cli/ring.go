package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/internal/interrupt"
	"github.com/iotrace/iotrace/ring"
)

// parseRingSize parses --ring and checks it against the machine's memory:
// the ring may take at most half of it.
func parseRingSize(s string, physical uint64) (int, error) {
	if s == "" || strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("--ring needs a size: --ring 64M (bytes, or a number with K, M or G)")
	}
	n, err := parseSize(s)
	if err != nil {
		return 0, fmt.Errorf("--ring: %w", err)
	}
	if physical > 0 && uint64(n) > physical/2 {
		return 0, fmt.Errorf("--ring %s is more than half of this machine's memory (%d MiB): choose a smaller ring", s, physical>>20)
	}
	if n < ring.MinSize {
		return 0, fmt.Errorf("--ring %s is smaller than the smallest ring (%s)", s, formatBytes(ring.MinSize))
	}
	return n, nil
}

// recordRing runs a flight recorder: events go to a ring of size bytes;
// each `iotrace mark --save` or save signal writes the ring to a new
// numbered file beside path, and the end of the recording writes it to
// path itself.
func recordRing(ctx context.Context, opts backend.Options, f *filter.Filter, path string, size int, stderr io.Writer, ls *liveStatus) error {
	r, err := ring.New(size)
	if err != nil {
		return err
	}
	defer r.Close()
	// The end file is written under a temporary name created now (a
	// directory that cannot be written fails before hours of recording,
	// not after), then renamed over path: an earlier file of that name
	// survives a recording that fails.
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.%d.tmp", filepath.Base(path), os.Getpid()))
	out, err := ring.CreateOutput(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	rec := &ring.Recorder{Ring: r, Path: path}
	save := func(why string) {
		name, st, err := rec.SaveNext()
		if err != nil {
			fmt.Fprintf(stderr, "iotrace: %s: %v\n", why, err)
			return
		}
		fmt.Fprintf(stderr, "iotrace: %s: saved the last %d events to %s (%d older overwritten)\n", why, st.Kept, name, st.Overwritten)
	}
	if len(ringSaveSignals) > 0 {
		sig := make(chan os.Signal, 4)
		signal.Notify(sig, ringSaveSignals...)
		done := make(chan struct{})
		defer func() { signal.Stop(sig); close(done) }()
		go func() {
			for {
				select {
				case <-done:
					return
				case s := <-sig:
					save(s.String())
				}
			}
		}()
	}
	s := &summary{Sink: problemWarner{Sink: r, w: stderr}, w: stderr, verb: "recorded"}
	trig := &ring.Trigger{Sink: f.Sink(s), OnSave: func() { save("iotrace mark --save") }, OnRefused: func() {
		fmt.Fprintf(stderr, "iotrace: iotrace mark --save: refused, too soon after the last save (at most one per %s; counted)\n", ring.DefaultSaveInterval)
	}}
	fmt.Fprintf(stderr, "iotrace: flight recorder: keeping the last %s of events; save with `iotrace mark --save`%s, or stop\n",
		formatBytes(size), signalHint())
	end := &ringEnd{rec: rec, out: out, tmp: tmp, path: path, stderr: stderr, done: make(chan struct{})}
	defer interrupt.OnQuit(ctx, end.quit)()
	ls.watch(&opts)
	ls.run(s.events.Load, func() (uint64, uint64) {
		rs := r.Stats() // once a second: the ring's lock is free most of the time
		return uint64(rs.Bytes), uint64(rs.Limit)
	})
	runErr := runLiveTo(ctx, opts, trig, stderr)
	ls.done()
	st, err := end.save()
	if errors.Is(err, ring.ErrNotBegun) && runErr != nil {
		return runErr // the trace never started: say why
	}
	if err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintf(stderr, "iotrace: wrote the last %d events to %s (%d older overwritten)\n", st.Kept, path, st.Overwritten)
	return runErr
}

// endSaveWait is how long a second Ctrl-C lets an end save being written
// finish (a third quits at once).
const endSaveWait = 5 * time.Second

// ringEnd is the save of a flight recorder's window at the end of the
// recording, into tmp then renamed to path, which a second Ctrl-C
// (interrupt.OnQuit) may come before or during.
type ringEnd struct {
	rec       *ring.Recorder
	out       *os.File
	tmp, path string
	stderr    io.Writer

	mu   sync.Mutex    // held by whichever makes the save, to the end
	done chan struct{} // closed once the end save is over
}

// save makes the end save, unless a quit made it first (then it waits
// for the process to exit).
func (e *ringEnd) save() (ring.Stats, error) {
	e.mu.Lock()
	defer close(e.done)
	st, err := e.rec.SaveTo(e.out, e.tmp) // removes tmp when it fails
	if err == nil {
		if err = os.Rename(e.tmp, e.path); err != nil {
			os.Remove(e.tmp)
			err = fmt.Errorf("write %s: %w", e.path, err)
		}
	}
	return st, err
}

// quit runs on a second Ctrl-C, before the process quits: the window is
// saved then, without the backend's final counts; an end save already
// being written is let finish (up to endSaveWait), else what it wrote is
// renamed into place (readers say where it stops).
func (e *ringEnd) quit() {
	if e.mu.TryLock() {
		st, err := e.rec.SaveTo(e.out, e.tmp)
		if err == nil {
			err = os.Rename(e.tmp, e.path)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "iotrace: the flight recorder's window was not saved: %v\n", err)
			return
		}
		fmt.Fprintf(e.stderr, "iotrace: wrote the last %d events to %s before quitting (%d older overwritten; the backend's final counts are missing)\n", st.Kept, e.path, st.Overwritten)
		return
	}
	select {
	case <-e.done:
		return
	case <-time.After(endSaveWait):
	}
	if fi, err := os.Stat(e.tmp); err == nil && fi.Size() > 0 && os.Rename(e.tmp, e.path) == nil {
		fmt.Fprintf(e.stderr, "iotrace: %s holds the part of the window written before the quit (readers say where it stops)\n", e.path)
	}
}

func signalHint() string {
	if len(ringSaveSignals) == 0 {
		return ""
	}
	return fmt.Sprintf(" or kill -%s %d", signalName(ringSaveSignals[0]), os.Getpid())
}

func signalName(s os.Signal) string {
	if s.String() == "user defined signal 1" {
		return "USR1"
	}
	return s.String()
}

func formatBytes(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

var _ event.Sink = &ring.Trigger{}
