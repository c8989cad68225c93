package report

import (
	"cmp"
	"math/bits"
	"unsafe"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/hist"
)

// opCounts are the totals of one op.
type opCounts struct {
	count, bytes, failed uint64
	time                 uint64 // sum of durations, ns
}

// cacheCounts describe how reads were served. The file-layer ops they
// are set against (for disk operations per file-system operation) are the
// owner's count of file events, passed to cacheOut.
type cacheCounts struct {
	reads      uint64 // completed, successful read ops
	diskReads  uint64 // of which caused block I/O
	bytesCache uint64 // read from cache by reads flagged as hits, or that caused less I/O than they read
	bytesDisk  uint64
	causedIOs  uint64 // block I/Os caused by file-layer ops
	causedB    uint64
	// waitedReads read data whose I/O was already in flight (FlagWaitedIO).
	waitedReads, bytesWaited uint64
	// bytesAhead were brought in by the reader's own read-ahead (page-cache
	// provenance); provReads are the reads classified by provenance, and
	// bytesUnknown what of them could not be classified.
	bytesAhead, provReads, bytesUnknown uint64
	// unflagged reads caused no block I/O and carry no flag: from the
	// cache when the source flags no hits, otherwise not on a block
	// device or not linked (see cacheOut).
	unflagged, bytesUnflagged uint64
}

func (c *cacheCounts) merge(o *cacheCounts) {
	c.reads += o.reads
	c.diskReads += o.diskReads
	c.bytesCache += o.bytesCache
	c.bytesDisk += o.bytesDisk
	c.waitedReads += o.waitedReads
	c.bytesWaited += o.bytesWaited
	c.bytesAhead += o.bytesAhead
	c.provReads += o.provReads
	c.bytesUnknown += o.bytesUnknown
	c.unflagged += o.unflagged
	c.bytesUnflagged += o.bytesUnflagged
	c.causedIOs += o.causedIOs
	c.causedB += o.causedB
}

// entity aggregates the file-layer activity of one process or one file.
// The fields every file event updates come first, so that an update
// touches few cache lines: the latency sketch's head (its first 64
// bytes), the totals, then one latency counter and the op's own
// counters; the cache counts only for reads and events that caused block
// I/O.
type entity struct {
	lat hist.Sketch
	// opsUsed has bit op set when ops[op] may be non-zero.
	opsUsed uint64
	keep    bool        // marked by prune
	tot     opCounts    // file layer: count, data bytes, failed, time
	c       cacheCounts // for reads and events that caused block I/O
	ops     [event.NumOps]opCounts
	name    string           // file key, or process name
	pk      event.ProcessKey // process entities
	// blockIOs and blockBytes count block events attributed directly: to
	// their submitter (processes) or their path without a cause link
	// (files, e.g. writeback).
	blockIOs, blockBytes uint64
	// errBytes and errTime bound what pruning may have lost of this key
	// before the entry was (re)created.
	errBytes, errTime uint64
}

// reset empties e for reuse, keeping its sketch's blocks. Only the ops
// in opsUsed can be non-zero: the others are not cleared again.
func (e *entity) reset() {
	for u := e.opsUsed; u != 0; u &= u - 1 {
		e.ops[bits.TrailingZeros64(u)%event.NumOps] = opCounts{}
	}
	e.lat.Reset()
	e.name, e.pk, e.opsUsed, e.keep, e.tot, e.c = "", event.ProcessKey{}, 0, false, opCounts{}, cacheCounts{}
	e.blockIOs, e.blockBytes, e.errBytes, e.errTime = 0, 0, 0, 0
}

// merge adds o's totals (not its latencies) to e.
func (e *entity) merge(o *entity) {
	for u := o.opsUsed; u != 0; u &= u - 1 {
		i := bits.TrailingZeros64(u) % event.NumOps
		e.ops[i].count += o.ops[i].count
		e.ops[i].bytes += o.ops[i].bytes
		e.ops[i].failed += o.ops[i].failed
		e.ops[i].time += o.ops[i].time
	}
	e.opsUsed |= o.opsUsed
	e.tot.count += o.tot.count
	e.tot.bytes += o.tot.bytes
	e.tot.failed += o.tot.failed
	e.tot.time += o.tot.time
	e.c.merge(&o.c)
	e.blockIOs += o.blockIOs
	e.blockBytes += o.blockBytes
}

// cacheBits sizes a table's direct-mapped lookup cache: 1<<cacheBits
// slots, enough for the entries of a table at twice its default capacity.
const (
	cacheBits  = 12
	cacheSlots = 1 << cacheBits
)

// reserveLo and reserveHi are the latencies (ns) a new entity's sketch
// has room for from the start: most file operations fall between them.
const (
	reserveLo = 1_000
	reserveHi = 10_000_000
)

type slot[K comparable] struct {
	k K
	e *entity
}

// table is a bounded map of entities (see Options.Capacity). A small
// direct-mapped cache in front of the map serves the keys seen recently
// without hashing them (for strings, it is indexed by the string's data
// pointer: a reader that interns paths hits it every time).
type table[K comparable] struct {
	slots    *[cacheSlots]slot[K]
	slotOf   func(K) uint32
	cmpKey   func(a, b K) int // orders keys, to break ties when pruning
	m        map[K]*entity
	capacity int
	// other is what pruning folded away: totals only, its latency
	// sketch stays empty (merging every pruned entry's sketch cost more
	// than the rest of the pruning, and no output shows it).
	other    entity
	pruned   uint64 // entries pruned
	errBytes uint64 // error bound given to entries created from now on
	errTime  uint64
	free     []*entity // pruned entries, reset, for reuse
	scratch  []kv[K]   // prune's work list, reused
}

