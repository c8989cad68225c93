package live

import (
	"fmt"
	"sync"

	"github.com/iotrace/iotrace/backend/etw/ownprovider"
)

// Writing iotrace's own events (markers, the volume map, image
// identities: package ownprovider) into a kernel session.
//
// TraceEvent takes a session handle, but its documentation ties the
// handle to a provider's enable callback and names ERROR_INVALID_HANDLE
// for the NT Kernel Logger's: a kernel session may refuse it. What is
// known to work is a provider of iotrace's own: registered in this
// process (EventRegister), enabled on the session (EnableTraceEx2) and
// written with EventWrite; its events reach every session that enabled
// it. So every session that takes iotrace's events (trace, record)
// enables the provider, which is also how `iotrace mark`, another
// process, reaches it; a recording writes with TraceEvent first and,
// when the session refuses it, through the provider, and says which it
// took. EventWrite's events carry an EVENT_HEADER (the event id and the
// opcode both the ownprovider opcode) instead of TraceEvent's classic
// header; readers take either (package kernel keys the class by id or
// opcode).

// ownLevel is the level iotrace's provider writes at
// (TRACE_LEVEL_INFORMATION).
const ownLevel = 4

// ownDescriptor is the EVENT_DESCRIPTOR of an ownprovider event.
func ownDescriptor(opcode uint8) EventDescriptor {
	return EventDescriptor{ID: uint16(opcode), Version: ownprovider.Version, Level: ownLevel, Opcode: opcode}
}

// The ways iotrace's events reach a session.
const (
	pathTraceEvent = "TraceEvent into the session"
	pathProvider   = "iotrace's provider (EventRegister, EnableTraceEx2, EventWrite)"
)

// ownWriter writes iotrace's events into one session.
type ownWriter struct {
	api     API
	session SessionHandle
	warn    func(string)
	mu      sync.Mutex
	// provider is set once the session refused TraceEvent.
	provider ProviderHandle
	fallback bool
}

// write writes one event.
func (w *ownWriter) write(opcode uint8, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.fallback {
		err := w.api.TraceEvent(w.session, MarkerGUID, opcode, data)
		if err == nil {
			return nil
		}
		h, perr := w.api.RegisterProvider(MarkerGUID)
		if perr != nil {
			return fmt.Errorf("TraceEvent: %w; and iotrace's provider cannot be registered: %v", err, perr)
		}
		w.provider, w.fallback = h, true
		w.warn(fmt.Sprintf("the kernel session refused TraceEvent (%v): iotrace's events go through %s", err, pathProvider))
	}
	return w.api.WriteEvent(w.provider, ownDescriptor(opcode), data)
}

// path says how the events were written.
func (w *ownWriter) path() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fallback {
		return pathProvider
	}
	return pathTraceEvent
}

// close unregisters the provider, if it was registered.
func (w *ownWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fallback {
		_ = w.api.UnregisterProvider(w.provider)
	}
}

// enableOwn enables iotrace's provider on session h so that markers (and
// a recording's own events, when it writes them through the provider)
// reach it; failing, it says what is lost.
func enableOwn(api API, h SessionHandle, name string, warn func(string)) {
	if err := api.EnableProvider(h, MarkerGUID); err != nil {
		warn(fmt.Sprintf("session %q does not take iotrace's provider (EnableTraceEx2: %v): `iotrace mark` cannot reach it", name, err))
	}
}

// SendMark writes a marker with text through iotrace's provider, which
// every running iotrace trace or recording has enabled, and returns how
// many running iotrace sessions (their owner alive) there are to get it.
func SendMark(api API, text string) (int, error) {
	all, err := api.QueryAllTraces()
	if err != nil {
		return 0, fmt.Errorf("list ETW sessions: %w", err)
	}
	procs, err := api.Processes()
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	n := 0
	for _, s := range all {
		if _, ok := OwnerPid(s.Name); ok && !helperSession(s.Name) && !Stale(s.Name, procs, 0) {
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	h, err := api.RegisterProvider(MarkerGUID)
	if err != nil {
		return 0, fmt.Errorf("register iotrace's provider (EventRegister): %w", err)
	}
	werr := api.WriteEvent(h, ownDescriptor(ownprovider.OpcodeMarker), ownprovider.Marker(text))
	uerr := api.UnregisterProvider(h)
	if werr != nil {
		return 0, fmt.Errorf("write the marker (EventWrite): %w", werr)
	}
	if uerr != nil {
		return n, fmt.Errorf("unregister iotrace's provider (EventUnregister): %w", uerr)
	}
	return n, nil
}

// Grant lets the account user (DOMAIN\name, or a SID string) start and
// consume iotrace's sessions without elevation: it grants every session
// GUID iotrace takes (guids.go), the kernel provider's and iotrace's
// provider's (EventAccessControl). It needs an administrator.
func Grant(api API, user string) error {
	if err := api.GrantTracing(user, SessionGUIDs()); err != nil {
		return fmt.Errorf("grant %s the right to trace: %w", user, err)
	}
	return nil
}
