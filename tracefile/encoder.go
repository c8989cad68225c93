package tracefile

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
)

// chunkEnc builds one records chunk: a string table, the facts (each with
// the position of the event it precedes) and the events. Everything is
// reset when the chunk is written, so each chunk decodes on its own.
type chunkEnc struct {
	strs   []byte // string table entries
	nstrs  uint32
	strIdx map[string]uint32

	facts        []byte
	nfacts       int
	lastFactPos  int
	prevFactTime int64

	events  []byte
	nevents int
	deltaBases

	tmpls   []template
	tmplIdx map[template]uint32
	tcache  [1 << tcacheBits]tcacheEntry
	thrs    []threadRef
	thrIdx  map[threadRef]uint32
	hcache  [256]uint32 // thread index + 1, by hash

	owned      map[string]string // strings kept, across chunks
	ownedBytes int               // their bytes
}

// tcacheBits sizes the direct-mapped cache in front of the template map.
const tcacheBits = 10

// tcacheEntry caches a template by its fields packed in k, its mask and
// its native name.
type tcacheEntry struct {
	k, mask uint64
	native  string
	idx     uint32 // template index + 1; 0 is empty
}

func newChunkEnc() *chunkEnc {
	return &chunkEnc{
		strIdx:  make(map[string]uint32),
		tmplIdx: make(map[template]uint32),
		thrIdx:  make(map[threadRef]uint32),
		owned:   make(map[string]string),
	}
}

func (c *chunkEnc) reset() {
	c.strs = c.strs[:0]
	c.nstrs = 0
	clear(c.strIdx)
	c.facts = c.facts[:0]
	c.nfacts, c.lastFactPos, c.prevFactTime = 0, 0, 0
	c.events = c.events[:0]
	c.nevents = 0
	c.deltaBases = deltaBases{}
	c.tmpls = c.tmpls[:0]
	clear(c.tmplIdx)
	clear(c.tcache[:])
	c.thrs = c.thrs[:0]
	clear(c.thrIdx)
	c.hcache = [256]uint32{}
}

// size is the encoded size of the chunk so far.
func (c *chunkEnc) size() int { return len(c.strs) + len(c.facts) + len(c.events) }

func (c *chunkEnc) empty() bool { return c.nevents == 0 && c.nfacts == 0 }

// own returns a copy of s that the encoder may keep (the caller's string
// may live in a buffer it reuses), allocated once across chunks.
func (c *chunkEnc) own(s string) string {
	if o, ok := c.owned[s]; ok {
		return o
	}
	if len(c.owned) >= maxOwned || c.ownedBytes+len(s) > maxOwnedBytes {
		// A new map: clear would keep the old one's buckets.
		c.owned, c.ownedBytes = make(map[string]string), 0
	}
	o := strings.Clone(s)
	c.owned[o] = o
	c.ownedBytes += len(o)
	return o
}

// maxOwned and maxOwnedBytes bound the encoder's table of kept strings,
// by count and by their bytes (65,536 paths of PATH_MAX would be 256 MiB).
const (
	maxOwned      = 1 << 16
	maxOwnedBytes = 4 << 20
)

// appendChunk appends a chunk of type typ whose payload is produced by
// payload, and fills in its header.
func appendChunk(out []byte, typ byte, payload func([]byte) []byte) []byte {
	start := len(out)
	out = append(out, chunkSync...)
	out = append(out, typ, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	out = payload(out)
	h := out[start : start+chunkHeaderSize]
	binary.LittleEndian.PutUint32(h[8:], uint32(len(out)-start-chunkHeaderSize))
	crc := crc32.Update(0, castagnoli, h[4:12])
	crc = crc32.Update(crc, castagnoli, out[start+chunkHeaderSize:])
	binary.LittleEndian.PutUint32(h[12:], crc)
	return out
}
