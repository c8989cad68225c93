package fake

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/internal/synth"
)

// Config selects the trace the fake replays and how.
type Config struct {
	// Trace is the synthetic trace replayed.
	Trace synth.Options
	// Speed paces the replay: 1 delivers events at the pace of their
	// timestamps, 2 twice as fast; 0 delivers as fast as the sink takes
	// them.
	Speed float64
	// Loop replays the trace again and again (with times and ids shifted
	// past the previous round) until the context, Duration or Command
	// ends the trace.
	Loop bool
}

// Backend is the fake backend.
type Backend struct {
	cfg   Config
	trace *synth.Recorded
}

// New generates the trace cfg selects and returns a backend replaying it.
func New(cfg Config) (*Backend, error) {
	if cfg.Speed < 0 {
		return nil, fmt.Errorf("fake backend: negative speed %v", cfg.Speed)
	}
	r := synth.NewRecorder()
	if err := synth.Generate(cfg.Trace, r); err != nil {
		return nil, fmt.Errorf("fake backend: %w", err)
	}
	return &Backend{cfg: cfg, trace: r.Trace()}, nil
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return "fake" }

// Description implements backend.Backend.
func (b *Backend) Description() string {
	os := b.trace.Header.OS
	return fmt.Sprintf("replays a synthetic %s trace of %d events (tests and demos)", os, len(b.trace.Events))
}

// Available implements backend.Backend: the fake runs everywhere.
func (b *Backend) Available() error { return nil }

// Stats counter names.
const (
	CounterDelivered = "events delivered"
	CounterSkipped   = "events left out by the backend's filter"
	CounterRounds    = "replay rounds completed"
)

// Run implements backend.Backend.
func (b *Backend) Run(ctx context.Context, opts backend.Options, sink event.Sink) (err error) {
	f, err := filter.New(filter.Options{
		Pids: opts.Pids, FollowChildren: opts.FollowChildren, Comms: opts.Comms,
		Layers: opts.Layers, Ops: opts.Ops,
	})
	if err != nil {
		return fmt.Errorf("fake backend: %w", err)
	}
	// stop ends the replay: the caller's context, Duration, or the exit
	// of Command.
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Duration > 0 {
		var cancelT context.CancelFunc
		stop, cancelT = context.WithTimeout(stop, opts.Duration)
		defer cancelT()
	}
	if len(opts.Command) > 0 {
		cmd := exec.Command(opts.Command[0], opts.Command[1:]...)
		cmd.Stdout = opts.CommandStdout
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("fake backend: start %q: %w", opts.Command[0], err)
		}
		if opts.CommandStarted != nil {
			opts.CommandStarted(cmd.Process.Pid)
		}
		done := make(chan error, 1)
		go func() {
			done <- cmd.Wait()
			cancel()
		}()
		defer func() {
			select {
			case werr := <-done:
				var ee *exec.ExitError
				if werr != nil && !errors.As(werr, &ee) && err == nil {
					err = fmt.Errorf("fake backend: %q: %w", opts.Command[0], werr)
				}
			default:
				// Stopped (cancelled, Duration) before the command ended:
				// the trace is over, so is the command. When the replay
				// merely ran out first, the command runs to its end.
				if stop.Err() != nil {
					_ = cmd.Process.Kill()
				}
				<-done
			}
		}()
	}

	h := b.trace.Header
	h.StartWall = time.Now().UnixNano()
	h.Source = event.SourceSynthetic
	if err := sink.Begin(&h); err != nil {
		return err
	}
	f.SetOS(h.OS)
	rs := replayState{b: b, f: f, sink: sink, start: time.Now(), progress: opts.Progress}
	rs.report()
	var sinkErr error
	for {
		stopped, err := rs.round(stop)
		if err != nil {
			sinkErr = err
			break
		}
		if stopped {
			break
		}
		rs.rounds++
		// Losses that no delivered event shows are the trace's own.
		for _, c := range b.trace.Trailer.Stats.Counters {
			if c.Kind == event.CountLost || c.Kind == event.CountDropped || c.Kind == event.CountUnresolved {
				rs.stats.Add(c.Kind, c.Name, c.Value)
			}
		}
		if !b.cfg.Loop {
			break
		}
		rs.shiftT += b.trace.Trailer.End + 1
		rs.shiftID += maxID(b.trace) + 1
	}
	rs.stats.Set(event.CountInfo, CounterDelivered, rs.sent)
	if rs.skipped > 0 {
		rs.stats.Set(event.CountInfo, CounterSkipped, rs.skipped)
	}
	rs.stats.Set(event.CountInfo, CounterRounds, rs.rounds)
	tr := event.Trailer{End: rs.last, Stats: rs.stats}
	if rs.rounds > 0 && !b.cfg.Loop {
		tr.End = max(tr.End, b.trace.Trailer.End)
	}
	endErr := sink.End(&tr)
	if sinkErr != nil {
		return sinkErr
	}
	return endErr
}

