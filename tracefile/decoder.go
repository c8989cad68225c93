package tracefile

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"unicode/utf8"
	"unsafe"

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
//
// The strings it holds are bounded by maxInternBytes (the table is emptied
// when they would exceed it): slots of long paths alone could hold 64 MiB.
type interner struct {
	slots [1 << internBits]string
	bytes int // of the strings in slots
}

// maxInternBytes bounds the bytes of the strings an interner holds.
const maxInternBytes = 4 << 20

// get returns the interned string of b.
func (t *interner) get(b []byte) string {
	slot := &t.slots[cacheSlot(b)]
	if s := *slot; len(s) == len(b) && s == string(b) {
		return s
	}
	s := string(b)
	t.bytes += len(s) - len(*slot)
	if t.bytes > maxInternBytes {
		clear(t.slots[:])
		t.bytes = len(s)
	}
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
//
// Its memory is bounded by the chunk, not by the chunk's counts: facts
// and events are decoded one at a time; the string table is indexed by a
// mark every strMarkEvery strings and its strings are made when first
// used, into a direct-mapped cache by index; the tables the chunk
// defines (templates, threads, its stacks' frames) may take at most
// chunkBudget bytes, else the chunk is damage.
type decoder struct {
	// strSec is the chunk's string table section (after its count),
	// nstrs its count, marks[k] the offset in strSec of string
	// strMarkEvery·k.
	strSec []byte
	marks  []uint32
	nstrs  uint64
	// slots cache made strings by index; a slot holds string i of the
	// chunk whose gen it is tagged with (tag = gen + i).
	slots  []strSlot
	gen    uint64
	intern *interner // shared by a Reader's passes over the file
	// facts walks the facts section; fact is the fact decoded last.
	facts factStream
	fact  event.Fact
	tmpls []template
	thrs  []threadRef
	ev    event.Event
	// mAll and fAll are the event and fact field bits of the file's
	// format version: a bit outside them is an error.
	mAll, fAll uint64
	// budget is what the chunk's tables may still take, in bytes.
	budget int
	// pathMax and strMax are the longest path and other string of the
	// trace's OS (event.MaxPathLen, MaxStringLen); cut counts what was
	// cut to them, and stack frames cut to event.MaxStackFrames.
	pathMax, strMax int
	cut             event.Cuts

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

// strSlot is a slot of the decoder's string cache.
type strSlot struct {
	tag uint64
	s   string
}

// Sizes of the string cache and the string table's index.
const (
	strSlotBits  = 13
	strMarkEvery = 8
)

// chunkBudget returns the bytes the tables of a chunk with a payload of n
// bytes may take. A template takes 32 bytes for at least 11 of the chunk
// (its event's), a thread 40 for at least 9, a stack frame 8 for at least
// 1: a chunk built of those alone could make a reader hold 4 or 8 times
// its size. A writer's chunks stay far below: a real thread definition
// takes 14 bytes or more (pids, times), a real frame 2 to 4 (the
// difference from the frame before it).
func chunkBudget(n int) int { return 3*n + 1<<20 }

// Memory the tables of a chunk take per entry.
const (
	templateCost = int(unsafe.Sizeof(template{}))
	threadCost   = int(unsafe.Sizeof(threadRef{}))
	frameCost    = 8
)

var errBudget = errors.New("the chunk's tables (templates, threads, stack frames) take more than 3 bytes per byte of the chunk plus 1 MiB: not a chunk a writer makes")

// factStream is the walk of a chunk's facts section: n facts, i decoded
// so far, the next at off; pos is the event position of the fact decoded
// last, lastPos that of the last fact of the section.
type factStream struct {
	sec      []byte
	off      int
	n, i     uint64
	pos      int
	lastPos  int
	prevTime int64
}

// keepFunc selects the facts whose strings a pass makes, by kind and
// rundown flag (nil selects all).
type keepFunc func(kind event.FactKind, rundown bool) bool

// beginStrings readies the string cache for a new chunk's table.
func (d *decoder) beginStrings() {
	if d.slots == nil {
		d.slots = make([]strSlot, 1<<strSlotBits)
	}
	d.gen += 1 << 32 // string indexes are below 2^32
	if d.gen == 0 {
		clear(d.slots) // wrapped: old tags could match again
		d.gen = 1 << 32
	}
}

// makeStr interns the bytes b of string i of the table, cut to the
// trace's limit, and caches it.
func (d *decoder) makeStr(i uint64, b []byte) string {
	if len(b) > d.strMax {
		b = cutBytes(b, d.strMax)
		d.cut.Strings++
	}
	s := ""
	if len(b) > 0 {
		if d.intern == nil {
			d.intern = new(interner)
		}
		s = d.intern.get(b)
	}
	d.slots[i&(1<<strSlotBits-1)] = strSlot{tag: d.gen + i, s: s}
	return s
}

// cutBytes is event.CutString for bytes.
func cutBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return b[:i]
		}
	}
	return b[:n]
}

// path returns s cut to the trace's longest path, counting the cut.
func (d *decoder) path(s string) string {
	if len(s) <= d.pathMax {
		return s
	}
	d.cut.Paths++
	return event.CutString(s, d.pathMax)
}

// appendWithin appends v to the table s of the chunk, taking cost bytes
// from its budget (failing c when the budget is used up); s grows by
// doubling, never beyond what the budget allows, so that the table holds
// no more memory than the budget says.
func appendWithin[T any](d *decoder, c *cursor, s []T, v T, cost int) []T {
	if d.spend(c, cost); c.err != nil {
		return s
	}
	if len(s) == cap(s) {
		ns := make([]T, len(s), min(max(2*cap(s), 64), len(s)+1+d.budget/cost))
		copy(ns, s)
		s = ns
	}
	return append(s, v)
}

// spend takes n bytes from the chunk's budget, failing in when it is
// used up.
func (d *decoder) spend(c *cursor, n int) {
	d.budget -= n
	if d.budget < 0 {
		c.fail(errBudget)
	}
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
