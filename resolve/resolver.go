package resolve

import (
	"strings"

	"github.com/iotrace/iotrace/event"
)

// FDKey keys a Linux descriptor (or, with FD -1, a working directory) of
// one process.
type FDKey struct {
	Pid uint32
	FD  int32
}

// Tables hold everything the resolver knows, with time history.
type Tables struct {
	FDs         *History[FDKey]  // Linux fd and cwd (FD = -1) bindings
	FileObjects *History[uint64] // Windows FILE_OBJECT → name
	FileKeys    *History[uint64] // Windows FileKey → name
	Processes   *History[uint32] // pid → process name
	Images      *History[uint32] // pid → executable path
	Threads     *History[uint32] // tid → pid, as a decimal name
	Devices     map[event.Device]string
	// Volumes maps NT device prefixes ("\Device\HarddiskVolume2") to DOS
	// paths ("C:").
	Volumes map[string]string
}

// NewTables returns empty tables.
func NewTables() *Tables {
	return &Tables{
		FDs:         NewHistory[FDKey](),
		FileObjects: NewHistory[uint64](),
		FileKeys:    NewHistory[uint64](),
		Processes:   NewHistory[uint32](),
		Images:      NewHistory[uint32](),
		Threads:     NewHistory[uint32](),
		Devices:     make(map[event.Device]string),
		Volumes:     make(map[string]string),
	}
}

