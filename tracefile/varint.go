package tracefile

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// Version 2 records chunks encode unsigned integers as prefix varints:
// the byte length n (1 to 8) is in the first byte's trailing zero bits
// (n−1 zeros, then a one), and the value is the n bytes read as a
// little-endian integer shifted right by n, so n bytes carry 7n bits. A
// value of 2⁵⁶ or more is a 0x00 byte followed by the 8-byte
// little-endian value. A decoder learns the length from the first byte
// and decodes up to 8 bytes with one load and two shifts, where LEB128
// (version 1, leb.go) needs a chain of dependent per-byte steps.

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// appendUvarint appends v as a prefix varint, in its shortest form.
func appendUvarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v)<<1|1)
	}
	return appendUvarintSlow(b, v)
}

func appendUvarintSlow(b []byte, v uint64) []byte {
	n := len(b)
	if cap(b)-n < 9 {
		b = append(b, make([]byte, 9)...)[:n]
	}
	if v >= 1<<56 {
		b = b[:n+9]
		b[n] = 0
		binary.LittleEndian.PutUint64(b[n+1:], v)
		return b
	}
	k := uvarintLen(v)
	b = b[:n+8]
	binary.LittleEndian.PutUint64(b[n:], (v<<1|1)<<(k-1))
	return b[:n+k]
}

func appendVarint(b []byte, v int64) []byte { return appendUvarint(b, zigzag(v)) }

func appendString(b []byte, s string) []byte {
	b = appendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// uvarintLen is the encoded size of v as a prefix varint.
func uvarintLen(v uint64) int {
	if v >= 1<<56 {
		return 9
	}
	return (bits.Len64(v|1) + 6) / 7
}

var (
	errShort   = errors.New("unexpected end of data")
	errVarint  = errors.New("varint overflows 64 bits")
	errTooLong = errors.New("length exceeds the data")
	errU32     = errors.New("value exceeds 32 bits")
)

// cursor is a position in a byte slice; the first error sticks and every
// later read returns zero values. dec and ldec add the varint decoders of
// the two format versions.
type cursor struct {
	b   []byte
	off int
	err error
}

func (d *cursor) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.off = len(d.b)
}

func (d *cursor) byte() byte {
	if d.off >= len(d.b) {
		d.fail(errShort)
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

// bytes returns the next n bytes (a view into the data).
func (d *cursor) bytes(n uint64) []byte {
	if n > uint64(len(d.b)-d.off) {
		d.fail(errTooLong)
		return nil
	}
	s := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *cursor) left() int { return len(d.b) - d.off }

// dec reads the prefix varints of version 2.
type dec struct{ cursor }

// fast decodes a varint of 1 to 8 bytes when 8 bytes are available; ok
// is false (and nothing is consumed) otherwise. Hot paths write
// "v, ok := in.fast(); if !ok { v = in.uvarintSlow() }": fast inlines,
// uvarint does not.
func (d *dec) fast() (uint64, bool) {
	if i := d.off; i <= len(d.b)-8 {
		x := binary.LittleEndian.Uint64(d.b[i:])
		if n := uint(bits.TrailingZeros64(x)) + 1; n <= 8 {
			d.off = i + int(n)
			return x << (64 - 8*n) >> (64 - 7*n), true
		}
	}
	return 0, false
}

// peek is fast for a decoder that keeps its position off in a local
// variable (a register) instead of in d, where each varint's position
// would go through memory: it decodes the varint at b[off:] and returns
// the position after it. ok is false when fast would fail; uvarintAt
// decodes it then. d is not used.
func (*dec) peek(b []byte, off int) (v uint64, next int, ok bool) {
	if off <= len(b)-8 {
		x := binary.LittleEndian.Uint64(b[off:])
		if n := uint(bits.TrailingZeros64(x)) + 1; n <= 8 {
			return x << (64 - 8*n) >> (64 - 7*n), off + int(n), true
		}
	}
	return 0, off, false
}

// uvarintAt decodes any varint at off (uvarintSlow) and returns the
// position after it, leaving d there.
func (d *dec) uvarintAt(off int) (uint64, int) {
	d.off = off
	v := d.uvarintSlow()
	return v, d.off
}

func (d *dec) uvarint() uint64 {
	if v, ok := d.fast(); ok {
		return v
	}
	return d.uvarintSlow()
}

// uvarintSlow decodes any varint: the 9-byte form, or one near the end
// of the data.
func (d *dec) uvarintSlow() uint64 {
	b := d.b[d.off:]
	if len(b) == 0 {
		d.fail(errShort)
		return 0
	}
	if b[0] == 0 {
		if len(b) < 9 {
			d.fail(errShort)
			return 0
		}
		d.off += 9
		return binary.LittleEndian.Uint64(b[1:9])
	}
	n := bits.TrailingZeros8(b[0]) + 1
	if len(b) < n {
		d.fail(errShort)
		return 0
	}
	var x uint64
	for i := n - 1; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	d.off += n
	return x >> uint(n)
}

func (d *dec) varint() int64 { return unzigzag(d.uvarint()) }

func (d *dec) u32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail(errU32)
		return 0
	}
	return uint32(v)
}