// kv is a table entry in prune's work list.
type kv[K comparable] struct {
	k K
	e *entity
}

func newTable[K comparable](capacity int, slotOf func(K) uint32, cmpKey func(a, b K) int) table[K] {
	return table[K]{m: make(map[K]*entity), capacity: capacity, slots: new([cacheSlots]slot[K]), slotOf: slotOf, cmpKey: cmpKey}
}

// stringSlot picks a cache slot by the string's data pointer and length.
func stringSlot(s string) uint32 {
	p := uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) ^ uint64(len(s))<<48
	return uint32((p * 0x9E3779B97F4A7C15) >> (64 - cacheBits))
}

// compareProcess orders process keys by pid, then start time.
func compareProcess(a, b event.ProcessKey) int {
	if c := cmp.Compare(a.Pid, b.Pid); c != 0 {
		return c
	}
	return cmp.Compare(a.Start, b.Start)
}

// processSlot picks a cache slot by pid and start time.
func processSlot(k event.ProcessKey) uint32 {
	return uint32(((uint64(k.Pid) ^ uint64(k.Start)<<20) * 0x9E3779B97F4A7C15) >> (64 - cacheBits))
}

// get returns the entity of k, creating it (and pruning) when needed.
// created reports a new entry, for the caller to name it.
func (t *table[K]) get(k K) (e *entity, created bool) {
	sl := &t.slots[t.slotOf(k)%cacheSlots]
	if sl.e != nil && sl.k == k {
		return sl.e, false
	}
	e = t.m[k]
	if e == nil {
		if len(t.m) >= 2*t.capacity {
			t.prune()
		}
		if n := len(t.free); n > 0 {
			e = t.free[n-1]
			t.free = t.free[:n-1]
		} else {
			e = new(entity)
			e.lat.Reserve(reserveLo, reserveHi)
		}
		e.errBytes, e.errTime = t.errBytes, t.errTime
		t.m[k] = e
		created = true
	}
	*sl = slot[K]{k: k, e: e}
	return e, created
}

// prune keeps the capacity/2 entries with the most bytes and the
// capacity/2 with the most time, folding the rest into other. Ties are
// broken by key, so what is kept does not depend on the map's order.
func (t *table[K]) prune() {
	all := t.scratch[:0]
	for k, e := range t.m {
		all = append(all, kv[K]{k, e})
	}
	t.scratch = all
	half := min(t.capacity/2, len(all))
	// Keep the top half by bytes and the top half by time.
	for _, metric := range [...]func(e *entity) uint64{
		func(e *entity) uint64 { return e.tot.bytes },
		func(e *entity) uint64 { return e.tot.time },
	} {
		selectFirst(all, half, func(a, b *kv[K]) int {
			if c := cmp.Compare(metric(b.e), metric(a.e)); c != 0 {
				return c
			}
			return t.cmpKey(a.k, b.k)
		})
		for _, x := range all[:half] {
			x.e.keep = true
		}
	}
	for _, x := range all {
		if x.e.keep {
			x.e.keep = false
			continue
		}
		t.other.merge(x.e)
		t.errBytes = max(t.errBytes, x.e.tot.bytes+x.e.errBytes)
		t.errTime = max(t.errTime, x.e.tot.time+x.e.errTime)
		delete(t.m, x.k)
		t.pruned++
		x.e.reset()
		t.free = append(t.free, x.e)
	}
	clear(t.slots[:])
}

// selectFirst reorders a so that a[:k] holds its k first elements in the
// order of cmpf, in no particular order among themselves (quickselect:
// linear time on average, where sorting would be n log n).
func selectFirst[T any](a []T, k int, cmpf func(x, y *T) int) {
	lo, hi := 0, len(a)
	if k <= 0 || k >= hi {
		return
	}
	for hi-lo > 16 {
		// Median of three as the pivot; it also bounds both scans.
		m := lo + (hi-lo)/2
		if cmpf(&a[m], &a[lo]) < 0 {
			a[m], a[lo] = a[lo], a[m]
		}
		if cmpf(&a[hi-1], &a[lo]) < 0 {
			a[hi-1], a[lo] = a[lo], a[hi-1]
		}
		if cmpf(&a[hi-1], &a[m]) < 0 {
			a[hi-1], a[m] = a[m], a[hi-1]
		}
		p := a[m]
		i, j := lo, hi-1
		for i <= j {
			for cmpf(&a[i], &p) < 0 {
				i++
			}
			for cmpf(&a[j], &p) > 0 {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		// a[lo:j+1] ≤ p ≤ a[i:hi], and a[j+1:i] equal p.
		switch {
		case k <= j:
			hi = j + 1
		case k >= i:
			lo = i
		default:
			return
		}
	}
	for x := lo + 1; x < hi; x++ {
		for y := x; y > lo && cmpf(&a[y], &a[y-1]) < 0; y-- {
			a[y], a[y-1] = a[y-1], a[y]
		}
	}
}
