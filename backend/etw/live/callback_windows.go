//go:build windows && (amd64 || arm64)

package live

import (
	"sync"

	"golang.org/x/sys/windows"
)

// The Go runtime never frees a Windows callback and allows about 2,000 per
// process, so the event callback is created once, on first use, and routes
// each EVENT_RECORD by the context given to OpenTrace
// (EVENT_TRACE_LOGFILE.Context, delivered as EVENT_RECORD.UserContext) to
// the consumer registered under it. This registry and the console handler
// below are the package's only process-wide state: the OS callbacks need
// them.

var (
	callbackOnce sync.Once
	callbackPtr  uintptr
	consumers    = &registry{byID: map[uintptr]Consumer{}, byTrace: map[TraceHandle]uintptr{}}
)

type registry struct {
	mu      sync.RWMutex
	next    uintptr
	byID    map[uintptr]Consumer
	byTrace map[TraceHandle]uintptr
}

func (r *registry) add(c Consumer) uintptr {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	r.byID[r.next] = c
	return r.next
}

func (r *registry) bind(h TraceHandle, id uintptr) {
	r.mu.Lock()
	r.byTrace[h] = id
	r.mu.Unlock()
}

func (r *registry) remove(id uintptr) {
	r.mu.Lock()
	delete(r.byID, id)
	r.mu.Unlock()
}

func (r *registry) release(h TraceHandle) {
	r.mu.Lock()
	if id, ok := r.byTrace[h]; ok {
		delete(r.byID, id)
		delete(r.byTrace, h)
	}
	r.mu.Unlock()
}

func (r *registry) get(id uintptr) Consumer {
	r.mu.RLock()
	c := r.byID[id]
	r.mu.RUnlock()
	return c
}

// eventCallback returns the process's one EventRecordCallback.
func eventCallback() uintptr {
	callbackOnce.Do(func() {
		callbackPtr = windows.NewCallback(func(er *EventRecord) uintptr {
			if c := consumers.get(er.UserContext); c != nil {
				c.Event(er)
			}
			return 0
		})
	})
	return callbackPtr
}

// Console control handling: Ctrl-C and Ctrl-Break reach Go as os.Interrupt
// (the CLI stops cleanly), but closing the console window, logging off or
// shutting down kill the process soon after; the handler stops every
// running session first, so that none is left behind.
var (
	activeMu    sync.Mutex
	active      = map[string]func(){}
	handlerOnce sync.Once
)

const (
	ctrlCloseEvent    = 2
	ctrlLogoffEvent   = 5
	ctrlShutdownEvent = 6
)

func registerActive(name string, stop func()) (unregister func()) {
	handlerOnce.Do(func() {
		h := windows.NewCallback(func(ctrl uint32) uintptr {
			switch ctrl {
			case ctrlCloseEvent, ctrlLogoffEvent, ctrlShutdownEvent:
				StopActive()
			}
			return 0 // let the next handler (Go's) run
		})
		_ = setConsoleCtrlHandler(h, true)
	})
	activeMu.Lock()
	active[name] = stop
	activeMu.Unlock()
	return func() {
		activeMu.Lock()
		delete(active, name)
		activeMu.Unlock()
	}
}

// StopActive stops every session this process runs, for a process about
// to quit without its clean stop (a second Ctrl-C): a kernel session
// outlives the process that started it.
func StopActive() {
	activeMu.Lock()
	stops := make([]func(), 0, len(active))
	for _, s := range active {
		stops = append(stops, s)
	}
	activeMu.Unlock()
	for _, s := range stops {
		s()
	}
}
