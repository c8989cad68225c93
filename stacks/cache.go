package stacks

import (
	"math"

	"github.com/iotrace/iotrace/event"
)

// The frame cache. A stack is symbolized once per process that uses it
// and kept while the facts it was named from hold: a module fact changes
// only the frames of its process in its address range, a kernel symbol
// or kernel module fact only the frames looked up among the kernel's.
// Each process (and the kernel, as the process {0, 0}) has a log of the
// address ranges its facts changed; a cached stack notes how far it had
// read both logs and the address ranges its frames were looked up in,
// and is rebuilt only when a range logged since overlaps them. A fact
// that changes nothing (an unmapping of an address nothing mapped) logs
// nothing. The cache holds at most maxCacheBytes of frames (with their
// renderings); past that, entries are dropped at random.

// maxCacheBytes bounds the frame cache.
const maxCacheBytes = 64 << 20

// Approximate sizes for the cache's accounting.
const (
	frameBytes   = 96 // a Frame
	stringHeader = 16
	entryBytes   = 128 // a cache entry and its map slot
)

type cacheKey struct {
	stack uint64
	proc  event.ProcessKey
}

// addrRange is an inclusive range of addresses; empty when lo > hi.
type addrRange struct{ lo, hi uint64 }

var emptyRange = addrRange{lo: math.MaxUint64}

func (r *addrRange) add(a uint64) {
	r.lo, r.hi = min(r.lo, a), max(r.hi, a)
}

func (r addrRange) overlaps(o addrRange) bool { return r.lo <= o.hi && o.lo <= r.hi }

// cached is a symbolized stack and what it depends on.
type cached struct {
	st *Stack
	// user holds the addresses looked up in the process's modules,
	// kernel those looked up in the kernel's (kernel frames, and user
	// frames no module of the process held).
	user, kernel addrRange
	// userSeen and kernelSeen are how many entries of the process's and
	// the kernel's change logs the entry has been checked against.
	userSeen, kernelSeen int
	bytes                int
}

// changed logs a change of process p's mappings (or of the kernel's
// symbols, p {0, 0}) over r.
func (t *Table) changed(p event.ProcessKey, r addrRange) {
	t.changes[p] = append(t.changes[p], r)
}

// fresh reports whether c still holds for process p, and notes the
// changes it was checked against.
func (t *Table) fresh(c *cached, p event.ProcessKey) bool {
	kern := event.ProcessKey{}
	for _, part := range []struct {
		log  []addrRange
		seen *int
		r    addrRange
	}{{t.changes[p], &c.userSeen, c.user}, {t.changes[kern], &c.kernelSeen, c.kernel}} {
		for _, ch := range part.log[*part.seen:] {
			if ch.overlaps(part.r) {
				return false
			}
		}
		*part.seen = len(part.log)
	}
	return true
}

// store caches c under k, dropping entries at random while the cache is
// over its bound.
func (t *Table) store(k cacheKey, c *cached) {
	if old, ok := t.cache[k]; ok {
		t.cacheBytes -= old.bytes
	}
	c.bytes = entryBytes + frameBytes*len(c.st.Frames)
	t.cache[k] = c
	t.cacheBytes += c.bytes
	t.trim()
}

// trim drops cache entries while the cache is over its bound.
func (t *Table) trim() {
	if t.cacheBytes <= maxCacheBytes {
		return
	}
	for k, c := range t.cache {
		delete(t.cache, k)
		t.cacheBytes -= c.bytes
		if t.cacheBytes <= maxCacheBytes*3/4 {
			return
		}
	}
}
