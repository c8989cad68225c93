package tracefile

import (
	"encoding/binary"
	"math/bits"
)

// LEB128 (7 bits a byte, low group first, the high bit set on every byte
// but the last) is the varint of the header and trailer chunks in every
// version and of records chunks in version 1.

// appendLEB appends v in LEB128.
func appendLEB(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return appendLEBSlow(b, v)
}

func appendLEBSlow(b []byte, v uint64) []byte {
	n := len(b)
	if cap(b)-n < 10 {
		b = append(b, make([]byte, 10)...)[:n]
	}
	b = b[:n+10]
	i := n
	for v >= 0x80 {
		b[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	b[i] = byte(v)
	return b[:i+1]
}

func appendLEBVarint(b []byte, v int64) []byte { return appendLEB(b, zigzag(v)) }

func appendLEBString(b []byte, s string) []byte {
	b = appendLEB(b, uint64(len(s)))
	return append(b, s...)
}

// lebLen is the encoded size of v in LEB128.
func lebLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// ldec reads LEB128 varints.
type ldec struct{ cursor }

// fast decodes a one-byte varint; ok is false (and nothing is consumed)
// when the next value is longer or missing. Hot paths write
// "v, ok := in.fast(); if !ok { v = in.uvarintSlow() }": unlike uvarint,
// fast inlines.
func (d *ldec) fast() (uint64, bool) {
	if i := d.off; i < len(d.b) && d.b[i] < 0x80 {
		d.off = i + 1
		return uint64(d.b[i]), true
	}
	return 0, false
}

// peek is dec.peek for LEB128: it decodes a one-byte varint.
func (*ldec) peek(b []byte, off int) (v uint64, next int, ok bool) {
	if off < len(b) && b[off] < 0x80 {
		return uint64(b[off]), off + 1, true
	}
	return 0, off, false
}

// uvarintAt is dec.uvarintAt for LEB128.
func (d *ldec) uvarintAt(off int) (uint64, int) {
	d.off = off
	v := d.uvarintSlow()
	return v, d.off
}

func (d *ldec) uvarint() uint64 {
	if i := d.off; i < len(d.b) {
		if c := d.b[i]; c < 0x80 {
			d.off = i + 1
			return uint64(c)
		}
	}
	return d.uvarintSlow()
}

func (d *ldec) uvarintSlow() uint64 {
	b := d.b[d.off:]
	if len(b) >= 8 {
		// Up to 8 bytes at once: the first byte without a continuation
		// bit ends the value; the 7-bit groups are then packed without
		// a branch per byte.
		x := binary.LittleEndian.Uint64(b)
		if stop := ^x & 0x8080808080808080; stop != 0 {
			n := bits.TrailingZeros64(stop)/8 + 1
			x &= 1<<(8*uint(n)) - 1 // n == 8: a shift by 64 gives 0, all ones
			x = x&0x7f | x>>1&(0x7f<<7) | x>>2&(0x7f<<14) | x>>3&(0x7f<<21) |
				x>>4&(0x7f<<28) | x>>5&(0x7f<<35) | x>>6&(0x7f<<42) | x>>7&(0x7f<<49)
			d.off += n
			return x
		}
	}
	if len(b) >= 10 {
		b = b[:10]
		v := uint64(b[0] & 0x7f)
		if b[0] < 0x80 {
			d.off++
			return v
		}
		v |= uint64(b[1]&0x7f) << 7
		if b[1] < 0x80 {
			d.off += 2
			return v
		}
		v |= uint64(b[2]&0x7f) << 14
		if b[2] < 0x80 {
			d.off += 3
			return v
		}
		for i := 3; i < 10; i++ {
			c := b[i]
			v |= uint64(c&0x7f) << (7 * i)
			if c < 0x80 {
				if i == 9 && c > 1 {
					break
				}
				d.off += i + 1
				return v
			}
		}
		d.fail(errVarint)
		return 0
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if d.off >= len(d.b) {
			d.fail(errShort)
			return 0
		}
		c := d.b[d.off]
		d.off++
		if shift == 63 && c > 1 {
			d.fail(errVarint)
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
}

func (d *ldec) varint() int64 { return unzigzag(d.uvarint()) }

func (d *ldec) u32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail(errU32)
		return 0
	}
	return uint32(v)
}
