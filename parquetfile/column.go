package parquetfile

import (
	"unsafe"

	"github.com/parquet-go/parquet-go/format"
)

// colType is a column's type as the schema declares it.
type colType uint8

const (
	typeInt64     colType = iota // INT64, INT(64,true)
	typeUint64                   // INT64, INT(64,false): values are the bits
	typeInt32                    // INT32, INT(32,true)
	typeTimestamp                // INT64, TIMESTAMP(MICROS, UTC)
	typeBool                     // BOOLEAN
	typeString                   // BYTE_ARRAY, STRING
)

// colEnc is how a column's values are encoded in its data pages.
type colEnc uint8

const (
	encPlain colEnc = iota
	// encDelta is DELTA_BINARY_PACKED: ids and times, increasing or
	// slowly changing.
	encDelta
	// encDict is a dictionary page and RLE_DICTIONARY indexes: values that
	// repeat within a row group. A chunk whose values hardly repeat falls
	// back to plain.
	encDict
)

// colSpec is one column of the schema.
type colSpec struct {
	name     string
	typ      colType
	optional bool
	enc      colEnc
	// bounds asks for the chunk's min and max in its statistics: for the
	// columns queries filter on. Free-text columns have none (they prune
	// nothing and cost time).
	bounds bool

	// list makes the column a LIST of required strings (typeString):
	// optional group NAME (LIST) { repeated group list { required
	// binary element (STRING) } }.
	list bool

	// rawChunks counts down the chunks still stored in raw zstd blocks
	// (fileWriter.rowGroup).
	rawChunks int
	// plainChunks counts down the chunks of a dictionary column still
	// written plain because a recent one had too many distinct values.
	plainChunks int
}

func (s *colSpec) spec() *colSpec { return s }

// physical returns the Parquet physical type of the column.
func (s *colSpec) physical() format.Type {
	switch s.typ {
	case typeInt32:
		return format.Int32
	case typeBool:
		return format.Boolean
	case typeString:
		return format.ByteArray
	}
	return format.Int64
}

// column is one column's values for the row group being filled.
type column interface {
	spec() *colSpec
	// chunk encodes the row group's rows values as a column chunk.
	chunk(f *fileWriter, rows int) format.ColumnChunk
	// reset empties the column for the next row group.
	reset()
}

// intColumn holds an integer column: int64, the bits of a uint64, an int32
// widened, or a timestamp.
type intColumn struct {
	colSpec
	vals []int64 // the non-null values
	def  []uint8 // optional columns: 1 for a value, 0 for a null, per row
}

func (c *intColumn) add(v int64) { c.vals = append(c.vals, v) }

// addOpt adds v, or a null when !ok.
func (c *intColumn) addOpt(v int64, ok bool) {
	if ok {
		c.vals = append(c.vals, v)
		c.def = append(c.def, 1)
	} else {
		c.def = append(c.def, 0)
	}
}

func (c *intColumn) reset() { c.vals, c.def = c.vals[:0], c.def[:0] }

// boolColumn holds a required boolean column.
type boolColumn struct {
	colSpec
	vals []bool
}

func (c *boolColumn) add(v bool) { c.vals = append(c.vals, v) }
func (c *boolColumn) reset()     { c.vals = c.vals[:0] }

// strColumn holds a string column. Optional string columns are null for
// the empty string.
type strColumn struct {
	colSpec
	vals []string
	def  []uint8
}

func (c *strColumn) add(v string) { c.vals = append(c.vals, v) }

// addOpt adds v, or a null when v is empty.
func (c *strColumn) addOpt(v string) {
	if v != "" {
		c.vals = append(c.vals, v)
		c.def = append(c.def, 1)
	} else {
		c.def = append(c.def, 0)
	}
}

func (c *strColumn) reset() {
	clear(c.vals) // let the strings go
	c.vals, c.def = c.vals[:0], c.def[:0]
}

// listColumn holds an optional list of strings per row.
type listColumn struct {
	colSpec
	vals []string // the elements of every row's list
	rep  []uint8  // per element (or per null or empty list): 0 starts a row
	def  []uint8  // 0: null list, 1: empty list, 2: an element
}

// addList adds a row's list: null when l is nil.
func (c *listColumn) addList(l []string) {
	switch {
	case l == nil:
		c.rep, c.def = append(c.rep, 0), append(c.def, 0)
	case len(l) == 0:
		c.rep, c.def = append(c.rep, 0), append(c.def, 1)
	default:
		c.vals = append(c.vals, l...)
		for i := range l {
			c.rep = append(c.rep, min(uint8(i), 1))
			c.def = append(c.def, 2)
		}
	}
}

func (c *listColumn) reset() {
	clear(c.vals)
	c.vals, c.rep, c.def = c.vals[:0], c.rep[:0], c.def[:0]
}

// constColumn is a required column with the same value on every row of the
// file (the trace's identity): nothing is stored per row.
type constColumn struct {
	colSpec
	s string // typeString
	i int64  // the integer types
}

func (c *constColumn) reset() {}

// intDict assigns dictionary indexes to integers: open addressing over a
// power-of-two table, with a shortcut for a run of the same value.
type intDict struct {
	keys []int64
	slot []int32 // index+1; 0 is an empty slot
	vals []int64 // the dictionary, in index order
	bits uint
}

func (d *intDict) reset(bits uint) {
	d.bits = bits
	n := 1 << bits
	if cap(d.slot) >= n {
		d.slot = d.slot[:n]
		clear(d.slot)
		d.keys = d.keys[:n]
	} else {
		d.slot = make([]int32, n)
		d.keys = make([]int64, n)
	}
	d.vals = d.vals[:0]
}

