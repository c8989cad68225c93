package modident

import (
	"github.com/iotrace/iotrace/backend/etw/internal/names"
	"github.com/iotrace/iotrace/backend/etw/internal/tally"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/event"
)

// Modules turns Image events and identity records into module facts. It
// is not safe for concurrent use.
type Modules struct {
	t     *tally.Tally
	names *names.Cache
	phase phase

	pend   pending
	before []Identity          // identities waiting for their image (live)
	known  map[key]struct{}    // modules loaded (emitted, not unloaded)
	out    []event.Fact        // module facts to emit (Facts)
	pdbIDs map[pdbKey]pdbEntry // caches
	peIDs  map[peKey]string

	// A file's first pass: the identities it collected (collect.go) and
	// the conflicts among them, counted when the second pass starts.
	ids        collectedIDs
	own        map[key][]ownCollected
	ownDropped uint64
	conflicts  uint64
}

// phase is what a Modules is used for.
type phase uint8

const (
	phaseLive       phase = iota // a live session: identities come with their images
	phaseCollecting              // a file's first pass: identities are collected
	phaseReplaying               // a file's second pass: images take the collected identities
)

// key identifies a loaded module.
type key struct {
	pid  uint32
	base uint64
}

// pending is an image event held until its identity records have had
// their chance to arrive.
type pending struct {
	ts    int64
	f     event.Fact
	id    Identity
	has   bool
	known bool // a rundown at the end of a module already emitted
	chk   imageCheck
}

// New returns the Modules of a live session (see Collect), counting into
// t and naming files through n.
func New(t *tally.Tally, n *names.Cache) *Modules {
	return &Modules{t: t, names: n, known: make(map[key]struct{}), pdbIDs: make(map[pdbKey]pdbEntry), peIDs: make(map[peKey]string)}
}

// Facts returns the module facts made since the last call, in order: the
// caller emits them before it calls Modules again.
func (m *Modules) Facts() []event.Fact {
	out := m.out
	m.out = m.out[:0]
	return out
}

// Waiting reports whether an image or identities wait for Settle.
func (m *Modules) Waiting() bool { return m.pend.has || len(m.before) > 0 }

// Settle makes the held image's fact and counts the identities left
// without their image, once a record with a later timestamp than theirs
// arrives (ts), or at the end (force).
func (m *Modules) Settle(ts int64, force bool) {
	if m.pend.has && (force || ts > m.pend.ts) {
		m.flushPending()
	}
	if len(m.before) > 0 && (force || ts > m.before[0].ts) {
		n := 0
		for _, id := range m.before {
			if force || ts > id.ts {
				m.t.Add(StatIdentityNoImage, event.CountUnresolved, 1)
				continue
			}
			m.before[n] = id
			n++
		}
		m.before = m.before[:n]
	}
}

// flushPending makes the held image's fact (unless it is already known).
func (m *Modules) flushPending() {
	if !m.pend.has {
		return
	}
	m.pend.has = false
	if !m.pend.known {
		m.module(&m.pend.f, &m.pend.id)
	}
}

