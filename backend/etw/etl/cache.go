package etl

import "sync"

// DefaultCacheBudget is the memory, in bytes, a Reader spends on keeping
// decompressed buffers between passes unless Options say otherwise.
const DefaultCacheBudget = 64 << 20

// slabSize is the largest unit in which the cache allocates memory:
// buffers are packed into slabs rather than allocated one by one. A small
// file gets smaller slabs (an eighth of its decompressed size, at least
// minSlabSize): compacted, its buffers may fill a fraction of it.
const (
	slabSize    = 1 << 20
	minSlabSize = 64 << 10
)

// bufferCache keeps the decompressed data of buffers, by buffer index, so
// that a later pass neither reads nor decompresses them again: whole, or
// compacted to the records of a Selection (see Reader.Compact). It never
// allocates more than its budget: once the budget is spent, further
// buffers are not kept and every pass reads them again. Cached data is
// never modified, so records of one pass may alias it while another pass
// reads it. It is safe for concurrent use.
type bufferCache struct {
	mu        sync.Mutex
	budget    int64
	slabSize  int          // the size of a new slab
	allocated int64        // bytes of slabs allocated so far, plus metadata
	slab      []byte       // the current slab; its free space is slab[len:cap]
	bufs      []cacheEntry // by buffer index; data nil: not cached
	buffers   int          // buffers cached
	bytes     int64        // decompressed bytes of the buffers cached
	stored    int64        // bytes of buffer data held
	compacted int          // buffers held compacted
	// compact is the Selection buffers are compacted to (nil: kept whole).
	compact *Selection
	// ordered is 1 once a pass over every record found each processor's
	// stream in time order, -1 when one was not: compacted buffers serve
	// only the former (leaving records out of a merge of unordered
	// streams could change the order of the rest).
	ordered int8
}

// cacheEntry is one cached buffer.
type cacheEntry struct {
	data []byte
	comp *compacted // nil: data is the whole buffer
}

// newBufferCache returns a cache for nbuffers buffers of total bytes
// (decompressed) in all.
func newBufferCache(budget int64, nbuffers int, total int64) *bufferCache {
	slab := int(min(max(total/8, minSlabSize), slabSize))
	return &bufferCache{budget: budget, slabSize: slab, bufs: make([]cacheEntry, nbuffers)}
}

// get returns the cache entry of buffer i (data nil: not cached).
func (c *bufferCache) get(i int) cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bufs[i]
}

// compaction returns the Selection to compact buffer i to, when it is
// not cached yet and the budget has room left; nil otherwise.
func (c *bufferCache) compaction(i int) *Selection {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.compact == nil || c.bufs[i].data != nil || c.budget-c.allocated+int64(cap(c.slab)-len(c.slab)) < 2*BufferHeaderSize {
		return nil
	}
	return c.compact
}

// usable reports whether e can serve a pass selected with sel.
func (c *bufferCache) usable(e cacheEntry, sel *Selection) bool {
	if e.comp == nil {
		return true
	}
	if sel == nil || e.comp.sel != sel {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ordered > 0
}

// setOrdered records what a pass over every record found.
func (c *bufferCache) setOrdered(ordered bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ordered {
		c.ordered = -1
	} else if c.ordered == 0 {
		c.ordered = 1
	}
}

// alloc returns n bytes of slab memory, or nil when the budget has no
// room for them and spare more bytes besides. Call with c.mu held.
func (c *bufferCache) alloc(n int, spare int64) []byte {
	if cap(c.slab)-len(c.slab) < n {
		size := int64(max(n, c.slabSize))
		if left := c.budget - c.allocated - spare; size > left {
			size = left // the last slab takes what is left of the budget
		}
		if size < int64(n) {
			return nil
		}
		c.slab = make([]byte, 0, size)
		c.allocated += size
	}
	l := len(c.slab)
	c.slab = c.slab[:l+n]
	return c.slab[l : l+n : l+n]
}

// store copies data (whole, or compacted as m says) into the cache as
// buffer i, when it is not cached yet and the budget has room.
func (c *bufferCache) store(i int, data []byte, m *compacted) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bufs[i].data != nil {
		return
	}
	size := len(data)
	if m != nil {
		m = m.clone()
		// The bookkeeping is charged to the budget too.
		meta := m.metaSize()
		if c.budget-c.allocated < meta {
			return
		}
		mem := c.alloc(len(data), meta)
		if mem == nil {
			return
		}
		c.allocated += meta
		copy(mem, data)
		data = mem
		size = m.size
		c.compacted++
	} else {
		mem := c.alloc(len(data), 0)
		if mem == nil {
			return
		}
		copy(mem, data)
		data = mem
	}
	c.bufs[i] = cacheEntry{data: data, comp: m}
	c.buffers++
	c.bytes += int64(size)
	c.stored += int64(len(data))
}

// reserve returns n bytes of cache memory to load buffer i into, or nil
// when the buffer is cached already or the budget has no room for it.
// Pass the result to commit or abandon.
func (c *bufferCache) reserve(i, n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bufs[i].data != nil {
		return nil
	}
	return c.alloc(n, 0)
}

// commit records data, loaded into memory from reserve, as the data of
// buffer i.
func (c *bufferCache) commit(i int, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bufs[i].data != nil {
		return // a concurrent pass cached it first
	}
	c.bufs[i] = cacheEntry{data: data}
	c.buffers++
	c.bytes += int64(len(data))
	c.stored += int64(len(data))
}

// abandon returns memory from reserve that holds no buffer (the buffer
// could not be read): when it is the last reservation, it is reused.
func (c *bufferCache) abandon(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := len(c.slab)
	if n := cap(b); n > 0 && n <= l && &c.slab[l-n] == &b[:1][0] {
		c.slab = c.slab[:l-n]
	}
}

// CacheStats describes a Reader's buffer cache.
type CacheStats struct {
	// Buffers and Bytes are the buffers kept and their decompressed size.
	Buffers int
	Bytes   int64
	// Compacted of them are kept compacted to a Selection (see
	// Reader.Compact); Stored is the bytes of buffer data held, less than
	// Bytes when some are.
	Compacted int
	Stored    int64
	// Allocated is the memory allocated for them (slabs and the
	// compacted buffers' bookkeeping), at most the budget.
	Allocated int64
	// Budget is Options.CacheBudget (0 when the cache is off).
	Budget int64
}

// CacheStats reports what the Reader's buffer cache holds.
func (r *Reader) CacheStats() CacheStats {
	c := r.cache
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Buffers: c.buffers, Bytes: c.bytes, Compacted: c.compacted, Stored: c.stored, Allocated: c.allocated, Budget: c.budget}
}
