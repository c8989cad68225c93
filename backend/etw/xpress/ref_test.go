package xpress

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// decompressRef is the straightforward decoder the fast one replaced
// (one flag word at a time, exact copies): the reference that
// TestDifferential and FuzzDifferential compare Decompress against, output
// bytes and errors alike.
func decompressRef(dst, src []byte) (int, error) {
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
			copy(dst[out:out+run], src[in:in+run])
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
		// Byte by byte: an overlapping match repeats its period.
		for i := 0; i < length; i++ {
			dst[out+i] = dst[out-offset+i]
		}
		out += length
	}
}