func maxID(r *synth.Recorded) uint64 {
	var m uint64
	for i := range r.Events {
		m = max(m, r.Events[i].ID)
	}
	return m
}

// replayState is one Run's progress.
type replayState struct {
	b               *Backend
	f               *filter.Filter
	sink            event.Sink
	start           time.Time
	shiftT          int64
	shiftID         uint64
	last            int64
	sent, skipped   uint64
	rounds          uint64
	stats           event.Stats
	progress        func(event.Stats) // Options.Progress
	nextProgress    time.Time
	unpairedStart   string
	unpairedEnd     string
	unpairedNamesOK bool
}

// report calls Options.Progress, when set, with the counters so far (as
// Run ends the trace with them), and schedules the next call.
func (rs *replayState) report() {
	if rs.progress == nil {
		return
	}
	rs.nextProgress = time.Now().Add(backend.ProgressEvery)
	var s event.Stats
	s.Merge(rs.stats)
	s.Set(event.CountInfo, CounterDelivered, rs.sent)
	if rs.skipped > 0 {
		s.Set(event.CountInfo, CounterSkipped, rs.skipped)
	}
	s.Set(event.CountInfo, CounterRounds, rs.rounds)
	rs.progress(s)
}

// unpairedNames returns the trace's own names for events without a
// completion and without a start.
func (rs *replayState) unpairedNames() (noEnd, noStart string) {
	if !rs.unpairedNamesOK {
		rs.unpairedEnd, rs.unpairedStart = "operation without completion", "completion without start"
		for _, c := range rs.b.trace.Trailer.Stats.Counters {
			if c.Kind != event.CountUnpaired {
				continue
			}
			// synth names them "... without exit/OpEnd" and "... without
			// queue/issue"; keep its names so a full replay matches.
			if strings.Contains(c.Name, "completion") {
				rs.unpairedStart = c.Name
			} else {
				rs.unpairedEnd = c.Name
			}
		}
		rs.unpairedNamesOK = true
	}
	return rs.unpairedEnd, rs.unpairedStart
}

// round delivers the trace once. It reports stopped when stop ended it.
func (rs *replayState) round(stop context.Context) (stopped bool, err error) {
	r := rs.b.trace
	speed := rs.b.cfg.Speed
	for n, it := range r.Order {
		if n&255 == 0 {
			if stop.Err() != nil {
				return true, nil
			}
			if rs.progress != nil && !time.Now().Before(rs.nextProgress) {
				rs.report()
			}
		}
		switch it.Kind {
		case synth.ItemFact:
			ft := r.Facts[it.Index]
			ft.Time += rs.shiftT
			rs.f.Observe(&ft)
			if err := rs.sink.Fact(&ft); err != nil {
				return false, err
			}
		case synth.ItemEvent:
			e := r.Events[it.Index]
			e.Time += rs.shiftT
			e.ID += rs.shiftID
			if e.Cause != 0 {
				e.Cause += rs.shiftID
			}
			if speed > 0 {
				due := rs.start.Add(time.Duration(float64(e.Time) / speed))
				if d := time.Until(due); d > time.Millisecond {
					t := time.NewTimer(d)
					select {
					case <-stop.Done():
						t.Stop()
						return true, nil
					case <-t.C:
					}
				}
			}
			if !rs.f.Match(&e) {
				rs.skipped++
				continue
			}
			e.Source = event.SourceSynthetic
			if err := rs.sink.Event(&e); err != nil {
				return false, err
			}
			rs.sent++
			rs.last = max(rs.last, e.End())
			if e.Flags&(event.FlagNoCompletion|event.FlagNoStart) != 0 {
				noEnd, noStart := rs.unpairedNames()
				if e.Flags&event.FlagNoCompletion != 0 {
					rs.stats.Add(event.CountUnpaired, noEnd, 1)
				} else {
					rs.stats.Add(event.CountUnpaired, noStart, 1)
				}
			}
		}
	}
	return false, nil
}
