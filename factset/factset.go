// Package factset keeps the facts of a trace that hold now: the open
// descriptors and handles with their names, the working directories, the
// running processes and threads, the devices and volumes, the modules
// mapped, and the stacks and kernel symbols seen (which events of any
// later file may refer to). A recorder that
// starts a new file in the middle of a trace (rotation, a flight recorder's
// save) writes them at the new file's start as rundown facts, so that the
// file resolves on its own: a descriptor opened before the file began
// still has its name.
//
// It is written here rather than taken from package resolve, whose tables
// keep the history of every binding to name past events; a Set keeps only
// the present, in memory bounded by the traced system's state.
package factset

import (
	"cmp"
	"slices"

	"github.com/iotrace/iotrace/event"
)

// key identifies what a fact is about: a later fact with the same key
// replaces it, an End fact removes it.
type key struct {
	kind   event.FactKind
	space  event.HandleSpace
	pid    uint32
	start  int64
	tid    uint32
	handle uint64
	dev    event.Device
	name   string
}

func keyOf(f *event.Fact) key {
	switch f.Kind {
	case event.FactName:
		if f.Space == event.SpaceFileObject || f.Space == event.SpaceFileKey {
			// Kernel addresses, one namespace for the whole machine: the
			// process that closes a FILE_OBJECT need not be the one that
			// opened it.
			return key{kind: f.Kind, space: f.Space, handle: f.Handle}
		}
		return key{kind: f.Kind, space: f.Space, pid: f.Pid, start: f.ProcStart, handle: f.Handle}
	case event.FactProcess:
		return key{kind: f.Kind, pid: f.Pid, start: f.ProcStart}
	case event.FactThread:
		// Thread ids are machine-wide; an exit may not say its process.
		return key{kind: f.Kind, tid: f.Tid}
	case event.FactDevice:
		return key{kind: f.Kind, dev: f.Dev}
	case event.FactVolume:
		return key{kind: f.Kind, name: f.Name}
	case event.FactModule:
		// A mapping, by process and load address.
		return key{kind: f.Kind, pid: f.Pid, start: f.ProcStart, handle: f.Handle}
	case event.FactStack, event.FactKernelSymbol:
		// A stack by its ID, a kernel symbol by its address: kept for
		// the events of later files that refer to them.
		return key{kind: f.Kind, handle: f.Handle}
	}
	return key{kind: f.Kind}
}

// Set is the facts that hold now. The zero value is not ready: use New.
type Set struct {
	m map[key]event.Fact
	// byPid indexes the per-process facts (names, threads) of each pid,
	// dropped with their process.
	byPid map[uint32]map[key]struct{}
}

// New returns an empty Set.
func New() *Set {
	return &Set{m: map[key]event.Fact{}, byPid: map[uint32]map[key]struct{}{}}
}

// Len returns the number of facts held.
func (s *Set) Len() int { return len(s.m) }

// Apply updates the set with f: a new fact is added, a fact about the same
// thing replaces the one held (a process's name, image and command line
// are kept from the older fact where the newer one leaves them empty), an
// End fact removes it. A process's end removes its descriptors, working
// directory and threads too.
func (s *Set) Apply(f *event.Fact) {
	if f.Kind == event.FactUnknown {
		return
	}
	k := keyOf(f)
	if f.End {
		s.remove(k, f.Pid)
		if f.Kind == event.FactProcess {
			for pk := range s.byPid[f.Pid] {
				if pk.start == f.ProcStart || pk.start == 0 || f.ProcStart == 0 {
					s.remove(pk, f.Pid)
				}
			}
		}
		return
	}
	nf := *f
	nf.Rundown, nf.End = false, false
	// The caller's frames may be reused after the call.
	nf.Kernel, nf.User = slices.Clone(f.Kernel), slices.Clone(f.User)
	if old, ok := s.m[k]; ok && f.Kind == event.FactProcess {
		nf.Name = cmp.Or(nf.Name, old.Name)
		nf.Image = cmp.Or(nf.Image, old.Image)
		nf.Detail = cmp.Or(nf.Detail, old.Detail)
		if nf.PPid == 0 {
			nf.PPid = old.PPid
		}
	}
	s.m[k] = nf
	if perProcess(f) {
		ks := s.byPid[f.Pid]
		if ks == nil {
			ks = map[key]struct{}{}
			s.byPid[f.Pid] = ks
		}
		ks[k] = struct{}{}
	}
}

// perProcess reports whether f belongs to a process and ends with it (a
// thread, a descriptor, a working directory).
func perProcess(f *event.Fact) bool {
	switch f.Kind {
	case event.FactThread:
		return true
	case event.FactModule:
		return f.Pid != 0 // not the kernel's modules
	case event.FactName:
		return f.Space == event.SpaceFD || f.Space == event.SpaceCwd
	}
	return false
}

// remove forgets k, and its entry in pid's index.
func (s *Set) remove(k key, pid uint32) {
	delete(s.m, k)
	if ks := s.byPid[pid]; ks != nil {
		delete(ks, k)
		if len(ks) == 0 {
			delete(s.byPid, pid)
		}
	}
}

// Snapshot calls fn with every fact held, as a rundown observed at time t:
// devices and volumes first, then processes, threads and names, each kind
// in a stable order. It stops at fn's first error.
func (s *Set) Snapshot(t int64, fn func(*event.Fact) error) error {
	keys := make([]key, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	rank := func(k event.FactKind) int {
		switch k {
		case event.FactDevice:
			return 0
		case event.FactVolume:
			return 1
		case event.FactProcess:
			return 2
		case event.FactThread:
			return 3
		}
		return 4
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(rank(a.kind), rank(b.kind)), cmp.Compare(a.pid, b.pid), cmp.Compare(a.start, b.start),
			cmp.Compare(a.space, b.space), cmp.Compare(a.handle, b.handle), cmp.Compare(a.tid, b.tid),
			cmp.Compare(a.dev.Major, b.dev.Major), cmp.Compare(a.dev.Minor, b.dev.Minor), cmp.Compare(a.name, b.name))
	})
	for _, k := range keys {
		f := s.m[k]
		f.Time, f.Rundown = t, true
		if err := fn(&f); err != nil {
			return err
		}
	}
	return nil
}
