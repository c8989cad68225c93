package resolve

import (
	"math"
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
	// skip the map. An entry holds while its list's gen is unchanged.
	fdLists   *[fdSlots]fdList
	fdListsOf *History[FDKey]

	// pos counts the facts applied (the stream position); scanned counts
	// the facts Prescan saw, and last holds, per hash of the key a fact
	// changes, the position of the latest such fact (see Prescan).
	pos     int64
	scanned int64
	last    *[lastSlots]int64
}

// lastSlots is the size of Prescan's table of positions. Keys that share
// a slot only make announced rundowns apply to fewer lookups.
const lastSlots = 1 << 16

type fdList struct {
	k   FDKey
	l   *spanList
	gen uint32
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
	if l == nil || sl.k != k || l.gen != sl.gen {
		if f.End {
			l = h.ref(k) // an unbind creates nothing
		} else {
			l = h.list(k)
		}
		if l == nil {
			return
		}
		*sl = fdList{k: k, l: l, gen: l.gen}
	}
	switch {
	case f.End:
		h.unbind(k, l, f.Time)
	case f.Rundown:
		h.consume(k)
		h.bindRundown(l, f.Time, f.Name)
	default:
		h.bind(l, f.Time, f.Name)
	}
}

// NewTables returns empty tables that keep every binding.
func NewTables() *Tables { return NewBoundedTables(Limits{}) }

// NewBoundedTables returns empty tables whose histories keep what lim
// allows.
func NewBoundedTables(lim Limits) *Tables {
	t := &Tables{
		FDs:         NewBoundedHistory[FDKey](lim),
		FileObjects: NewBoundedHistory[uint64](lim),
		FileKeys:    NewBoundedHistory[uint64](lim),
		Processes:   NewBoundedHistory[uint32](lim),
		Images:      NewBoundedHistory[uint32](lim),
		Threads:     NewBoundedHistory[uint32](lim),
		Devices:     make(map[event.Device]string),
		Volumes:     make(map[string]string),
	}
	t.FDs.pos, t.FileObjects.pos, t.FileKeys.pos = &t.pos, &t.pos, &t.pos
	t.Processes.pos, t.Images.pos, t.Threads.pos = &t.pos, &t.pos, &t.pos
	return t
}

// Prescan is the pre-pass of a reader that streams a trace through Apply
// with tables that do not keep its whole history: call it with every
// fact of the trace, in stream order, before the first Apply. It applies
// the device and volume names (they hold for the whole trace; Apply then
// skips them) and announces each rundown to its history with the
// position of the last other fact for its key before it, so
// that an event the stream reaches before the rundown is named by it
// exactly when applying every fact first would have named it. It keeps
// a fixed-size table of positions and the rundowns, nothing per fact;
// only the key and the kind of a fact that is not a rundown matter.
func (t *Tables) Prescan(f *event.Fact) {
	pos := t.scanned
	t.scanned++
	if f.Kind == event.FactDevice || f.Kind == event.FactVolume {
		t.apply(f)
		return
	}
	slot, ok := factSlot(f)
	if !ok {
		return
	}
	if t.last == nil {
		t.last = new([lastSlots]int64)
		for i := range t.last {
			t.last[i] = -1
		}
	}
	if !f.Rundown || f.End {
		t.last[slot] = pos
		return
	}
	after := t.last[slot]
	switch f.Kind {
	case event.FactName:
		switch f.Space {
		case event.SpaceFD:
			t.FDs.expect(FDKey{Pid: f.Pid, FD: int32(f.Handle)}, f.Name, after)
		case event.SpaceCwd:
			t.FDs.expect(FDKey{Pid: f.Pid, FD: -1}, f.Name, after)
		case event.SpaceFileObject:
			t.FileObjects.expect(f.Handle, f.Name, after)
		case event.SpaceFileKey:
			t.FileKeys.expect(f.Handle, f.Name, after)
		}
	case event.FactProcess:
		t.Processes.expect(f.Pid, f.Name, after)
		if f.Image != "" {
			t.Images.expect(f.Pid, f.Image, after)
		}
	case event.FactThread:
		t.Threads.expect(f.Tid, utoa(f.Pid), after)
	}
}

