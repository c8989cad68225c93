package live

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Starting, consuming and stopping a real-time session.
//
// A real-time consumer is connected to its session by ProcessTrace, not
// by OpenTrace: until then the session keeps its buffers (up to its
// maximum; beyond, events are lost), and a session stopped before
// ProcessTrace connects is gone with them: ProcessTrace fails with
// ERROR_WMI_INSTANCE_NOT_FOUND. So after starting ProcessTrace the
// backend waits for the first event it delivers (the kernel logs the
// running processes and threads when a session with those flags starts,
// and ControlTrace(FLUSH) hands partly filled buffers over) before it
// resumes a traced command or may stop the session. At the end,
// ControlTrace(STOP) makes ProcessTrace deliver the last buffers and
// return; CloseTrace follows.

// session is a kernel session this process started.
type session struct {
	api    API
	name   string
	handle SessionHandle
	stop   sync.Once
	status SessionStatus // what the stop reported
	serr   error
	// unregister removes the session from the console control handler.
	unregister func()
}

// startKernel starts cfg (kind k) and asks it for stack walks when cfg
// says so; own enables iotrace's provider on it (ownwriter.go).
func startKernel(api API, cfg *SessionConfig, k sessionKind, own bool, warn func(string)) (*session, error) {
	h, err := startSession(api, cfg, k, warn)
	if err != nil {
		return nil, err
	}
	s := &session{api: api, name: cfg.Name, handle: h}
	s.unregister = registerActive(s.name, s.stopSession)
	if err := enableStacks(api, h, cfg.Name, cfg.StackEvents); err != nil {
		s.stopSession()
		return nil, err
	}
	if own {
		enableOwn(api, h, cfg.Name, warn)
	}
	return s, nil
}

// stopSession stops the session once and keeps its final status.
func (s *session) stopSession() {
	s.stop.Do(func() {
		s.status, s.serr = s.api.ControlTrace(s.handle, s.name, ControlStop)
		s.unregister()
	})
}

// consumed is a real-time session and its consumer.
type consumed struct {
	*session
	trace  TraceHandle
	opened bool
	logHdr TraceLogfileHeader // what OpenTrace reported (CPU speed, clock)
	// done receives ProcessTrace's result.
	done chan error
	// first is closed when the first event is delivered.
	first *firstEvent
}

// firstEvent passes events on to a consumer and closes seen at the first.
type firstEvent struct {
	Consumer
	once atomic.Bool
	seen chan struct{}
}

func (f *firstEvent) Event(er *EventRecord) {
	f.Consumer.Event(er)
	if !f.once.Load() && f.once.CompareAndSwap(false, true) {
		close(f.seen)
	}
}

// consumeOptions are what startConsumed does besides starting and
// opening the session.
type consumeOptions struct {
	// own enables iotrace's provider on the session.
	own bool
	// ended, when set, runs when ProcessTrace has returned (no callback
	// can run any more), before its result is passed on.
	ended func()
}

// startConsumed starts the session cfg (kind k), opens it for c and runs
// ProcessTrace on its own locked OS thread. Call waitConnected before
// anything depends on its first events.
func startConsumed(api API, cfg *SessionConfig, k sessionKind, c Consumer, o consumeOptions, warn func(string)) (*consumed, error) {
	s, err := startKernel(api, cfg, k, o.own, warn)
	if err != nil {
		return nil, err
	}
	fe := &firstEvent{Consumer: c, seen: make(chan struct{})}
	th, lh, err := api.OpenTrace(OpenSpec{SessionName: cfg.Name}, fe)
	if err != nil {
		s.stopSession()
		return nil, fmt.Errorf("open ETW session %q for real-time consumption: %w", cfg.Name, err)
	}
	cs := &consumed{session: s, trace: th, opened: true, logHdr: lh, done: make(chan error, 1), first: fe}
	go func() {
		runtime.LockOSThread()
		err := api.ProcessTrace(th)
		runtime.UnlockOSThread()
		if o.ended != nil {
			o.ended()
		}
		cs.done <- err
	}()
	return cs, nil
}

// connectPoll is how often waitConnected flushes the session's buffers
// while it waits.
const connectPoll = 100 * time.Millisecond

// waitConnected waits, at most timeout, until ProcessTrace has delivered
// the session's first event, flushing its buffers meanwhile. It fails
// when ProcessTrace returns first (the session was stopped, or never
// reachable) and reports whether the first event came in time.
func (s *consumed) waitConnected(timeout time.Duration) (bool, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(connectPoll)
	defer poll.Stop()
	for {
		// A flush hands partly filled buffers over: delivered at once
		// to a consumer connected, kept for it otherwise.
		_, _ = s.api.ControlTrace(s.handle, s.name, ControlFlush)
		select {
		case <-s.first.seen:
			return true, nil
		case err := <-s.done:
			s.done <- err // for finish
			if err == nil {
				err = fmt.Errorf("ProcessTrace returned")
			}
			return false, fmt.Errorf("the ETW session %q ended before its consumer connected: %w", s.name, err)
		case <-deadline.C:
			return false, nil
		case <-poll.C:
		}
	}
}

// finish stops the session and waits (at most timeout) for ProcessTrace
// to deliver the last buffers; it then closes the trace. It reports
// whether ProcessTrace returned in time.
func (s *consumed) finish(timeout time.Duration) (bool, error) {
	s.stopSession()
	var perr error
	ok := true
	select {
	case perr = <-s.done:
	case <-time.After(timeout):
		ok = false
	}
	if s.opened {
		if err := s.api.CloseTrace(s.trace); err != nil && ok && perr == nil {
			perr = fmt.Errorf("close trace: %w", err)
		}
		s.opened = false
	}
	if !ok {
		// CloseTrace makes a running ProcessTrace return.
		select {
		case perr = <-s.done:
		case <-time.After(timeout):
		}
	}
	return ok, perr
}
