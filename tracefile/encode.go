package tracefile

import (
	"encoding/binary"
	"hash/crc32"
	"strings"

	"github.com/iotrace/iotrace/event"
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

	events     []byte
	nevents    int
	prevID     uint64
	prevTime   int64
	prevFO     uint64
	prevKey    uint64
	prevSector uint64
	prevReq    uint64

	tmpls   []template
	tmplIdx map[template]uint32
	tcache  [1 << tcacheBits]tcacheEntry
	thrs    []threadRef
	thrIdx  map[threadRef]uint32
	hcache  [256]uint32 // thread index + 1, by hash

	owned map[string]string // strings kept, across chunks
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
	c.prevID, c.prevTime = 0, 0
	c.prevFO, c.prevKey, c.prevSector, c.prevReq = 0, 0, 0, 0
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

// str returns the index of s in the string table, adding it.
func (c *chunkEnc) str(s string) uint64 {
	if i, ok := c.strIdx[s]; ok {
		return uint64(i)
	}
	i := c.nstrs
	c.nstrs++
	c.strs = appendString(c.strs, s)
	c.strIdx[c.own(s)] = i
	return uint64(i)
}

// own returns a copy of s that the encoder may keep (the caller's string
// may live in a buffer it reuses), allocated once across chunks.
func (c *chunkEnc) own(s string) string {
	if o, ok := c.owned[s]; ok {
		return o
	}
	if len(c.owned) >= maxOwned {
		clear(c.owned)
	}
	o := strings.Clone(s)
	c.owned[o] = o
	return o
}

// maxOwned bounds the encoder's table of kept strings.
const maxOwned = 1 << 16

func (c *chunkEnc) appendTemplate(b []byte, t *template) []byte {
	k := uint64(t.source) | uint64(t.layer)<<8 | uint64(t.op)<<16 | uint64(t.status)<<24 | uint64(t.flags)<<32
	h := ((k ^ t.mask*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9) >> (64 - tcacheBits)
	ce := &c.tcache[h]
	if ce.idx != 0 && ce.k == k && ce.mask == t.mask && ce.native == t.native {
		return appendUvarint(b, uint64(ce.idx-1))
	}
	if i, ok := c.tmplIdx[*t]; ok {
		*ce = tcacheEntry{k: k, mask: t.mask, native: c.tmpls[i].native, idx: i + 1}
		return appendUvarint(b, uint64(i))
	}
	i := uint32(len(c.tmpls))
	t.native = c.own(t.native)
	c.tmpls = append(c.tmpls, *t)
	c.tmplIdx[*t] = i
	*ce = tcacheEntry{k: k, mask: t.mask, native: t.native, idx: i + 1}
	// A new template is defined inline where it is first used.
	b = appendUvarint(b, uint64(i))
	b = append(b, byte(t.source), byte(t.layer), byte(t.op), byte(t.status))
	b = appendUvarint(b, uint64(t.flags))
	b = appendUvarint(b, c.str(t.native))
	return appendUvarint(b, t.mask)
}

func (c *chunkEnc) appendThread(b []byte, e *event.Event) []byte {
	t := threadRef{cpu: e.CPU, pid: e.Pid, tid: e.Tid, procStart: e.ProcStart, comm: e.Comm}
	h := uint8(e.Tid*0x9d ^ e.CPU*0x3b ^ e.Pid*0x1f)
	if i := c.hcache[h]; i != 0 && c.thrs[i-1] == t {
		return appendUvarint(b, uint64(i-1))
	}
	if i, ok := c.thrIdx[t]; ok {
		c.hcache[h] = i + 1
		return appendUvarint(b, uint64(i))
	}
	i := uint32(len(c.thrs))
	t.comm = c.own(t.comm)
	c.thrs = append(c.thrs, t)
	c.thrIdx[t] = i
	c.hcache[h] = i + 1
	b = appendUvarint(b, uint64(i))
	b = appendUvarint(b, uint64(t.cpu))
	b = appendUvarint(b, uint64(t.pid))
	b = appendUvarint(b, uint64(t.tid))
	b = appendVarint(b, t.procStart)
	return appendUvarint(b, c.str(t.comm))
}

// event appends e.
func (c *chunkEnc) event(e *event.Event) {
	m := eventMask(e, c.prevID)
	t := template{source: e.Source, layer: e.Layer, op: e.Op, status: e.Status, flags: e.Flags, native: e.Native, mask: m}
	b := c.appendTemplate(c.events, &t)
	b = c.appendThread(b, e)
	b = appendVarint(b, e.Time-c.prevTime)
	c.prevTime = e.Time
	if m&mID != 0 {
		b = appendVarint(b, int64(e.ID-c.prevID-1))
	}
	c.prevID = e.ID
	if m&(mDuration|mWait|mPath|mPath2|mFD|mFileObject|mFileKey|mInode) != 0 {
		if m&mDuration != 0 {
			b = appendVarint(b, e.Duration)
		}
		if m&mWait != 0 {
			b = appendVarint(b, e.Wait)
		}
		if m&mPath != 0 {
			b = appendUvarint(b, c.str(e.Path))
		}
		if m&mPath2 != 0 {
			b = appendUvarint(b, c.str(e.Path2))
		}
		if m&mFD != 0 {
			b = appendVarint(b, int64(e.FD))
		}
		if m&mFileObject != 0 {
			b = appendVarint(b, int64(e.FileObject-c.prevFO))
			c.prevFO = e.FileObject
		}
		if m&mFileKey != 0 {
			b = appendVarint(b, int64(e.FileKey-c.prevKey))
			c.prevKey = e.FileKey
		}
		if m&mInode != 0 {
			b = appendUvarint(b, e.Inode)
		}
	}
	if m&mOffset != 0 {
		b = appendVarint(b, e.Offset)
	}
	if m&mSize != 0 {
		b = appendUvarint(b, e.Size)
	}
	if m&mBytes != 0 {
		b = appendVarint(b, e.Bytes)
	}
	if m&(mCode|mOpenFlags|mMode|mDisposition|mPriority|mIOFlags|mInfo) != 0 {
		if m&mCode != 0 {
			b = appendUvarint(b, uint64(e.Code))
		}
		if m&mOpenFlags != 0 {
			b = appendUvarint(b, uint64(e.OpenFlags))
		}
		if m&mMode != 0 {
			b = appendUvarint(b, uint64(e.Mode))
		}
		if m&mDisposition != 0 {
			b = append(b, e.Disposition)
		}
		if m&mPriority != 0 {
			b = append(b, e.Priority)
		}
		if m&mIOFlags != 0 {
			b = appendUvarint(b, uint64(e.IOFlags))
		}
		if m&mInfo != 0 {
			b = appendUvarint(b, uint64(e.Info))
		}
	}
	if m&(mDev|mSector|mRequest|mCause|mCausedIOs|mCausedBytes|mNote) != 0 {
		if m&mDev != 0 {
			b = appendUvarint(b, devWord(e.Dev))
			b = appendUvarint(b, uint64(e.Dev.Minor))
		}
		if m&mSector != 0 {
			b = appendVarint(b, int64(e.Sector-c.prevSector))
			c.prevSector = e.Sector
		}
		if m&mRequest != 0 {
			b = appendVarint(b, int64(e.Request-c.prevReq))
			c.prevReq = e.Request
		}
		if m&mCause != 0 {
			b = appendVarint(b, int64(e.ID-e.Cause))
		}
		if m&mCausedIOs != 0 {
			b = appendUvarint(b, uint64(e.CausedIOs))
		}
		if m&mCausedBytes != 0 {
			b = appendUvarint(b, e.CausedBytes)
		}
		if m&mNote != 0 {
			b = appendUvarint(b, c.str(e.Note))
		}
	}
	c.events = b
	c.nevents++
}

// fact appends f, positioned before the next event.
func (c *chunkEnc) fact(f *event.Fact) {
	m := factMask(f)
	b := appendUvarint(c.facts, uint64(c.nevents-c.lastFactPos))
	c.lastFactPos = c.nevents
	b = append(b, byte(f.Kind))
	b = appendUvarint(b, m)
	b = appendVarint(b, f.Time-c.prevFactTime)
	c.prevFactTime = f.Time
	if m&fSpace != 0 {
		b = append(b, byte(f.Space))
	}
	if m&fPid != 0 {
		b = appendUvarint(b, uint64(f.Pid))
	}
	if m&fProcStart != 0 {
		b = appendVarint(b, f.ProcStart)
	}
	if m&fTid != 0 {
		b = appendUvarint(b, uint64(f.Tid))
	}
	if m&fPPid != 0 {
		b = appendUvarint(b, uint64(f.PPid))
	}
	if m&fHandle != 0 {
		b = appendUvarint(b, f.Handle)
	}
	if m&fDev != 0 {
		b = appendUvarint(b, devWord(f.Dev))
		b = appendUvarint(b, uint64(f.Dev.Minor))
	}
	if m&fName != 0 {
		b = appendUvarint(b, c.str(f.Name))
	}
	if m&fImage != 0 {
		b = appendUvarint(b, c.str(f.Image))
	}
	if m&fDetail != 0 {
		b = appendUvarint(b, c.str(f.Detail))
	}
	c.facts = b
	c.nfacts++
}

// appendRecords appends the chunk's payload: the string table, the facts
// and the events sections.
func (c *chunkEnc) appendRecords(out []byte) []byte {
	out = appendUvarint(out, uint64(uvarintLen(uint64(c.nstrs))+len(c.strs)))
	out = appendUvarint(out, uint64(c.nstrs))
	out = append(out, c.strs...)
	out = appendUvarint(out, uint64(uvarintLen(uint64(c.nfacts))+len(c.facts)))
	out = appendUvarint(out, uint64(c.nfacts))
	out = append(out, c.facts...)
	out = appendUvarint(out, uint64(c.nevents))
	return append(out, c.events...)
}

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
