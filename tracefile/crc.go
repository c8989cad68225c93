package tracefile

import (
	"hash/crc32"
	"sort"
)

// This file computes the CRC-32C of any byte range of the region a
// damaged file's reader searches, in one pass over the region: resync
// tries a candidate chunk at every sync it finds, and a crafted file can
// put a sync every few bytes, each with a length reaching far ahead. A
// CRC over each candidate's payload would cost the region's size per
// candidate (quadratic); here each costs at most crcBlock bytes of CRC
// and one multiplication.
//
// A CRC is linear: for byte strings A and B, crc(A‖B) = shift(crc(A),
// |B|) ⊕ crc(B), where shift multiplies by x^(8|B|) modulo the CRC's
// polynomial (the pre- and post-inversion of the standard CRC cancel in
// that identity). So with F(i) the CRC of the region's bytes up to i,
// the CRC of the bytes from a to e is F(e) ⊕ shift(F(a), e−a).

// castagnoliPoly is CRC-32C's polynomial, bit-reversed (as hash/crc32).
const castagnoliPoly = 0x82F63B78

// crcOne is the polynomial 1 in the bit-reversed representation.
const crcOne = 1 << 31

// mulPoly returns a·b modulo the CRC-32C polynomial (bit-reversed
// representation: bit 31 is x^0).
func mulPoly(a, b uint32) uint32 {
	var p uint32
	for m := uint32(crcOne); m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if a&(m-1) == 0 {
			break
		}
		// b ·= x
		if b&1 != 0 {
			b = b>>1 ^ castagnoliPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow2 holds x^(2^k) modulo the polynomial, for k = 0..63.
var xPow2 = func() (t [64]uint32) {
	t[0] = crcOne >> 1 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = mulPoly(t[k-1], t[k-1])
	}
	return t
}()

// crcShift returns crc shifted over n zero bytes' worth of polynomial
// degree: shift(crc, n) of the identity above.
func crcShift(crc uint32, n int64) uint32 {
	// x^(8n) = the product of x^(2^k) over the bits k of 8n.
	for k := 3; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			crc = mulPoly(xPow2[k], crc)
		}
	}
	return crc
}

// crcBlock is the distance between the marks of a rangeCRC: the most
// bytes a range's CRC reads besides the one pass.
const crcBlock = 512

// rangeCRC gives the CRC of ranges of a region read forward through a
// window: F at the window's start (the resync position), kept as the
// search discards bytes, and F at marks every crcBlock bytes ahead of it,
// made once as ranges reach further.
type rangeCRC struct {
	pos   int64  // the window's start: F(pos) = val
	val   uint32 // F(pos)
	ahead int64  // the furthest mark
	// marks[head:] are the marks from the window's start on, ascending.
	marks []crcMark
	head  int
}

type crcMark struct {
	off int64
	val uint32
}

// reset starts a region at file offset off.
func (c *rangeCRC) reset(off int64) {
	c.pos, c.val, c.ahead = off, 0, off
	c.marks, c.head = append(c.marks[:0], crcMark{off, 0}), 0
}

// discard takes in b, the bytes at the window's start the search moves
// past.
func (c *rangeCRC) discard(b []byte) {
	c.val = crc32.Update(c.val, castagnoli, b)
	c.pos += int64(len(b))
}

// at returns F(e) for e at or after the window's start; win holds the
// region's bytes from there to e at least.
func (c *rangeCRC) at(e int64, win []byte) uint32 {
	if e-c.pos <= crcBlock {
		return crc32.Update(c.val, castagnoli, win[:e-c.pos])
	}
	if c.ahead < c.pos {
		c.ahead = c.pos
		c.marks, c.head = append(c.marks[:0], crcMark{c.pos, c.val}), 0
	}
	// Marks behind the window's start are of no more use; the slice is
	// compacted once half of it is.
	for c.marks[c.head].off < c.pos {
		c.head++
	}
	if c.head > len(c.marks)/2 {
		c.marks, c.head = c.marks[:copy(c.marks, c.marks[c.head:])], 0
	}
	for c.ahead+crcBlock <= e {
		last := c.marks[len(c.marks)-1]
		from := last.off - c.pos
		v := crc32.Update(last.val, castagnoli, win[from:from+crcBlock])
		c.ahead += crcBlock
		c.marks = append(c.marks, crcMark{c.ahead, v})
	}
	live := c.marks[c.head:]
	m := live[sort.Search(len(live), func(i int) bool { return live[i].off > e })-1]
	return crc32.Update(m.val, castagnoli, win[m.off-c.pos:e-c.pos])
}

// rangeOf returns the CRC of the bytes from a to e (a at or after the
// window's start), from F(a) and F(e).
func rangeOf(fa, fe uint32, n int64) uint32 { return fe ^ crcShift(fa, n) }