// Image turns an Image event (ev, of process pid started at start,
// logged at raw time ts, t in ns) into a module fact, held until its
// identity records (at the same timestamp) are in: a live session's, or
// a file's second pass's (the identities its first pass collected).
func (m *Modules) Image(ts, t int64, pid uint32, start int64, ev *kernel.Event) {
	k := key{pid: pid, base: ev.ImageBase}
	known := false
	switch ev.Phase {
	case kernel.PhaseEnd:
		if _, ok := m.known[k]; ok {
			delete(m.known, k)
			m.out = append(m.out, event.Fact{Kind: event.FactModule, Time: t, Pid: pid, ProcStart: start, Handle: ev.ImageBase,
				Size: ev.ImageSize, End: true})
		}
		// Merged traces log the identity of unloaded images too: they
		// are taken, not counted as orphans.
		known = true
	case kernel.PhaseDCEnd:
		if _, ok := m.known[k]; ok {
			// Known: its identity records (if any) are taken, not
			// repeated.
			m.t.Add(StatRundownEndKnown, event.CountInfo, 1)
			known = true
		}
	}
	m.flushPending()
	pm := &m.pend
	*pm = pending{ts: ts, has: true, known: known,
		chk: imageCheck{tds: ev.TimeDateStamp, size: ev.ImageSize}, id: Identity{checksum: ev.Checksum}}
	// The file name checks iotrace identities (none to check in a
	// file's second pass without them) and names a module not known yet.
	check := m.phase != phaseReplaying || len(m.own) > 0
	var name string
	if len(ev.Name) > 0 && (check || !known) {
		name = m.names.Str(ev.Name)
		if check {
			pm.chk.name = imageName(name)
		}
	}
	f := &pm.f
	*f = event.Fact{Kind: event.FactModule, Time: t, Pid: pid, ProcStart: start, Handle: ev.ImageBase, Size: ev.ImageSize,
		Rundown: ev.Phase == kernel.PhaseDCStart || ev.Phase == kernel.PhaseDCEnd}
	if !known { // else only its identity records are taken
		if name != "" {
			f.Name = m.names.DOS(names.NT(name))
		}
		if ev.TimeDateStamp != 0 {
			f.Detail = m.peID(ev.TimeDateStamp, ev.ImageSize, ev.Checksum)
		}
	}
	if m.phase == phaseReplaying {
		// A file: its identity records were collected by the first
		// pass.
		if id, ok := m.take(ev.ImageBase, ts); ok {
			m.merge(&pm.id, id)
		}
		m.takeOwn(k, pm)
		m.flushPending()
		if !known {
			m.known[k] = struct{}{}
		}
		return
	}
	// Identities logged before their image (merged traces).
	n := 0
	for _, id := range m.before {
		if id.own && id.pid == pid && id.base == ev.ImageBase {
			if !pm.chk.agrees(&id) {
				m.t.Add(StatIdentityMismatch, event.CountUnresolved, 1)
				continue
			}
			m.merge(&pm.id, &id)
			continue
		}
		if !id.own && id.base == ev.ImageBase && id.ts == ts {
			m.merge(&pm.id, &id)
			continue
		}
		m.before[n] = id
		n++
	}
	m.before = m.before[:n]
	if !known {
		m.known[k] = struct{}{}
	}
}

// conflict counts two identity records of one image that disagree. A
// file's first pass counts nothing (its counters would be counted again
// by the second): its conflicts, found while it collects and sorts the
// identities, are kept apart and counted when the second pass starts.
func (m *Modules) conflict() {
	if m.phase == phaseCollecting {
		m.conflicts++
		return
	}
	m.t.Add(StatIdentityConflict, event.CountInfo, 1)
}

// Identity takes an identity record of a live session (logged at raw
// time ts): to the held image when it is its own, else kept for an image
// at the same timestamp.
func (m *Modules) Identity(ts int64, id *Identity) {
	id.ts = ts
	pm := &m.pend
	if id.own {
		// By process and base, checked against the image.
		if pm.has && pm.f.Pid == id.pid && pm.f.Handle == id.base {
			if !pm.chk.agrees(id) {
				m.t.Add(StatIdentityMismatch, event.CountUnresolved, 1)
				return
			}
			m.merge(&pm.id, id)
			return
		}
	} else if pm.has && pm.ts == id.ts && pm.f.Handle == id.base {
		m.merge(&pm.id, id)
		return
	}
	for i := range m.before {
		if m.before[i].base == id.base && m.before[i].ts == id.ts && m.before[i].own == id.own && m.before[i].pid == id.pid {
			m.merge(&m.before[i], id)
			return
		}
	}
	if len(m.before) >= maxBefore {
		m.t.Add(StatIdentityNoImage, event.CountUnresolved, 1)
		return
	}
	m.before = append(m.before, *id)
}

// maxBefore bounds the identities waiting for their image.
const maxBefore = 64

// module completes a module fact with its identity and queues it.
func (m *Modules) module(f *event.Fact, id *Identity) {
	if f.Detail == "" && id.tds != 0 {
		f.Detail = m.peID(id.tds, id.size, id.checksum)
	}
	if id.hasPDB && id.pdbID != "" {
		f.Image = id.pdbID
		m.t.Add(StatModulesPDB, event.CountInfo, 1)
	} else {
		m.t.Add(StatModulesNoPDB, event.CountInfo, 1)
	}
	m.t.Add(StatModules, event.CountInfo, 1)
	m.out = append(m.out, *f)
}

// End makes the held image's fact and counts the identities no image
// took, at the end of the trace.
func (m *Modules) End() {
	m.Settle(0, true)
	m.endCollected()
}
