package etl

import "sync"

// DefaultCacheBudget is the memory, in bytes, a Reader spends on keeping
// decompressed buffers between passes unless Options say otherwise.
const DefaultCacheBudget = 64 << 20

// slabSize is the unit in which the cache allocates memory: buffers are
// packed into slabs rather than allocated one by one.
const slabSize = 4 << 20

// bufferCache keeps the decompressed data of buffers, by buffer index, so
// that a later pass neither reads nor decompresses them again. It never
// allocates more than its budget: once the budget is spent, further
// buffers are not kept and every pass reads them again. Cached data is
// never modified, so records of one pass may alias it while another pass
// reads it. It is safe for concurrent use.
type bufferCache struct {
	mu        sync.Mutex
	budget    int64
	allocated int64    // bytes of slabs allocated so far
	slab      []byte   // the current slab; its free space is slab[len:cap]
	bufs      [][]byte // by buffer index; nil: not cached
	buffers   int      // buffers cached
	bytes     int64    // bytes of buffer data cached
}

func newBufferCache(budget int64, nbuffers int) *bufferCache {
	return &bufferCache{budget: budget, bufs: make([][]byte, nbuffers)}
}

// get returns the cached data of buffer i, or nil.
func (c *bufferCache) get(i int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bufs[i]
}

// reserve returns n bytes of cache memory to load buffer i into, or nil
// when the buffer is cached already or the budget has no room for it.
// Pass the result to commit or abandon.
func (c *bufferCache) reserve(i, n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bufs[i] != nil {
		return nil
	}
	if cap(c.slab)-len(c.slab) < n {
		size := int64(max(n, slabSize))
		if left := c.budget - c.allocated; size > left {
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

// commit records data, loaded into memory from reserve, as the data of
// buffer i.
func (c *bufferCache) commit(i int, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bufs[i] != nil {
		return // a concurrent pass cached it first
	}
	c.bufs[i] = data
	c.buffers++
	c.bytes += int64(len(data))
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
	// Allocated is the memory allocated for them, at most the budget.
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
	return CacheStats{Buffers: c.buffers, Bytes: c.bytes, Allocated: c.allocated, Budget: c.budget}
}