// factSlot returns the slot of Prescan's table for the key f changes.
func factSlot(f *event.Fact) (uint64, bool) {
	var k uint64
	switch f.Kind {
	case event.FactName:
		switch f.Space {
		case event.SpaceFD:
			k = 1<<60 | uint64(f.Pid)<<32 | uint64(uint32(f.Handle))
		case event.SpaceCwd:
			k = 1<<60 | uint64(f.Pid)<<32 | uint64(math.MaxUint32)
		case event.SpaceFileObject:
			k = 2<<60 ^ f.Handle
		case event.SpaceFileKey:
			k = 3<<60 ^ f.Handle
		default:
			return 0, false
		}
	case event.FactProcess:
		k = 4<<60 | uint64(f.Pid)
	case event.FactThread:
		k = 5<<60 | uint64(f.Tid)
	default:
		return 0, false
	}
	k ^= k >> 29
	k *= 0xBF58476D1CE4E5B9
	k ^= k >> 32
	return k % lastSlots, true
}

// Pending returns the number of rundowns announced by Prescan that Apply
// has not seen yet.
func (t *Tables) Pending() int {
	return t.FDs.Pending() + t.FileObjects.Pending() + t.FileKeys.Pending() +
		t.Processes.Pending() + t.Images.Pending() + t.Threads.Pending()
}

// Apply records a fact. After Prescan, it skips the device and volume
// names Prescan applied.
func (t *Tables) Apply(f *event.Fact) {
	t.pos++
	if t.scanned > 0 && (f.Kind == event.FactDevice || f.Kind == event.FactVolume) {
		return
	}
	t.apply(f)
}

func (t *Tables) apply(f *event.Fact) {
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
	p, res := t.FindPath(e)
	return p, res == Bound
}

// FindPath is FilePath that also says when the path is unknown because
// bounded tables dropped the binding that would name it (Dropped).
func (t *Tables) FindPath(e *event.Event) (string, Result) {
	res := Unbound
	if e.FD >= 0 {
		p, r := t.FDs.Find(FDKey{Pid: e.Pid, FD: e.FD}, e.Time)
		if r == Bound && p != "" {
			return p, Bound
		}
		res = worse(res, r)
	}
	return t.handlePath(e, res)
}

// worse returns Dropped when either result is, so that a lookup that
// found nothing says that a dropped binding might have named it.
func worse(a, b Result) Result {
	if a == Dropped || b == Dropped {
		return Dropped
	}
	return Unbound
}

// handlePath is FindPath by FileKey and FileObject; res is the result of
// the lookups tried before.
func (t *Tables) handlePath(e *event.Event, res Result) (string, Result) {
	if e.FileKey != 0 {
		p, r := t.FileKeys.Find(e.FileKey, e.Time)
		if r == Bound && p != "" {
			return t.DOSPath(p), Bound
		}
		res = worse(res, r)
	}
	if e.FileObject != 0 {
		p, r := t.FileObjects.Find(e.FileObject, e.Time)
		if r == Bound && p != "" {
			return t.DOSPath(p), Bound
		}
		res = worse(res, r)
	}
	return "", res
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
	// Unresolved counts events with a handle that got no path, except
	// those counted in Dropped.
	Unresolved uint64
	// Dropped counts events with a handle that got no path because
	// bounded tables dropped the history that might have named them.
	Dropped uint64

	// fds caches the binding lists of recently used descriptors of
	// fdsOf (direct-mapped, by key), saving the map lookup: events use
	// the same few descriptors over and over.
	fds   *[fdSlots]fdSlot
	fdsOf *History[FDKey]
}

const fdSlots = 1 << 12

// fdSlot is a descriptor's binding list and the last lookup's answer,
// which holds for times in [lo, hi] while the list is at version ver.
type fdSlot struct {
	k      FDKey
	l      *spanList
	ver    uint64
	gen    uint32
	lo, hi int64
	name   string
}