// build returns the dictionary indexes of vals in idx, or false when more
// than limit distinct values are found (the chunk is then written plain).
func (d *intDict) build(vals []int64, idx []int32, limit int) ([]int32, bool) {
	d.reset(10)
	idx = idx[:0]
	prev, prevIdx := int64(0), int32(-1)
	for _, v := range vals {
		if v == prev && prevIdx >= 0 {
			idx = append(idx, prevIdx)
			continue
		}
		i := d.index(v)
		if len(d.vals) > limit {
			return idx, false
		}
		idx = append(idx, i)
		prev, prevIdx = v, i
	}
	return idx, true
}

func (d *intDict) index(v int64) int32 {
	mask := uint64(len(d.slot) - 1)
	h := (uint64(v) * 0x9e3779b97f4a7c15) >> (64 - d.bits)
	for {
		s := d.slot[h]
		if s == 0 {
			break
		}
		if d.keys[h] == v {
			return s - 1
		}
		h = (h + 1) & mask
	}
	d.vals = append(d.vals, v)
	i := int32(len(d.vals) - 1)
	if 2*len(d.vals) > len(d.slot) {
		d.grow()
	} else {
		d.slot[h], d.keys[h] = i+1, v
	}
	return i
}

// grow doubles the table and reinserts every value (the last one added
// included).
func (d *intDict) grow() {
	vals := d.vals
	d.bits++
	n := 1 << d.bits
	d.slot = make([]int32, n)
	d.keys = make([]int64, n)
	mask := uint64(n - 1)
	for i, v := range vals {
		h := (uint64(v) * 0x9e3779b97f4a7c15) >> (64 - d.bits)
		for d.slot[h] != 0 {
			h = (h + 1) & mask
		}
		d.slot[h], d.keys[h] = int32(i)+1, v
	}
}

// strDict assigns dictionary indexes to strings. Strings the trace reader
// interned (paths, process names, ops) share their bytes, so a string is
// first looked up by its data pointer and length, without hashing its
// bytes; only a pointer not seen before is looked up by content. The
// column's values keep every string of the row group alive, so a pointer
// seen in it cannot be reused for other bytes before the dictionary is
// reset.
type strDict struct {
	ptrs      []uintptr
	lens      []int
	slot      []int32 // index+1; 0 is an empty slot
	byContent map[string]int32
	vals      []string // the dictionary, in index order
	used      int      // filled slots
	bits      uint
}

func (d *strDict) reset() {
	d.bits = 10
	n := 1 << d.bits
	if cap(d.slot) >= n {
		d.slot = d.slot[:n]
		clear(d.slot)
		d.ptrs, d.lens = d.ptrs[:n], d.lens[:n]
	} else {
		d.slot = make([]int32, n)
		d.ptrs = make([]uintptr, n)
		d.lens = make([]int, n)
	}
	if d.byContent == nil {
		d.byContent = make(map[string]int32)
	} else {
		clear(d.byContent)
	}
	clear(d.vals)
	d.vals = d.vals[:0]
	d.used = 0
}

func (d *strDict) build(vals []string, idx []int32) []int32 {
	d.reset()
	idx = idx[:0]
	var prevP uintptr
	prevN, prevIdx := -1, int32(0)
	for _, s := range vals {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		if p == prevP && len(s) == prevN {
			idx = append(idx, prevIdx)
			continue
		}
		i := d.index(s, p)
		idx = append(idx, i)
		prevP, prevN, prevIdx = p, len(s), i
	}
	return idx
}

func (d *strDict) index(s string, p uintptr) int32 {
	mask := uint64(len(d.slot) - 1)
	h := ((uint64(p) ^ uint64(len(s))<<48) * 0x9e3779b97f4a7c15) >> (64 - d.bits)
	for {
		sl := d.slot[h]
		if sl == 0 {
			break
		}
		if d.ptrs[h] == p && d.lens[h] == len(s) {
			return sl - 1
		}
		h = (h + 1) & mask
	}
	i, ok := d.byContent[s]
	if !ok {
		d.vals = append(d.vals, s)
		i = int32(len(d.vals) - 1)
		d.byContent[s] = i
	}
	d.used++
	if 2*d.used > len(d.slot) {
		d.grow(s, p, i)
	} else {
		d.slot[h], d.ptrs[h], d.lens[h] = i+1, p, len(s)
	}
	return i
}

// grow doubles the pointer table, moves its entries and adds (p, n) at
// index i.
func (d *strDict) grow(s string, p uintptr, i int32) {
	oldSlot, oldPtrs, oldLens := d.slot, d.ptrs, d.lens
	d.bits++
	n := 1 << d.bits
	d.slot, d.ptrs, d.lens = make([]int32, n), make([]uintptr, n), make([]int, n)
	for h, sl := range oldSlot {
		if sl != 0 {
			d.put(oldPtrs[h], oldLens[h], sl)
		}
	}
	d.put(p, len(s), i+1)
}

func (d *strDict) put(p uintptr, n int, sl int32) {
	mask := uint64(len(d.slot) - 1)
	h := ((uint64(p) ^ uint64(n)<<48) * 0x9e3779b97f4a7c15) >> (64 - d.bits)
	for d.slot[h] != 0 {
		h = (h + 1) & mask
	}
	d.slot[h], d.ptrs[h], d.lens[h] = sl, p, n
}

// path returns the column's path in the schema.
func (s *colSpec) path() []string {
	if s.list {
		return []string{s.name, "list", "element"}
	}
	return []string{s.name}
}
