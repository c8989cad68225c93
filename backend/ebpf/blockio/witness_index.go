package blockio

// sectorIndex finds the witness's completions of a disk, direction and
// sector without scanning all it keeps (a scan of DefaultWitnessKeep
// records took about a millisecond per bio looked up, BenchmarkWitnessFind).
//
// Each completion is filed under one key: its disk, its direction, a
// level by its length and the bucket of its last sector, buckets of a
// level being as long as the longest completion it files (16 KiB at level
// 0, eight times that at each next). A completion covering a sector thus
// ends in that sector's bucket of its level or the next one: a lookup
// walks two chains per level. An empty completion (a flush) is filed at
// level 0 under its sector's bucket; one longer than the last level's
// buckets (a huge discard) is filed as wide, and every lookup walks the
// wide ones too. Keys hash into a table of at least as many chains as
// the log has slots (doubled, and every slot refiled, as the log grows);
// a chain is doubly linked through the slots, so the log's overwriting of
// a slot unlinks it at once. The index holds three int32 per slot,
// whatever the keys.
type sectorIndex struct {
	heads      []int32 // first slot of each chain, -1 for none; the last chain is the wide one
	next, prev []int32 // by slot; -1 ends a chain
}

const (
	indexShift0    = 5 // level 0's buckets: 32 sectors
	indexLevelStep = 3 // each level's buckets 8 times the last's
	indexLevels    = 5 // the last: 2^17 sectors (64 MiB)
	noSlot         = -1
)

// indexChains0 is the table's first size in chains (a power of two).
const indexChains0 = 256

func newSectorIndex() sectorIndex {
	return sectorIndex{heads: emptyChains(indexChains0)}
}

// emptyChains returns a table of n chains and the wide one, all empty.
func emptyChains(n int) []int32 {
	heads := make([]int32, n+1)
	for i := range heads {
		heads[i] = noSlot
	}
	return heads
}

// grow makes room for the ring's last slot, new and not filed yet; when
// the ring outgrows the table, the table doubles and the other slots are
// filed anew.
func (x *sectorIndex) grow(ring []witnessRec) {
	x.next = append(x.next, noSlot)
	x.prev = append(x.prev, noSlot)
	if n := len(x.heads) - 1; len(ring) > n {
		x.heads = emptyChains(2 * n)
		for i := range len(ring) - 1 {
			x.add(int32(i), &ring[i])
		}
	}
}

// chain returns the chain of a key.
func (x *sectorIndex) chain(dev uint32, op byte, level int, bucket uint64) int {
	h := (bucket ^ uint64(dev)<<32 ^ uint64(op)<<56 ^ uint64(level)<<48) * 0x9e3779b97f4a7c15
	return int(h>>32) & (len(x.heads) - 2)
}

func levelShift(level int) uint { return uint(indexShift0 + indexLevelStep*level) }

// chainOf returns the chain r is filed in.
func (x *sectorIndex) chainOf(r *witnessRec) int {
	if r.nr == 0 {
		return x.chain(r.dev, r.op, 0, r.sector>>indexShift0)
	}
	last := r.sector + uint64(r.nr) - 1
	for level := range indexLevels {
		if last >= r.sector && uint64(r.nr) <= 1<<levelShift(level) {
			return x.chain(r.dev, r.op, level, last>>levelShift(level))
		}
	}
	return len(x.heads) - 1 // wide (or past the last sector: damage)
}

// add files the completion r, in slot.
func (x *sectorIndex) add(slot int32, r *witnessRec) {
	c := x.chainOf(r)
	x.prev[slot], x.next[slot] = noSlot, x.heads[c]
	if h := x.heads[c]; h != noSlot {
		x.prev[h] = slot
	}
	x.heads[c] = slot
}

// remove unfiles the completion r, in slot.
func (x *sectorIndex) remove(slot int32, r *witnessRec) {
	p, n := x.prev[slot], x.next[slot]
	if p == noSlot {
		x.heads[x.chainOf(r)] = n
	} else {
		x.next[p] = n
	}
	if n != noSlot {
		x.prev[n] = p
	}
}

// each calls fn with every slot that may hold a completion of dev and op
// covering sector (and others: fn checks).
func (x *sectorIndex) each(dev uint32, op byte, sector uint64, fn func(slot int32)) {
	for level := range indexLevels {
		b := sector >> levelShift(level)
		x.walk(x.chain(dev, op, level, b), fn)
		if b+1 > b {
			x.walk(x.chain(dev, op, level, b+1), fn)
		}
	}
	x.walk(len(x.heads)-1, fn)
}

func (x *sectorIndex) walk(chain int, fn func(slot int32)) {
	for s := x.heads[chain]; s != noSlot; s = x.next[s] {
		fn(s)
	}
}
