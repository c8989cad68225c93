package tracefile

import (
	"errors"

	"github.com/iotrace/iotrace/event"
)

// maxIntern bounds the decoder's string intern table; it is cleared when
// full.
const maxIntern = 1 << 16

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
	intern map[string]string
	fs     []factAt
	tmpls  []template
	thrs   []threadRef
	ev     event.Event

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
		d.intern = make(map[string]string)
	}
	s, ok := d.intern[string(b)]
	if !ok {
		if len(d.intern) >= maxIntern {
			clear(d.intern)
		}
		s = string(b)
		d.intern[s] = s
	}
	d.strs[i] = s
	return s
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
