package live

import (
	"context"
	"fmt"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// Config configures the live ETW backend. The zero value uses the
// defaults.
type Config struct {
	// API is the Win32 API to use; nil means the operating system's
	// (available on Windows only). Tests pass a fake.
	API API
	// Flags are the kernel Flag* bits of the main session (default
	// DefaultFlags).
	Flags uint32
	// BufferSizeKB, MinBuffers and MaxBuffers size the sessions
	// (buffers.go: by default 1024 KB, two per processor, 64 + 4 per
	// processor, within 256 MB); backend.Options BufferSize overrides
	// BufferSizeKB.
	BufferSizeKB, MinBuffers, MaxBuffers uint32
	// ClockType is the session clock (default ClockQPC).
	ClockType uint32
	// RundownTimeout bounds the rundown session (default 3 s).
	RundownTimeout time.Duration
	// ConnectTimeout bounds the wait for the main session's first event
	// (default 5 s).
	ConnectTimeout time.Duration
	// StopTimeout bounds the wait for the consumer after stopping (default
	// 5 s).
	StopTimeout time.Duration
	// QueueSize is the number of events in flight between the ETW thread
	// and the decoder (default 65,536; twice that with --stacks).
	QueueSize int
	// NoRundown skips the rundown session (names of files opened before
	// the trace then stay unresolved).
	NoRundown bool
	// FlushTimer is how often, in seconds, the main session delivers
	// buffers that are not full (default 1): it bounds how late an
	// event of a quiet processor arrives.
	FlushTimer uint32
	// ReorderWindow is how long an event is held to put the processors'
	// buffers back in time order (default: the flush timer plus one
	// second); negative passes events on in arrival order.
	ReorderWindow time.Duration
	// ReorderLimit bounds the events held for reordering (default
	// 524,288; twice that with --stacks); beyond it the oldest go out
	// early (counted).
	ReorderLimit int
}

// Backend is the live Windows ETW backend: a kernel session consumed in
// real time, decoded and resolved by the portable etw pipeline.
type Backend struct{ cfg Config }

// New returns the ETW backend.
func New(cfg Config) *Backend { return &Backend{cfg: cfg} }

// Name implements backend.Backend.
func (b *Backend) Name() string { return "etw" }

// Description implements backend.Backend.
func (b *Backend) Description() string {
	return "Windows ETW kernel session (FileIo, DiskIo, Process, Thread, Image), real time, pure Go"
}

func (b *Backend) api() (API, error) {
	if b.cfg.API != nil {
		return b.cfg.API, nil
	}
	return DefaultAPI()
}

// checkOS refuses Windows before 10: Go (1.21 and later) does not run
// there, so only a Windows that says it is older (wine's default) gets
// here.
func checkOS(api API) error {
	if major, minor, _ := api.OSVersion(); major < 10 {
		return fmt.Errorf("Windows %d.%d: %w (iotrace, as every Go program since Go 1.21, needs Windows 10 or later)", major, minor, backend.ErrNotSupported)
	}
	return nil
}

// Available implements backend.Backend: the ETW API must exist (Windows
// 10 or later) and this process must be allowed to list sessions.
func (b *Backend) Available() error {
	api, err := b.api()
	if err != nil {
		return err
	}
	if err := checkOS(api); err != nil {
		return err
	}
	if _, err := api.QueryAllTraces(); err != nil {
		if isErrno(err, ErrAccessDenied) {
			return fmt.Errorf("listing ETW sessions: %w: %s", err, accessAdvice)
		}
		return fmt.Errorf("listing ETW sessions: %w", err)
	}
	return nil
}

// defaults returns the configuration with its defaults filled in and the
// buffers planned for this machine (buffers.go).
func (b *Backend) defaults(api API, opts *backend.Options) (Config, error) {
	c := b.cfg
	if c.Flags == 0 {
		c.Flags = DefaultFlags
	}
	if opts.BufferSize > 0 {
		c.BufferSizeKB = uint32(min((int64(opts.BufferSize)+1023)/1024, 1<<31))
	}
	p, err := planBuffers(c.BufferSizeKB, c.MinBuffers, c.MaxBuffers, api.Processors())
	if err != nil {
		return c, err
	}
	c.BufferSizeKB, c.MinBuffers, c.MaxBuffers = p.SizeKB, p.Min, p.Max
	if c.ClockType == 0 {
		c.ClockType = ClockQPC
	}
	setDuration(&c.RundownTimeout, 3*time.Second)
	setDuration(&c.ConnectTimeout, 5*time.Second)
	setDuration(&c.StopTimeout, 5*time.Second)
	if c.FlushTimer == 0 {
		c.FlushTimer = 1
	}
	setDuration(&c.ReorderWindow, time.Duration(c.FlushTimer)*time.Second+time.Second)
	if opts.Stacks != backend.StacksNone {
		// A stack walk follows most events: room for twice as many in
		// flight and in the reorder window.
		if c.QueueSize == 0 {
			c.QueueSize = 2 * defaultQueueSize
		}
		if c.ReorderLimit == 0 {
			c.ReorderLimit = 2 * defaultReorderLimit
		}
	}
	return c, nil
}

// setDuration sets *d to def when it is 0.
func setDuration(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// Stats counter names of a live trace.
const (
	StatSessionEventsLost = "etw: events lost by the session (EventsLost)"
	StatRealTimeBufLost   = "etw: real-time buffers lost by the session (RealTimeBuffersLost)"
	StatLogBufLost        = "etw: log buffers lost by the session (LogBuffersLost)"
	StatRTLostEvents      = "etw: RT_LostEvent notices received (events or buffers dropped before delivery)"
	StatQueueOverflow     = "etw: events dropped: decoder queue full (the decoder fell behind)"
	StatAfterClose        = "etw: events dropped: delivered after the consumer was given up (stop timeout)"
	StatReceived          = "etw: events received from the session"
	StatMarkers           = "etw: markers"
	StatFilteredByProcess = "etw: events outside the traced processes (filtered)"
	StatSelf              = "etw: events of iotrace's own process (not traced: its writes of the trace would trace themselves)"
	StatReorderLate       = "etw: events delivered after the reorder window (passed on out of time order: pairing and links may miss them)"
	StatReorderForced     = "etw: events passed on before their reorder window ended (too many held)"
	StatReorderGaveUp     = "etw: image events passed on before their identity was read (held two reorder windows)"
	StatProcessNoImage    = "etw: running processes whose executable path Windows did not give (protected or gone): named by their image file name"
	StatCommandExit       = "command exit status"
)

// Run implements backend.Backend: it captures the volume map and the
// running processes, runs the rundown session, starts the kernel session
// and delivers its events through the etw pipeline to sink until ctx is
// done, opts.Duration elapses, the traced command exits, or the session
// dies. It always stops the sessions it started. run.go has the steps.
func (b *Backend) Run(ctx context.Context, opts backend.Options, sink event.Sink) error {
	r, err := b.newRun(&opts, sink)
	if err != nil {
		return err
	}
	if err := r.rundown(); err != nil {
		return err
	}
	if err := r.startMain(); err != nil {
		return err
	}
	r.startConsume()
	if end := r.connect(); end != nil {
		return r.stop(ctx, *end)
	}
	if err := r.startCommand(); err != nil {
		return r.abort(err)
	}
	return r.stop(ctx, r.wait(ctx))
}

// Sessions lists every running ETW session (as `xperf -Loggers` or
// `logman query -ets` do).
func Sessions(api API) ([]SessionStatus, error) {
	all, err := api.QueryAllTraces()
	if err != nil {
		if isErrno(err, ErrAccessDenied) {
			return nil, fmt.Errorf("list ETW sessions: %w: %s", err, accessAdvice)
		}
		return nil, fmt.Errorf("list ETW sessions: %w", err)
	}
	return all, nil
}
