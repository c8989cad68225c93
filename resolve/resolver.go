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

	// fdLists caches the binding lists of the descriptors Apply changed
	// last (direct-mapped): a close follows its open closely and
	// processes reuse their low descriptors, so most descriptor facts
	// skip the map. Lists never leave a History: entries never go stale.
	fdLists   *[fdSlots]fdList
	fdListsOf *History[FDKey]
}

type fdList struct {
	k FDKey
	l *spanList
}

// fdSlot returns the cache slot of k.
func fdSlotOf(k FDKey) uint64 {
	return (uint64(k.Pid)<<32 | uint64(uint32(k.FD))) * 0x9E3779B97F4A7C15 >> 52 % fdSlots
}

// applyFD applies a descriptor or working-directory fact for key k.
func (t *Tables) applyFD(k FDKey, f *event.Fact) {
	h := t.FDs
	if t.fdListsOf != h || t.fdLists == nil {
		t.fdLists, t.fdListsOf = new([fdSlots]fdList), h
	}
	sl := &t.fdLists[fdSlotOf(k)]
	l := sl.l
	if l == nil || sl.k != k {
		if f.End {
			l = h.ref(k) // an unbind creates nothing
		} else {
			l = h.list(k)
		}
		if l == nil {
			return
		}
		*sl = fdList{k: k, l: l}
	}
	switch {
	case f.End:
		h.unbind(l, f.Time)
	case f.Rundown:
		h.bindRundown(l, f.Time, f.Name)
	default:
		h.bind(l, f.Time, f.Name)
	}
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
		switch f.Space {
		case event.SpaceFD, event.SpaceCwd:
			k := FDKey{Pid: f.Pid, FD: int32(f.Handle)}
			if f.Space == event.SpaceCwd {
				k.FD = -1
			}
			t.applyFD(k, f)
		case event.SpaceFileObject:
			applyName(t.FileObjects, f.Handle, f)
		case event.SpaceFileKey:
			applyName(t.FileKeys, f.Handle, f)
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

// applyName binds or (for an End fact) unbinds k in h.
func applyName[K comparable](h *History[K], k K, f *event.Fact) {
	if f.End {
		h.Unbind(k, f.Time)
	} else {
		bindHistory(h, k, f, f.Name)
	}
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
	return t.handlePath(e)
}

// handlePath is FilePath by FileKey and FileObject.
func (t *Tables) handlePath(e *event.Event) (string, bool) {
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

	// fds caches the binding lists of recently used descriptors of
	// fdsOf (direct-mapped, by key), saving the map lookup: events use
	// the same few descriptors over and over. Lists are never removed
	// from a History, so an entry never goes stale.
	fds   *[fdSlots]fdSlot
	fdsOf *History[FDKey]
}

const fdSlots = 1 << 12

// fdSlot is a descriptor's binding list and the last lookup's answer,
// which holds for times in [lo, hi] while the History is at version ver.
type fdSlot struct {
	k      FDKey
	l      *spanList
	ver    uint64
	lo, hi int64
	name   string
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
		if p, ok := r.filePath(e); ok {
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

// filePath is Tables.FilePath with the descriptor cache.
func (r *Resolver) filePath(e *event.Event) (string, bool) {
	t := r.Tables
	if e.FD >= 0 {
		if r.fdsOf != t.FDs || r.fds == nil {
			r.fds, r.fdsOf = new([fdSlots]fdSlot), t.FDs
		}
		k := FDKey{Pid: e.Pid, FD: e.FD}
		fds := t.FDs
		sl := &r.fds[fdSlotOf(k)]
		var l *spanList
		if sl.l != nil && sl.k == k {
			if sl.ver == fds.ver && sl.lo <= e.Time && e.Time <= sl.hi {
				if sl.name != "" {
					return sl.name, true
				}
				return t.handlePath(e)
			}
			l = sl.l
		} else {
			l = fds.ref(k)
		}
		if l != nil {
			*sl = fdSlot{k: k, l: l, ver: fds.ver, lo: 1}
			if j, last := lookupIndex(l.s, e.Time); j >= 0 {
				sl.name = l.s[j].Name
				if last {
					sl.lo, sl.hi = l.validity(j)
				}
				if sl.name != "" {
					return sl.name, true
				}
			}
		}
	}
	return t.handlePath(e)
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