// Apply records a fact.
func (t *Tables) Apply(f *event.Fact) {
	switch f.Kind {
	case event.FactName:
		var bind func(name string)
		var unbind func()
		switch f.Space {
		case event.SpaceFD, event.SpaceCwd:
			k := FDKey{Pid: f.Pid, FD: int32(f.Handle)}
			if f.Space == event.SpaceCwd {
				k.FD = -1
			}
			bind, unbind = historyOps(t.FDs, k, f)
		case event.SpaceFileObject:
			bind, unbind = historyOps(t.FileObjects, f.Handle, f)
		case event.SpaceFileKey:
			bind, unbind = historyOps(t.FileKeys, f.Handle, f)
		default:
			return
		}
		if f.End {
			unbind()
		} else {
			bind(f.Name)
		}
	case event.FactProcess:
		if f.End {
			t.Processes.Unbind(f.Pid, f.Time)
			t.Images.Unbind(f.Pid, f.Time)
			return
		}
		bindHistory(t.Processes, f.Pid, f, f.Name)
		if f.Image != "" {
			bindHistory(t.Images, f.Pid, f, f.Image)
		}
	case event.FactThread:
		if f.End {
			t.Threads.Unbind(f.Tid, f.Time)
			return
		}
		bindHistory(t.Threads, f.Tid, f, utoa(f.Pid))
	case event.FactDevice:
		t.Devices[f.Dev] = f.Name
	case event.FactVolume:
		// Trim one trailing separator only: the network mapping "\\"
		// must not become empty.
		t.Volumes[strings.TrimSuffix(f.Name, `\`)] = strings.TrimSuffix(f.Image, `\`)
	}
}

func historyOps[K comparable](h *History[K], k K, f *event.Fact) (func(string), func()) {
	return func(name string) { bindHistory(h, k, f, name) }, func() { h.Unbind(k, f.Time) }
}

func bindHistory[K comparable](h *History[K], k K, f *event.Fact, name string) {
	if f.Rundown {
		h.BindRundown(k, f.Time, name)
	} else {
		h.Bind(k, f.Time, name)
	}
}

// FilePath returns the path of the file e refers to at e.Time: by fd for
// Linux events, by FileKey then FileObject for Windows events, with NT
// device paths turned into DOS paths.
func (t *Tables) FilePath(e *event.Event) (string, bool) {
	if e.FD >= 0 {
		if p, ok := t.FDs.Lookup(FDKey{Pid: e.Pid, FD: e.FD}, e.Time); ok && p != "" {
			return p, true
		}
	}
	if e.FileKey != 0 {
		if p, ok := t.FileKeys.Lookup(e.FileKey, e.Time); ok && p != "" {
			return t.DOSPath(p), true
		}
	}
	if e.FileObject != 0 {
		if p, ok := t.FileObjects.Lookup(e.FileObject, e.Time); ok && p != "" {
			return t.DOSPath(p), true
		}
	}
	return "", false
}

// Cwd returns the working directory of pid at time ts.
func (t *Tables) Cwd(pid uint32, ts int64) (string, bool) {
	return t.FDs.Lookup(FDKey{Pid: pid, FD: -1}, ts)
}

// DOSPath turns "\Device\HarddiskVolume2\x" into "C:\x" through the
// volume mapping; other paths are returned unchanged.
func (t *Tables) DOSPath(p string) string {
	if len(t.Volumes) == 0 || !strings.HasPrefix(p, `\`) {
		return p
	}
	// Try the longest prefix ending at a path separator.
	for i := len(p); i > 0; i = strings.LastIndexByte(p[:i], '\\') {
		if dos, ok := t.Volumes[p[:i]]; ok {
			return dos + p[i:]
		}
	}
	return p
}

// ProcessName returns the name of process pid at time ts.
func (t *Tables) ProcessName(pid uint32, ts int64) (string, bool) {
	return t.Processes.Lookup(pid, ts)
}

func utoa(v uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}

// Resolver is an event.Sink that applies facts to its Tables and fills in
// the Path and Comm of events that lack them, then passes everything on to
// the next sink. It counts the file events it could not name.
type Resolver struct {
	next   event.Sink
	Tables *Tables
	// Unresolved counts events with a handle that got no path.
	Unresolved uint64
}

// NewResolver returns a Resolver that forwards to next with empty tables.
func NewResolver(next event.Sink) *Resolver {
	return &Resolver{next: next, Tables: NewTables()}
}

// Begin implements event.Sink.
func (r *Resolver) Begin(h *event.Header) error { return r.next.Begin(h) }

// Fact implements event.Sink.
func (r *Resolver) Fact(f *event.Fact) error {
	r.Tables.Apply(f)
	return r.next.Fact(f)
}

// Event implements event.Sink.
func (r *Resolver) Event(e *event.Event) error {
	r.Resolve(e)
	return r.next.Event(e)
}

// Resolve fills in e's Path, Comm and device name where they are missing
// and the tables know them.
func (r *Resolver) Resolve(e *event.Event) {
	if e.Path == "" && e.HasHandle() && e.Layer == event.LayerFile {
		if p, ok := r.Tables.FilePath(e); ok {
			e.Path = p
			e.Flags |= event.FlagPathLate
		} else {
			r.Unresolved++
		}
	} else if e.Path == "" && e.Layer == event.LayerBlock && (e.FileKey != 0 || e.FileObject != 0) {
		if p, ok := r.Tables.FilePath(e); ok {
			e.Path = p
		} else {
			r.Unresolved++
		}
	}
	if e.Comm == "" {
		if c, ok := r.Tables.ProcessName(e.Pid, e.Time); ok {
			e.Comm = c
		}
	}
}

// UnresolvedCounter names the Stats counter a Resolver sets: events that
// name a file by handle and still have no path after resolution.
const UnresolvedCounter = "events with a handle but no path (resolver)"

// End implements event.Sink. It sets the unresolved count in the trailer's
// stats, replacing a count an earlier resolver left there (a trace that was
// resolved, written and is now read again counts its events once).
func (r *Resolver) End(t *event.Trailer) error {
	if r.Unresolved > 0 || t.Stats.Get(event.CountUnresolved, UnresolvedCounter) > 0 {
		t.Stats.Set(event.CountUnresolved, UnresolvedCounter, r.Unresolved)
	}
	return r.next.End(t)
}
