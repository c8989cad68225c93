package tracefile

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// appendUvarint appends v in LEB128.
func appendUvarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return appendUvarintSlow(b, v)
}

func appendUvarintSlow(b []byte, v uint64) []byte {
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

func appendVarint(b []byte, v int64) []byte { return appendUvarint(b, zigzag(v)) }

func appendString(b []byte, s string) []byte {
	b = appendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// uvarintLen is the encoded size of v.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

var (
	errShort   = errors.New("unexpected end of data")
	errVarint  = errors.New("varint overflows 64 bits")
	errTooLong = errors.New("length exceeds the data")
)

// dec reads from a byte slice; the first error sticks and every later read
// returns zero values.
type dec struct {
	b   []byte
	off int
	err error
}

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.off = len(d.b)
}

func (d *dec) uvarint() uint64 {
	if i := d.off; i < len(d.b) {
		if c := d.b[i]; c < 0x80 {
			d.off = i + 1
			return uint64(c)
		}
	}
	return d.uvarintSlow()
}

// u1 decodes a one-byte uvarint; ok is false (and nothing is consumed)
// when the next value is longer or missing. Hot paths write
// "v, ok := in.u1(); if !ok { v = in.uvarintSlow() }": unlike uvarint,
// u1 inlines.
func (d *dec) u1() (uint64, bool) {
	if i := d.off; i < len(d.b) && d.b[i] < 0x80 {
		d.off = i + 1
		return uint64(d.b[i]), true
	}
	return 0, false
}

func (d *dec) uvarintSlow() uint64 {
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

func (d *dec) varint() int64 { return unzigzag(d.uvarint()) }

func (d *dec) u32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail(errors.New("value exceeds 32 bits"))
		return 0
	}
	return uint32(v)
}

func (d *dec) byte() byte {
	if d.off >= len(d.b) {
		d.fail(errShort)
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

// bytes returns the next n bytes (a view into the data).
func (d *dec) bytes(n uint64) []byte {
	if n > uint64(len(d.b)-d.off) {
		d.fail(errTooLong)
		return nil
	}
	s := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

// str returns a length-prefixed string, allocated.
func (d *dec) str() string { return string(d.bytes(d.uvarint())) }

func (d *dec) left() int { return len(d.b) - d.off }
