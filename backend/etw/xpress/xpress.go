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

// Decompress decompresses src, a complete plain-LZ77 stream, into dst and
// returns the number of bytes written. The stream ends where its input
// ends. It fails with a *CorruptError when src is malformed and with an
// error wrapping ErrShortBuffer when the output would not fit in dst; the
// bytes already written to dst stay valid.
func Decompress(dst, src []byte) (int, error) {
	var (
		in, out  int
		flags    uint32
		nflags   int
		halfByte = -1 // input offset of a pending shared length nibble
		srcLen   = len(src)
		dstLen   = len(dst)
	)
	for {
		if nflags == 0 {
			if in == srcLen {
				return out, nil
			}
			if srcLen-in < 4 {
				return out, corrupt(in, "flags", errTruncated)
			}
			flags = binary.LittleEndian.Uint32(src[in:])
			in += 4
			nflags = 32
		}
		// Copy the run of literals announced by the leading zero bits.
		if run := bits.LeadingZeros32(flags); run > 0 {
			if run > nflags {
				run = nflags
			}
			avail := srcLen - in
			if run > avail {
				// The stream may end inside a run of literal flags.
				if dstLen-out < avail {
					return out, fmt.Errorf("xpress: literal at input offset %#x: %w", in+dstLen-out, ErrShortBuffer)
				}
				out += copy(dst[out:], src[in:])
				return out, nil
			}
			if dstLen-out < run {
				return out, fmt.Errorf("xpress: literal at input offset %#x: %w", in+dstLen-out, ErrShortBuffer)
			}
			if run <= 8 && srcLen-in >= 8 && dstLen-out >= 8 {
				// Short run with room to spare: one 8-byte move; the bytes
				// past the run are overwritten later.
				binary.LittleEndian.PutUint64(dst[out:], binary.LittleEndian.Uint64(src[in:]))
			} else {
				copy(dst[out:out+run], src[in:in+run])
			}
			in += run
			out += run
			nflags -= run
			flags <<= uint(run)
			if nflags == 0 {
				continue
			}
		}
		// A match.
		nflags--
		flags <<= 1
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
							return out, fmt.Errorf("xpress: match of %d bytes at input offset %#x: %w", l32, start, ErrShortBuffer)
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
			return out, fmt.Errorf("xpress: match of %d bytes at input offset %#x: %w", length, start, ErrShortBuffer)
		}
		from := out - offset
		if offset >= length && length > 32 {
			// Long, non-overlapping: memmove is fastest.
			copy(dst[out:out+length], dst[from:from+length])
			out += length
			continue
		}
		if offset >= 8 && dstLen-out >= length+8 {
			// Move 8 bytes at a time: with offset >= 8 every word read
			// lies before the word being written, so overlapping matches
			// come out right. Up to 7 bytes past the match are overwritten
			// later.
			end := out + length
			for o := out; o < end; o, from = o+8, from+8 {
				binary.LittleEndian.PutUint64(dst[o:], binary.LittleEndian.Uint64(dst[from:]))
			}
			out = end
			continue
		}
		if offset >= length {
			copy(dst[out:out+length], dst[from:from+length])
			out += length
			continue
		}
		// Overlapping match: the copied bytes repeat with period offset.
		end := out + length
		for out < end {
			n := copy(dst[out:end], dst[from:out])
			out += n
		}
	}
}
