package xpress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// ErrShortBuffer is wrapped by Decompress when the output does not fit in
// dst.
var ErrShortBuffer = errors.New("output larger than the destination buffer")

// CorruptError reports malformed compressed input.
type CorruptError struct {
	// Offset is the input byte offset of the element that failed.
	Offset int
	// Field names that element ("flags", "match", "match length", ...).
	Field string
	// Err says what is wrong with it.
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("xpress: corrupt input at offset %#x (%s): %v", e.Offset, e.Field, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

var (
	errTruncated = errors.New("input ends inside the element")
	errBadOffset = errors.New("match refers to data before the start of the output")
	errBadLength = errors.New("invalid extended match length")
)

func corrupt(off int, field string, err error) error {
	return &CorruptError{Offset: off, Field: field, Err: err}
}

func shortLiteral(in int) error {
	return fmt.Errorf("xpress: literal at input offset %#x: %w", in, ErrShortBuffer)
}

func shortMatch(length uint64, start int) error {
	return fmt.Errorf("xpress: match of %d bytes at input offset %#x: %w", length, start, ErrShortBuffer)
}

// Margins of the fast loop. While at least inMargin input bytes and
// outMargin output bytes are left at the top of the loop, a literal run
// of up to 16 bytes is one 16-byte move, a match token (at most 10 bytes
// with every extended length field) needs no input check, and a match of
// up to 16 bytes is one 16-byte move (two 8-byte moves when its offset is
// under 16); bytes written past the current element are rewritten by the
// next ones. TestDifferential fails if either margin is one byte short.
const (
	inMargin  = 4 + 16 + 10 // a flag word, a literal block, a match token
	outMargin = 16 + 16     // a literal block, then a short match
)

// Decompress decompresses src, a complete plain-LZ77 stream, into dst and
// returns the number of bytes written. The stream ends where its input
// ends. It fails with a *CorruptError when src is malformed and with an
// error wrapping ErrShortBuffer when the output would not fit in dst; the
// bytes already written to dst stay valid. Bytes of dst past the returned
// count may be overwritten.
//
// The flag bits are kept in the top of a 64-bit word followed by a
// sentinel 1 bit, so that the count of leading zeros is the literal run
// up to the next match or the end of the flag word, and f<<1 == 0 means
// that the word is used up.
func Decompress(dst, src []byte) (int, error) {
	var (
		in, out  int
		f        uint64 // flag bits, then the sentinel; 0: none loaded
		halfByte = -1   // input offset of a pending shared length nibble
		srcLen   = len(src)
		dstLen   = len(dst)
	)
	// Fast loop: no bound is checked per byte while the margins hold.
	// The input and output ahead are taken as fixed-size arrays (one
	// check each), so that the literal block, the match token and a
	// short match's destination are read and written without checks.
	for in <= srcLen-inMargin && out <= dstLen-outMargin {
		if f<<1 == 0 {
			f = uint64(binary.LittleEndian.Uint32(src[in:]))<<32 | 1<<31
			in += 4
		}
		s := (*[inMargin - 4]byte)(src[in : in+inMargin-4])
		d := (*[outMargin]byte)(dst[out : out+outMargin])
		// The literal run before the next match (or the end of the flag
		// word): up to 16 bytes in one move whatever its length.
		run := uint(bits.LeadingZeros64(f))
		*(*[16]byte)(d[:16]) = *(*[16]byte)(s[:16])
		if run > 16 {
			n := int(run)
			if n > srcLen-in || n > dstLen-out {
				break // the careful loop below reports it
			}
			copy(dst[out:out+n], src[in:in+n])
			in += n
			out += n
			f <<= run
			continue // re-check the margins before the match
		}
		in += int(run)
		out += int(run)
		f <<= run
		if f<<1 == 0 {
			continue // the flag word ended inside the run
		}
		// A match. The margin leaves room for its longest token.
		f <<= 1
		start := in
		t := (*[10]byte)(s[run : run+10])
		m := uint(t[0]) | uint(t[1])<<8
		in += 2
		length := m & 7
		offset := int(m>>3) + 1
		if length == 7 {
			k := 2
			if halfByte < 0 {
				length = uint(t[2] & 0x0F)
				halfByte = in
				k = 3
			} else {
				length = uint(src[halfByte] >> 4)
				halfByte = -1
			}
			if length == 15 {
				length = uint(t[k])
				k++
				if length == 255 {
					length = uint(t[k]) | uint(t[k+1])<<8
					k += 2
					if length == 0 {
						length = uint(binary.LittleEndian.Uint32(t[k : k+4]))
						k += 4
						if uint64(length) > uint64(dstLen) {
							return out, shortMatch(uint64(length), start)
						}
					}
					if length < 15+7 {
						return out, corrupt(start, "match length", errBadLength)
					}
					length -= 15 + 7
				}
				length += 15
			}
			length += 7
			in += k - 2
		}
		length += 3
		if offset > out {
			return out, corrupt(start, "match offset", errBadOffset)
		}
		from := out - offset
		if offset >= 16 {
			// Every 16-byte block read lies before the block written.
			if length <= 16 {
				// The common case; the margin covers the 16 bytes.
				*(*[16]byte)(d[run : run+16]) = *(*[16]byte)(dst[from : from+16])
				out += int(length)
				continue
			}
			if length <= 48 && uint(dstLen-out) >= length+16 {
				end := out + int(length)
				for ; out < end; out, from = out+16, from+16 {
					*(*[16]byte)(dst[out : out+16]) = *(*[16]byte)(dst[from : from+16])
				}
				out = end
				continue
			}
		} else if offset >= 8 && length <= 16 {
			// Two 8-byte moves, the second reading what the first may
			// have written (offset >= 8 keeps the order right).
			w := (*[16]byte)(d[run : run+16])
			r := (*[16]byte)(dst[from : from+16])
			binary.LittleEndian.PutUint64(w[:8], binary.LittleEndian.Uint64(r[:8]))
			binary.LittleEndian.PutUint64(w[8:], binary.LittleEndian.Uint64(r[8:]))
			out += int(length)
			continue
		}
		if uint(dstLen-out) < length {
			return out, shortMatch(uint64(length), start)
		}
		out = copyMatch(dst, out, from, int(length))
	}
	return decompressTail(dst, src, in, out, f, halfByte)
}

// periodWords holds, for a match offset (period) p of 1 to 7, the
// smallest multiple of p that is at least 8 (a table: no division).
var periodWords = [8]uint8{0, 8, 8, 9, 8, 10, 12, 14}

// copyMatch copies the length bytes at dst[from:] to dst[out:], from <
// out, byte by byte as the format defines it (an overlapping match
// repeats its last out-from bytes), and returns the new output position.
// The caller checked that the match fits in dst.
func copyMatch(dst []byte, out, from, length int) int {
	offset := out - from
	end := out + length
	if offset >= length && length >= 64 {
		// Long, non-overlapping: memmove is fastest.
		copy(dst[out:end], dst[from:from+length])
		return end
	}
	if end+8 > len(dst) {
		// No room for whole words past the end: exact copies.
		if offset >= length {
			copy(dst[out:end], dst[from:from+length])
			return end
		}
		for out < end {
			out += copy(dst[out:end], dst[from:out])
		}
		return end
	}
	if offset < 8 {
		// A short period: write the first bytes one by one until a
		// multiple of the period, k >= 8, lies behind the output; from
		// there on dst[o] = dst[o-k] and words can be moved.
		k := int(periodWords[offset])
		first := min(k-offset, length)
		for i := 0; i < first; i++ {
			dst[out+i] = dst[from+i]
		}
		o := out + first
		for ; o < end; o += 8 {
			binary.LittleEndian.PutUint64(dst[o:o+8], binary.LittleEndian.Uint64(dst[o-k:o-k+8]))
		}
		return end
	}
	if offset >= 16 && end+16 <= len(dst) {
		for o := out; o < end; o, from = o+16, from+16 {
			s := dst[from : from+16]
			d := dst[o : o+16]
			binary.LittleEndian.PutUint64(d[:8], binary.LittleEndian.Uint64(s[:8]))
			binary.LittleEndian.PutUint64(d[8:], binary.LittleEndian.Uint64(s[8:]))
		}
		return end
	}
	// 8 <= offset < 16: every word read lies before the word written.
	for o := out; o < end; o, from = o+8, from+8 {
		binary.LittleEndian.PutUint64(dst[o:o+8], binary.LittleEndian.Uint64(dst[from:from+8]))
	}
	return end
}

// decompressTail finishes a stream near the end of its input or output,
// checking every bound, from the state the fast loop left.
func decompressTail(dst, src []byte, in, out int, f uint64, halfByte int) (int, error) {
	srcLen, dstLen := len(src), len(dst)
	for {
		if f<<1 == 0 {
			if in == srcLen {
				return out, nil
			}
			if srcLen-in < 4 {
				return out, corrupt(in, "flags", errTruncated)
			}
			f = uint64(binary.LittleEndian.Uint32(src[in:]))<<32 | 1<<31
			in += 4
		}
		// Copy the run of literals announced by the leading zero bits.
		if run := bits.LeadingZeros64(f); run > 0 {
			avail := srcLen - in
			if run > avail {
				// The stream may end inside a run of literal flags.
				if dstLen-out < avail {
					return out, shortLiteral(in + dstLen - out)
				}
				out += copy(dst[out:], src[in:])
				return out, nil
			}
			if dstLen-out < run {
				return out, shortLiteral(in + dstLen - out)
			}
			copy(dst[out:out+run], src[in:in+run])
			in += run
			out += run
			f <<= uint(run)
			if f<<1 == 0 {
				continue
			}
		}
		// A match.
		f <<= 1
		if in == srcLen {
			return out, nil // the end marker: a match flag with no input left
		}
		start := in
		if srcLen-in < 2 {
			return out, corrupt(in, "match", errTruncated)
		}
		m := int(binary.LittleEndian.Uint16(src[in:]))
		in += 2
		length := m & 7
		offset := m>>3 + 1
		if length == 7 {
			if halfByte < 0 {
				if in == srcLen {
					return out, corrupt(in, "match length", errTruncated)
				}
				length = int(src[in] & 0x0F)
				halfByte = in
				in++
			} else {
				length = int(src[halfByte] >> 4)
				halfByte = -1
			}
			if length == 15 {
				if in == srcLen {
					return out, corrupt(in, "match length", errTruncated)
				}
				length = int(src[in])
				in++
				if length == 255 {
					if srcLen-in < 2 {
						return out, corrupt(in, "match length", errTruncated)
					}
					length = int(binary.LittleEndian.Uint16(src[in:]))
					in += 2
					if length == 0 {
						if srcLen-in < 4 {
							return out, corrupt(in, "match length", errTruncated)
						}
						l32 := binary.LittleEndian.Uint32(src[in:])
						in += 4
						if uint64(l32) > uint64(dstLen) {
							return out, shortMatch(uint64(l32), start)
						}
						length = int(l32)
					}
					if length < 15+7 {
						return out, corrupt(start, "match length", errBadLength)
					}
					length -= 15 + 7
				}
				length += 15
			}
			length += 7
		}
		length += 3
		if offset > out {
			return out, corrupt(start, "match offset", errBadOffset)
		}
		if dstLen-out < length {
			return out, shortMatch(uint64(length), start)
		}
		out = copyMatch(dst, out, out-offset, length)
	}
}
