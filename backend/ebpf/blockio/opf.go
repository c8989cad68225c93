package blockio

import "github.com/iotrace/iotrace/event"

// OpfLayout says how the kernel encodes bio->bi_opf: the operation in the
// low bits, request flags above. The values moved between kernel
// versions, so the Linux loader reads them from the running kernel's BTF
// (enums req_op and req_flag_bits); [DefaultOpfLayout] holds those of
// Linux 6.x.
type OpfLayout struct {
	OpMask uint32
	// Operation codes (after OpMask).
	Read, Write, Flush, Discard, SecureErase, WriteZeroes, ZoneAppend uint32
	// Flag masks.
	Sync, Meta, FUA, Preflush, Readahead uint32
}

// DefaultOpfLayout returns the bi_opf encoding of Linux 4.10 to 6.18.
func DefaultOpfLayout() OpfLayout {
	return OpfLayout{
		OpMask: 1<<8 - 1,
		Read:   0, Write: 1, Flush: 2, Discard: 3, SecureErase: 5, WriteZeroes: 9, ZoneAppend: 7,
		Sync: 1 << 11, Meta: 1 << 12, FUA: 1 << 17, Preflush: 1 << 18, Readahead: 1 << 19,
	}
}

// Op returns the normalized op of a bio with bi_opf opf and bytes bytes.
// An empty write with a preflush is a flush, as the kernel issues them.
func (l *OpfLayout) Op(opf, bytes uint32) event.Op {
	switch op := opf & l.OpMask; op {
	case l.Read:
		return event.OpBlockRead
	case l.Write, l.ZoneAppend:
		if bytes == 0 && opf&l.Preflush != 0 {
			return event.OpBlockFlush
		}
		return event.OpBlockWrite
	case l.Flush:
		return event.OpBlockFlush
	case l.Discard, l.SecureErase, l.WriteZeroes:
		return event.OpBlockDiscard
	}
	return event.OpUnknown
}

// Flags returns the normalized flags that opf carries.
func (l *OpfLayout) Flags(opf uint32) event.Flags {
	var f event.Flags
	if opf&l.Sync != 0 {
		f |= event.FlagSync
	}
	if opf&l.Meta != 0 {
		f |= event.FlagMeta
	}
	if opf&l.FUA != 0 {
		f |= event.FlagFUA
	}
	if opf&l.Preflush != 0 {
		f |= event.FlagPreflush
	}
	if opf&l.Readahead != 0 {
		f |= event.FlagReadahead
	}
	switch opf & l.OpMask {
	case l.Discard, l.SecureErase, l.WriteZeroes:
		f |= event.FlagDiscard
	}
	return f
}

// RWBS renders opf the way the kernel's block tracepoints and blktrace do
// ("R", "WS", "FWFS", "RA", "D", "DE"), appended to b.
func (l *OpfLayout) RWBS(b []byte, opf uint32) []byte {
	if opf&l.Preflush != 0 {
		b = append(b, 'F')
	}
	switch opf & l.OpMask {
	case l.Write, l.ZoneAppend:
		b = append(b, 'W')
	case l.Discard:
		b = append(b, 'D')
	case l.SecureErase:
		b = append(b, 'D', 'E')
	case l.Flush:
		b = append(b, 'F')
	case l.Read:
		b = append(b, 'R')
	default:
		b = append(b, 'N')
	}
	if opf&l.FUA != 0 {
		b = append(b, 'F')
	}
	if opf&l.Readahead != 0 {
		b = append(b, 'A')
	}
	if opf&l.Sync != 0 {
		b = append(b, 'S')
	}
	if opf&l.Meta != 0 {
		b = append(b, 'M')
	}
	return b
}

// rwbsKey keeps the bits of opf that RWBS looks at.
func (l *OpfLayout) rwbsKey(opf uint32) uint32 {
	return opf & (l.OpMask | l.Sync | l.Meta | l.FUA | l.Preflush | l.Readahead)
}
