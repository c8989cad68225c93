package xpress

import "encoding/binary"

const (
	minMatch  = 3
	maxOffset = 1 << 13 // 13 offset bits
	hashBits  = 14
)

// Compress appends the plain-LZ77 encoding of src to dst and returns the
// result. It is a simple greedy encoder (one hash probe per position): the
// output is valid for any decoder of the format, not as small as the
// Windows encoder makes it.
func Compress(dst, src []byte) []byte {
	var table [1 << hashBits]int32 // position+1 of the last occurrence of a hash
	flagPos := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var flags uint32
	nflags := 0
	halfByte := -1

	addFlag := func(bit uint32) {
		if nflags == 32 {
			binary.LittleEndian.PutUint32(dst[flagPos:], flags)
			flagPos = len(dst)
			dst = append(dst, 0, 0, 0, 0)
			flags, nflags = 0, 0
		}
		flags = flags<<1 | bit
		nflags++
	}

	for i := 0; i < len(src); {
		length, offset := 0, 0
		if i+minMatch <= len(src) {
			h := (uint32(src[i]) | uint32(src[i+1])<<8 | uint32(src[i+2])<<16) * 2654435761 >> (32 - hashBits)
			cand := int(table[h]) - 1
			table[h] = int32(i + 1)
			if cand >= 0 && i-cand <= maxOffset {
				n := 0
				for i+n < len(src) && src[cand+n] == src[i+n] {
					n++
				}
				if n >= minMatch {
					length, offset = n, i-cand
				}
			}
		}
		if length == 0 {
			addFlag(0)
			dst = append(dst, src[i])
			i++
			continue
		}
		addFlag(1)
		l := length - minMatch
		if l < 7 {
			dst = binary.LittleEndian.AppendUint16(dst, uint16((offset-1)<<3|l))
		} else {
			dst = binary.LittleEndian.AppendUint16(dst, uint16((offset-1)<<3|7))
			l -= 7
			nib := l
			if nib > 15 {
				nib = 15
			}
			if halfByte < 0 {
				halfByte = len(dst)
				dst = append(dst, byte(nib))
			} else {
				dst[halfByte] |= byte(nib << 4)
				halfByte = -1
			}
			if l >= 15 {
				l -= 15
				if l < 255 {
					dst = append(dst, byte(l))
				} else {
					dst = append(dst, 255)
					full := length - minMatch
					if full <= 0xFFFF {
						dst = binary.LittleEndian.AppendUint16(dst, uint16(full))
					} else {
						dst = binary.LittleEndian.AppendUint16(dst, 0)
						dst = binary.LittleEndian.AppendUint32(dst, uint32(full))
					}
				}
			}
		}
		i += length
	}
	// Fill the last flag word with 1 bits: a match flag with no input left
	// marks the end.
	if nflags == 32 {
		binary.LittleEndian.PutUint32(dst[flagPos:], flags)
		flagPos = len(dst)
		dst = append(dst, 0, 0, 0, 0)
		flags, nflags = 0, 0
	}
	flags = flags<<(32-uint(nflags)) | (1<<(32-uint(nflags)) - 1)
	binary.LittleEndian.PutUint32(dst[flagPos:], flags)
	return dst
}
