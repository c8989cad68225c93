package tracefile

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/iotrace/iotrace/event"
)

// internBits sizes the decoder's string intern table.
const internBits = 14

// interner makes one string per distinct byte sequence, so that a name
// reads as the same string wherever it occurs (consumers may compare by
// pointer) and is copied once, not once per chunk. It is a direct-mapped
// table indexed by a hash of the length and a few words of the bytes,
// confirmed by comparing them: a lookup costs one slot and one compare,
// where a map cost a full hash, a probe and, for the many names seen only
// once, an insertion. A string that occurs in consecutive chunks keeps its
// slot; one that lost its slot to another is copied anew when it comes
// back (a bounded map loses its strings the same way when it is cleared).
type interner struct {
	slots [1 << internBits]string
}

// get returns the interned string of b.
func (t *interner) get(b []byte) string {
	slot := &t.slots[cacheSlot(b)]
	if s := *slot; len(s) == len(b) && s == string(b) {
		return s
	}
	s := string(b)
	*slot = s
	return s
}

// cacheSlot hashes the length and up to three words of b (its start,
// middle and end) into a slot of interner.slots.
func cacheSlot(b []byte) uint {
	n := len(b)
	var x uint64
	switch {
	case n >= 8:
		x = binary.LittleEndian.Uint64(b) ^
			bits.RotateLeft64(binary.LittleEndian.Uint64(b[(n-8)/2:]), 21) ^
			bits.RotateLeft64(binary.LittleEndian.Uint64(b[n-8:]), 42)
	case n >= 4:
		x = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32
	case n > 0:
		x = uint64(b[0]) | uint64(b[n/2])<<8 | uint64(b[n-1])<<16
	}
	x = (x ^ uint64(n)) * 0x9e3779b97f4a7c15
	return uint(x >> (64 - internBits))
}

// decoder holds what a records chunk decodes into. Everything is reused
// from chunk to chunk: in steady state decoding does not allocate. The
// decoding itself is in decode.go (version 2) and decode_v1.go (version
// 1, generated from decode.go).
type decoder struct {
	// raw is the chunk's string table, views into the payload; strs[i]
	// is raw[i] interned, made when an event or fact first refers to it
	// ("" until then), so strings nobody reads are never hashed or
	// copied.
	raw    [][]byte
	strs   []string
	intern *interner // shared by a Reader's passes over the file
	fs     []factAt
	tmpls  []template
	thrs   []threadRef
	ev     event.Event
	// mAll and fAll are the event and fact field bits of the file's
	// format version: a bit outside them is an error.
	mAll, fAll uint64

	deltaBases
}

// deltaBases are the previous values that an event's delta-coded fields
// are relative to; they start at zero in every chunk, on both sides.
type deltaBases struct {
	prevID     uint64
	prevTime   int64
	prevFO     uint64
	prevKey    uint64
	prevSector uint64
	prevReq    uint64
}

// factAt is a fact and the index of the event it precedes.
type factAt struct {
	pos int
	f   event.Fact
}

// keepFunc selects the facts whose strings a pass makes, by kind and
// rundown flag (nil selects all).
type keepFunc func(kind event.FactKind, rundown bool) bool

// resetStrings sizes strs for the string table in raw.
func (d *decoder) resetStrings() {
	if cap(d.strs) < len(d.raw) {
		d.strs = make([]string, len(d.raw), cap(d.raw))
	} else {
		d.strs = d.strs[:len(d.raw)]
		clear(d.strs)
	}
}

// makeStr interns string i of the table.
func (d *decoder) makeStr(i uint64) string {
	b := d.raw[i]
	if len(b) == 0 {
		return ""
	}
	if d.intern == nil {
		d.intern = new(interner)
	}
	s := d.intern.get(b)
	d.strs[i] = s
	return s
}

// nextFact appends a zero fact preceding event pos to d.fs and returns
// it, to be decoded in place (a fact is large: cleared where it lies, not
// built on the stack and copied).
func (d *decoder) nextFact(pos int) *event.Fact {
	n := len(d.fs)
	if n == cap(d.fs) {
		d.fs = append(d.fs, factAt{})
	}
	d.fs = d.fs[:n+1]
	fa := &d.fs[n]
	*fa = factAt{}
	fa.pos = pos
	return &fa.f
}

func (d *decoder) beginEvents() {
	d.tmpls = d.tmpls[:0]
	d.thrs = d.thrs[:0]
	d.deltaBases = deltaBases{}
}

var (
	errTemplate = errors.New("bad template reference")
	errThread   = errors.New("bad thread reference")
	errMajor    = errors.New("device major exceeds 32 bits")
	errFD       = errors.New("fd exceeds 32 bits")
)
