package report

// recentBlocks remembers the last block I/Os with a cause link, so that a
// slow operation delivered after the block I/Os it caused still finds them.
//
// The blocks sit in a ring; an open-addressing index (linear probing,
// deletion by backward shift, so it never fills with tombstones) maps a
// cause to its newest block, and each block links to the previous block of
// the same cause. Adding a block costs two probes and never allocates.
type recentBlocks struct {
	ring   []blockRef
	causes []uint64
	// prev holds, per ring entry, the sequence number + 1 of the previous
	// block of the same cause (0: none). A link is stale once that block
	// left the ring.
	prev  []uint64
	rmask uint64 // len(ring) - 1
	added uint64 // blocks added; block s sits at ring[s&rmask]
	// heads is the index: the sequence number + 1 of the newest block of
	// a cause, 0 for an empty slot. Twice the ring's size: at most half
	// full.
	heads   []uint64
	hmask   uint64
	hshift  uint
	scratch []uint64
}

// newRecentBlocks returns a ring of n blocks; n must be a power of two.
func newRecentBlocks(n int) recentBlocks {
	shift := uint(64)
	for 1<<(64-shift) < 2*n {
		shift--
	}
	return recentBlocks{
		ring:   make([]blockRef, n),
		causes: make([]uint64, n),
		prev:   make([]uint64, n),
		rmask:  uint64(n - 1),
		heads:  make([]uint64, 2*n),
		hmask:  uint64(2*n - 1),
		hshift: shift,
	}
}

func (rb *recentBlocks) home(cause uint64) uint64 {
	return (cause * 0x9E3779B97F4A7C15) >> rb.hshift
}

// find returns the index slot of cause, or the empty slot where it would
// go.
func (rb *recentBlocks) find(cause uint64) (slot uint64, found bool) {
	for i := rb.home(cause); ; i = (i + 1) & rb.hmask {
		v := rb.heads[i]
		if v == 0 {
			return i, false
		}
		if rb.causes[(v-1)&rb.rmask] == cause {
			return i, true
		}
	}
}

// remove empties index slot i, shifting back the entries after it that
// probed past it.
func (rb *recentBlocks) remove(i uint64) {
	for j := (i + 1) & rb.hmask; ; j = (j + 1) & rb.hmask {
		v := rb.heads[j]
		if v == 0 {
			rb.heads[i] = 0
			return
		}
		k := rb.home(rb.causes[(v-1)&rb.rmask])
		// The entry at j may move to i unless its home lies cyclically
		// in (i, j].
		if (i <= j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			rb.heads[i] = v
			i = j
		}
	}
}

func (rb *recentBlocks) add(cause uint64, b blockRef) {
	n := uint64(len(rb.ring))
	i := rb.added & rb.rmask
	if rb.added >= n {
		// The oldest block leaves the ring: when it is the newest of its
		// cause, the cause leaves the index.
		if slot, ok := rb.find(rb.causes[i]); ok && rb.heads[slot] == rb.added-n+1 {
			rb.remove(slot)
		}
	}
	rb.ring[i] = b
	rb.causes[i] = cause
	slot, ok := rb.find(cause)
	rb.prev[i] = 0
	if ok {
		rb.prev[i] = rb.heads[slot]
	}
	rb.heads[slot] = rb.added + 1
	rb.added++
}

// take appends the remembered block I/Os caused by id to dst, oldest
// first, up to maxChain in all.
func (rb *recentBlocks) take(id uint64, dst []blockRef) []blockRef {
	slot, ok := rb.find(id)
	if !ok || len(dst) >= maxChain {
		return dst
	}
	n := uint64(len(rb.ring))
	lo := uint64(0)
	if rb.added > n {
		lo = rb.added - n
	}
	seqs := rb.scratch[:0]
	for v := rb.heads[slot]; v != 0 && v-1 >= lo; v = rb.prev[(v-1)&rb.rmask] {
		seqs = append(seqs, v-1)
	}
	rb.scratch = seqs
	for k := len(seqs) - 1; k >= 0 && len(dst) < maxChain; k-- {
		dst = append(dst, rb.ring[seqs[k]&rb.rmask])
	}
	return dst
}
