package live

import (
	"context"
	"fmt"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// RecordETL records the kernel events of opts (flags from the backend's
// Config) into the .etl file path with a file-mode session, until ctx is
// done, opts.Duration elapses or the traced command exits. The file is
// then read like any other (two passes resolve the end-of-session file
// rundown). Besides the kernel's events the file gets iotrace's own
// (recordown.go). It returns the session's final status (events and
// buffers lost).
func (b *Backend) RecordETL(ctx context.Context, opts backend.Options, path string) (SessionStatus, error) {
	api, err := b.api()
	if err != nil {
		return SessionStatus{}, err
	}
	if err := checkOS(api); err != nil {
		return SessionStatus{}, err
	}
	cfg, err := b.defaults(api, &opts)
	if err != nil {
		return SessionStatus{}, err
	}
	warn := opts.Warnf
	pid := api.Pid()
	name := SessionName(pid)
	cleanupStale(api, warn)
	scfg := &SessionConfig{Name: name, LogFile: path, EnableFlags: cfg.Flags, BufferSizeKB: cfg.BufferSizeKB,
		MinBuffers: cfg.MinBuffers, MaxBuffers: cfg.MaxBuffers, ClockType: cfg.ClockType}
	if opts.Stacks != backend.StacksNone {
		scfg.StackEvents = StackEvents()
		if opts.Stacks != backend.StacksBoth {
			warn("--stacks: Windows walks kernel and user frames together; the .etl file keeps both (trace, not record, keeps only the part asked for)")
		}
	}
	vols, verr := api.Volumes()
	s, err := startKernel(api, scfg, kindMain, true, warn)
	if err != nil {
		return SessionStatus{}, err
	}
	defer s.stopSession()
	w := &ownWriter{api: api, session: s.handle, warn: warn}
	defer w.close()
	if verr != nil {
		warn(fmt.Sprintf("volume map: %v (paths in %s stay \\Device\\HarddiskVolumeN\\... when read)", verr, path))
	} else if _, err := writeVolumes(w, vols); err != nil {
		warn(fmt.Sprintf("%v (paths in %s stay \\Device\\HarddiskVolumeN\\... when read)", err, path))
	}
	var imgs *imageRecorder
	if opts.Stacks != backend.StacksNone {
		if imgs, err = startImageRecorder(api, w, pid, &cfg, vols, warn); err != nil {
			warn(fmt.Sprintf("image identities not recorded: %v: read on another machine, the file's frames may stay module+offset", err))
			imgs = nil
		} else {
			defer imgs.finish()
		}
	}
	exit, err := recordUntilEnd(ctx, api, &opts, cfg.StopTimeout)
	if err != nil {
		s.stopSession()
		return s.status, err
	}
	if imgs != nil {
		warn(fmt.Sprintf("%s: %s", path, imgs.finish())) // before the recording stops
	}
	s.stopSession()
	var discard event.Stats
	reportExit(exit, &opts, &discard)
	return s.status, checkRecording(api, s, path, warn)
}

// recordUntilEnd starts the command of opts, if any, and waits for the
// end of the recording: cancellation, the duration or the command's exit
// (returned when it exited).
func recordUntilEnd(ctx context.Context, api API, opts *backend.Options, stopTimeout time.Duration) (*childExit, error) {
	var child Child
	var childDone <-chan childExit
	var cio *commandIO
	if len(opts.Command) > 0 {
		c, cout, err := startCommand(api, opts)
		if err != nil {
			return nil, err
		}
		cio = cout
		if opts.CommandStarted != nil {
			opts.CommandStarted(int(c.Pid()))
		}
		childDone = waitChild(c)
		if err := c.Resume(); err != nil {
			c.Kill()
			return nil, fmt.Errorf("resume %q: %w", opts.Command[0], err)
		}
		child = c
	}
	var timeout <-chan time.Time
	if opts.Duration > 0 {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		timeout = t.C
	}
	var exit *childExit
	select {
	case <-ctx.Done():
	case <-timeout:
	case x := <-childDone:
		exit = &x
	}
	if child != nil && exit == nil {
		exit = settleChild(ctx, child, childDone, opts.Command[0], opts.Warnf)
	}
	waitOutput(cio, exit, stopTimeout, opts.Warnf)
	return exit, nil
}

// checkRecording checks that the stopped recording s left its file.
func checkRecording(api API, s *session, path string, warn func(string)) error {
	if s.serr != nil {
		return fmt.Errorf("stop session %q: %w (%s may be incomplete)", s.name, s.serr, path)
	}
	switch size, err := api.FileSize(path); {
	case err != nil:
		return fmt.Errorf("the session %q stopped, but its file %s cannot be read: %w (ETW wrote no trace)", s.name, path, err)
	case size == 0:
		return fmt.Errorf("the session %q stopped, but its file %s is empty: ETW wrote no buffer (%d written, %d lost)", s.name, path, s.status.BuffersWritten, s.status.LogBuffersLost)
	}
	if n := s.status.EventsLost; n > 0 {
		warn(fmt.Sprintf("%d events were lost in the session (buffers full: raise --buffer-size)", n))
	}
	return nil
}