// NewResolver returns a Resolver that forwards to next with empty tables
// that keep every binding.
func NewResolver(next event.Sink) *Resolver {
	return NewTablesResolver(next, NewTables())
}

// NewTablesResolver returns a Resolver that forwards to next and resolves
// with t.
func NewTablesResolver(next event.Sink, t *Tables) *Resolver {
	return &Resolver{next: next, Tables: t}
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
		if p, res := r.filePath(e); res == Bound {
			e.Path = p
			e.Flags |= event.FlagPathLate
		} else {
			r.unresolved(res)
		}
	} else if e.Path == "" && e.Layer == event.LayerBlock && (e.FileKey != 0 || e.FileObject != 0) {
		if p, res := r.Tables.handlePath(e, Unbound); res == Bound {
			e.Path = p
		} else {
			r.unresolved(res)
		}
	}
	if e.Comm == "" {
		if c, ok := r.Tables.ProcessName(e.Pid, e.Time); ok {
			e.Comm = c
		}
	}
}

func (r *Resolver) unresolved(res Result) {
	if res == Dropped {
		r.Dropped++
	} else {
		r.Unresolved++
	}
}

// filePath is Tables.FindPath with the descriptor cache.
func (r *Resolver) filePath(e *event.Event) (string, Result) {
	t := r.Tables
	if e.FD < 0 {
		return t.handlePath(e, Unbound)
	}
	if r.fdsOf != t.FDs || r.fds == nil {
		r.fds, r.fdsOf = new([fdSlots]fdSlot), t.FDs
	}
	k := FDKey{Pid: e.Pid, FD: e.FD}
	fds := t.FDs
	sl := &r.fds[fdSlotOf(k)]
	var l *spanList
	if sl.l != nil && sl.k == k && sl.l.gen == sl.gen {
		if sl.ver == sl.l.ver && sl.lo <= e.Time && e.Time <= sl.hi {
			if sl.name != "" {
				return sl.name, Bound
			}
			return t.handlePath(e, Unbound)
		}
		l = sl.l
	} else {
		l = fds.ref(k)
	}
	if l != nil {
		*sl = fdSlot{k: k, l: l, ver: l.ver, gen: l.gen, lo: 1}
		if j, last := lookupIndex(l.s, e.Time); j >= 0 {
			name := l.s[j].Name
			if name != "" {
				if last {
					sl.name = name
					sl.lo, sl.hi = l.validity(j)
				}
				return name, Bound
			}
			if fds.pendingEntries == 0 && last {
				// An unnamed binding: cached as such, answered by
				// handle.
				sl.lo, sl.hi = l.validity(j)
			}
		}
	}
	p, res := fds.find(k, l, e.Time)
	if res == Bound && p != "" {
		return p, Bound
	}
	return t.handlePath(e, worse(Unbound, res))
}

// UnresolvedCounter names the Stats counter a Resolver sets: events that
// name a file by handle and still have no path after resolution.
const UnresolvedCounter = "events with a handle but no path (resolver)"

// DroppedCounter names the Stats counter (kind unresolved) of the events
// with a handle that got no path because bounded tables dropped the
// history that might have named them; UnresolvedCounter does not count
// them.
const DroppedCounter = "events with a handle whose binding history was dropped to bound memory (resolver)"

// End implements event.Sink. It sets the unresolved count in the trailer's
// stats, replacing a count an earlier resolver left there (a trace that was
// resolved, written and is now read again counts its events once).
func (r *Resolver) End(t *event.Trailer) error {
	if r.Unresolved > 0 || t.Stats.Get(event.CountUnresolved, UnresolvedCounter) > 0 {
		t.Stats.Set(event.CountUnresolved, UnresolvedCounter, r.Unresolved)
	}
	if r.Dropped > 0 || t.Stats.Get(event.CountUnresolved, DroppedCounter) > 0 {
		t.Stats.Set(event.CountUnresolved, DroppedCounter, r.Dropped)
	}
	return r.next.End(t)
}
