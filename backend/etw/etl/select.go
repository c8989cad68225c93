package etl

import (
	"slices"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// Selection is a fixed choice of records that a reader's later passes
// want: the records keep accepts. Reader.Compact tells a Reader about it
// up front, so that the buffers its passes load into the cache are kept
// compacted to those records; Reader.RecordsSelected then serves a pass
// that asks with the same Selection from the compacted buffers, and
// reports the records left out by their header and count instead.
//
// keep must not depend on the order of the records, on anything but the
// record it is given, or on state it changes: it sees every record once,
// in whichever pass loads the record's buffer. Records are matched to a
// Selection by identity (the pointer), so build one Selection per rule
// and reuse it. A Selection is immutable and safe for concurrent use.
type Selection struct {
	keep func(*record.Record) bool
}

// NewSelection returns the selection of the records keep accepts.
func NewSelection(keep func(*record.Record) bool) *Selection {
	return &Selection{keep: keep}
}

// dropKey identifies the records a compacted buffer leaves out: the
// header fields a reader of the selection gets back for them (see
// Reader.RecordsSelected).
type dropKey struct {
	provider record.GUID
	id       uint16
	version  uint16
	kind     record.Kind
	ht       uint8
	group    uint8
	opcode   uint8
	ptr      uint8
}

func dropKeyOf(r *record.Record) dropKey {
	return dropKey{provider: r.Provider, id: r.ID, version: r.Version, kind: r.Kind, ht: r.HeaderType,
		group: r.Group, opcode: r.Opcode, ptr: uint8(r.PointerSize)}
}

// is reports whether k is the key of r.
func (k *dropKey) is(r *record.Record) bool {
	return k.id == r.ID && k.opcode == r.Opcode && k.version == r.Version && k.provider == r.Provider &&
		k.kind == r.Kind && k.ht == r.HeaderType && k.group == r.Group && int(k.ptr) == r.PointerSize
}

// record returns a record with the fields of k set.
func (k *dropKey) record() record.Record {
	return record.Record{Kind: k.kind, HeaderType: k.ht, Provider: k.provider, Group: k.group,
		Opcode: k.opcode, Version: k.version, ID: k.id, PointerSize: int(k.ptr), FileOffset: -1}
}

type dropCount struct {
	k dropKey
	n uint64
}

type skipCount struct {
	ht uint8
	n  uint64
}

// compacted describes a buffer kept in the cache compacted to the records
// of a selection: its data holds the buffer header and those records, one
// after the other (8-byte aligned, as in a buffer), always including the
// buffer's last record, so that a pass over the compacted buffer leaves it
// at the same point of the merge as a pass over the whole buffer.
type compacted struct {
	sel *Selection
	// pos is the position in the whole buffer of each record kept.
	pos []uint32
	// drops counts the records left out, by header.
	drops []dropCount
	// skipped counts the records of rare header types (resSkip).
	skipped []skipCount
	// size is the buffer's decompressed size (its data's length whole).
	size int
	// fillerBytes is the filler that ended the buffer (filler is set).
	fillerBytes int
	filler      bool
	// first is the timestamp of the buffer's first record (hasFirst:
	// it has one), which the records kept may leave out.
	first    int64
	hasFirst bool
}

// metaSize is what c costs in memory besides its data, charged to the
// cache's budget.
func (c *compacted) metaSize() int64 {
	return 128 + 4*int64(cap(c.pos)) + 48*int64(cap(c.drops)) + 16*int64(cap(c.skipped))
}

// compactor builds the compacted form of the buffer a stream is walking.
// Its memory is reused from buffer to buffer; what goes into the cache is
// copied out.
type compactor struct {
	sel   *Selection
	buf   []byte
	pos   []uint32
	drops []dropCount
	skip  []skipCount
	// last is the position and size of the last record walked, when it
	// was left out: it goes in after all if it is the buffer's last.
	lastPos, lastSize, lastDrop int
	lastOut                     bool
	// abort is set when the buffer cannot be compacted: it then goes into
	// the cache whole.
	abort bool
	// first is the timestamp of the buffer's first record, hasFirst set
	// once there is one.
	first    int64
	hasFirst bool
}

func (c *compactor) start(sel *Selection, data []byte) {
	c.sel = sel
	if n := cap(data) + 8; cap(c.buf) < n {
		// Room for the whole buffer, aligned (a compacted buffer is no
		// longer), and for the buffers after it (data's capacity is
		// the file's largest buffer, Reader.grow): allocated once.
		c.buf = make([]byte, 0, n)
	}
	c.buf = append(c.buf[:0], data[:BufferHeaderSize]...)
	c.pos = c.pos[:0]
	c.drops = c.drops[:0]
	c.skip = c.skip[:0]
	c.lastOut = false
	c.lastDrop = 0
	c.abort = false
	c.hasFirst = false
}

// record takes the record rec parsed from data[pos:pos+size].
func (c *compactor) record(rec *record.Record, data []byte, pos, size int) {
	if !c.hasFirst {
		c.first, c.hasFirst = rec.Timestamp, true
	}
	c.lastOut = false
	if c.abort {
		return
	}
	if rec.Kind == record.KindMessage {
		// A message record may take its time from the record before
		// it, which a compacted buffer may not hold.
		c.abort = true
		return
	}
	if c.sel.keep(rec) {
		c.add(data, pos, size)
		return
	}
	// Records of one kind come in runs: try the last kind first.
	i := c.lastDrop
	if i >= len(c.drops) || !c.drops[i].k.is(rec) {
		for i = 0; i < len(c.drops); i++ {
			if c.drops[i].k.is(rec) {
				break
			}
		}
		if i == len(c.drops) {
			c.drops = append(c.drops, dropCount{k: dropKeyOf(rec)})
		}
	}
	c.drops[i].n++
	c.lastPos, c.lastSize, c.lastDrop, c.lastOut = pos, size, i, true
}

// add appends the record at data[pos:pos+size], padded to 8 bytes.
func (c *compactor) add(data []byte, pos, size int) {
	l, n := len(c.buf), align8(size)
	c.buf = slices.Grow(c.buf, n)[:l+n]
	copy(c.buf[l:], data[pos:pos+size])
	clear(c.buf[l+size:])
	c.pos = append(c.pos, uint32(pos))
}

// skipped counts a record of a rare header type.
func (c *compactor) skipped(ht uint8) {
	c.lastOut = false
	for i := range c.skip {
		if c.skip[i].ht == ht {
			c.skip[i].n++
			return
		}
	}
	c.skip = append(c.skip, skipCount{ht: ht, n: 1})
}

// finish returns the compacted buffer, once the walk of data has reached
// its end (filler: the filler's size, or -1), or nil when it was aborted.
// The result's slices are the compactor's: copy them.
func (c *compactor) finish(data []byte, filler int) (buf []byte, meta *compacted) {
	if c.abort {
		return nil, nil
	}
	if c.lastOut {
		// The buffer's last record goes in, so that the stream leaves
		// the buffer at the same point of the merge.
		c.drops[c.lastDrop].n--
		c.add(data, c.lastPos, c.lastSize)
	}
	m := &compacted{sel: c.sel, pos: c.pos, skipped: c.skip, size: len(data), first: c.first, hasFirst: c.hasFirst}
	for _, d := range c.drops {
		if d.n > 0 {
			m.drops = append(m.drops, d)
		}
	}
	if filler >= 0 {
		m.filler, m.fillerBytes = true, filler
	}
	return c.buf, m
}

// clone returns a copy of m whose slices are its own, exactly sized.
func (m *compacted) clone() *compacted {
	c := *m
	c.pos = append([]uint32(nil), m.pos...)
	c.drops = append([]dropCount(nil), m.drops...)
	c.skipped = append([]skipCount(nil), m.skipped...)
	return &c
}
