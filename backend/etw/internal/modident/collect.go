package modident

import (
	"cmp"
	"slices"

	"github.com/iotrace/iotrace/event"
)

// collectedID is what a file's identity records say about one image (at
// id.base, with the timestamp, raw, its image event and identity records
// share: id.ts).
type collectedID struct {
	id    Identity
	n     uint64 // records
	taken bool   // an image event took it
}

// collectedIDs holds the identities a file's first pass collects: in
// chunks (never copied) as they come, then, once sorted, their keys in
// order (one per image).
type collectedIDs struct {
	chunks [][]collectedID // chunk k holds up to idChunk0<<min(k, 4)
	keys   []idKey
}

// idChunk0 is the size of the first chunk of collected identities.
const idChunk0 = 256

// idKey is the sort key of a collected identity: its image's time and
// base, then where it is (chunk, offset: the order it came in).
type idKey struct {
	ts         int64
	base       uint64
	chunk, off uint32
}

func (c *collectedIDs) at(k *idKey) *collectedID { return &c.chunks[k.chunk][k.off] }

// ownCollected is an iotrace identity a file's first pass collected.
type ownCollected struct {
	id       Identity
	n        uint64 // records
	used     bool   // an image took it
	mismatch bool   // an image at its process and base disagreed with it
}

// maxOwnPerBase bounds the distinct iotrace identities kept for one
// process and base (a process that loads many images in turn at one
// base); beyond it they are counted as without their image.
const maxOwnPerBase = 16

// BeginCollect starts a file's first pass: identities are collected
// (Collect), in any order.
func (m *Modules) BeginCollect() { m.phase = phaseCollecting }

// Collect keeps an identity record (logged at raw time ts) of a file's
// first pass, in any order: in the second, the image event at the same
// timestamp takes it, or, for an iotrace identity, the image events of
// its process and base that agree with it. The records of one image
// come one after the other: merged into the last one kept when they are
// its.
func (m *Modules) Collect(ts int64, id *Identity) {
	if id.own {
		m.collectOwn(id)
		return
	}
	id.ts = ts
	c := &m.ids
	n := len(c.chunks)
	if n > 0 {
		last := c.chunks[n-1]
		if l := &last[len(last)-1]; l.id.ts == ts && l.id.base == id.base {
			l.n++
			m.merge(&l.id, id)
			return
		}
	}
	if n == 0 || len(c.chunks[n-1]) == cap(c.chunks[n-1]) {
		c.chunks = append(c.chunks, make([]collectedID, 0, idChunk0<<min(n, 4)))
		n++
	}
	c.chunks[n-1] = append(c.chunks[n-1], collectedID{n: 1})
	last := c.chunks[n-1]
	m.merge(&last[len(last)-1].id, id)
}

// collectOwn keeps an iotrace identity of a file's first pass.
func (m *Modules) collectOwn(id *Identity) {
	if m.own == nil {
		m.own = make(map[key][]ownCollected, 256)
	}
	k := key{pid: id.pid, base: id.base}
	list := m.own[k]
	for i := range list {
		c := &list[i].id
		if c.tds == id.tds && c.size == id.size && c.checksum == id.checksum && c.name == id.name && c.hasPDB == id.hasPDB && c.guid == id.guid && c.age == id.age && c.pdbID == id.pdbID {
			list[i].n++
			return
		}
	}
	if len(list) >= maxOwnPerBase {
		m.ownDropped++
		return
	}
	m.own[k] = append(list, ownCollected{id: *id, n: 1})
}

// EndCollect ends a file's first pass: the collected identities are
// sorted for the second pass's images to take, and the conflicts among
// them counted (the tally must count again). images is the number of
// Image events of the first pass.
func (m *Modules) EndCollect(images int) {
	m.sort()
	m.phase = phaseReplaying
	if m.conflicts != 0 {
		m.t.Add(StatIdentityConflict, event.CountInfo, m.conflicts)
	}
	if len(m.known) == 0 {
		// Sized for the modules the second pass will see (rundowns at
		// the end of modules already known are counted too).
		m.known = make(map[key]struct{}, min(images, 1<<16))
	}
}

// sort orders the identities the first pass collected by timestamp and
// base, merging those of one image in the order they came (as Collect
// would have, had they come one after the other). Its conflicts are
// counted as Collect's.
func (m *Modules) sort() {
	c := &m.ids
	if c.keys != nil {
		return
	}
	total := 0
	for _, chunk := range c.chunks {
		total += len(chunk)
	}
	keys := make([]idKey, 0, total)
	for k, chunk := range c.chunks {
		for i := range chunk {
			keys = append(keys, idKey{ts: chunk[i].id.ts, base: chunk[i].id.base, chunk: uint32(k), off: uint32(i)})
		}
	}
	cmpKey := func(a, b idKey) int {
		if a.ts != b.ts {
			return cmp.Compare(a.ts, b.ts)
		}
		if a.base != b.base {
			return cmp.Compare(a.base, b.base)
		}
		if a.chunk != b.chunk {
			return cmp.Compare(a.chunk, b.chunk)
		}
		return cmp.Compare(a.off, b.off)
	}
	if !slices.IsSortedFunc(keys, cmpKey) {
		slices.SortFunc(keys, cmpKey)
	}
	n := 0
	for _, k := range keys {
		if n > 0 && keys[n-1].ts == k.ts && keys[n-1].base == k.base {
			first, next := c.at(&keys[n-1]), c.at(&k)
			first.n += next.n
			m.merge(&first.id, &next.id)
			continue
		}
		keys[n] = k
		n++
	}
	c.keys = keys[:n]
}

// take returns the identity collected for an image event (second pass
// of a file), once.
func (m *Modules) take(base uint64, ts int64) (*Identity, bool) {
	keys := m.ids.keys
	lo, hi := 0, len(keys) // lo ends at the first at or after (ts, base)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if k := &keys[mid]; k.ts < ts || k.ts == ts && k.base < base {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(keys) || keys[lo].ts != ts || keys[lo].base != base {
		return nil, false
	}
	c := m.ids.at(&keys[lo])
	if c.taken {
		return nil, false
	}
	c.taken = true
	return &c.id, true
}

// takeOwn gives the image event held in pm (process and base k) the
// iotrace identities collected for k that agree with it (second pass of
// a file); those that disagree are marked, counted at the end unless
// another image takes them.
func (m *Modules) takeOwn(k key, pm *pending) {
	list := m.own[k]
	for i := range list {
		c := &list[i]
		if !pm.chk.agrees(&c.id) {
			c.mismatch = true
			continue
		}
		c.used = true
		id := c.id
		m.merge(&pm.id, &id)
	}
}

// endCollected counts the collected identities no image took.
func (m *Modules) endCollected() {
	m.sort() // done by EndCollect: the second pass took them
	for _, k := range m.ids.keys {
		if c := m.ids.at(&k); !c.taken {
			m.t.Add(StatIdentityNoImage, event.CountUnresolved, c.n)
		}
	}
	for _, list := range m.own {
		for i := range list {
			switch c := &list[i]; {
			case c.used:
			case c.mismatch:
				m.t.Add(StatIdentityMismatch, event.CountUnresolved, c.n)
			default:
				m.t.Add(StatIdentityNoImage, event.CountUnresolved, c.n)
			}
		}
	}
	if m.ownDropped > 0 {
		m.t.Add(StatIdentityNoImage, event.CountUnresolved, m.ownDropped)
	}
	m.ids, m.own, m.ownDropped = collectedIDs{}, nil, 0
}
