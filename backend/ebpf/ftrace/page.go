package ftrace

import (
	"encoding/binary"
	"fmt"
)

var le = binary.LittleEndian

// Ring-buffer event header types (events/header_event): type_len 1 to 28
// is a data record of type_len*4 bytes, 0 one whose length follows.
const (
	typePadding    = 29
	typeTimeExtend = 30
	typeTimeStamp  = 31
	tsShift        = 27
	// commit flags: events were lost before this page (and their count is
	// stored after the data).
	missedEvents = 1 << 31
	missedStored = 1 << 30
	commitMask   = missedStored - 1
	// tsMSB: the bits of a time stamp an absolute-time event does not
	// carry (they come from the page's time).
	tsMSB = uint64(0xf8) << 56
)

// PageInfo is what a page says besides its records.
type PageInfo struct {
	// Missed is set when the kernel dropped events before this page;
	// MissedCount is their number when the page stored it (else 0).
	Missed      bool
	MissedCount uint64
}

// DecodePage calls fn for each data record of one page read from
// trace_pipe_raw, with its time stamp (the instance's trace clock, ns)
// and its bytes (common_type first; padded to 4 bytes). rec is only valid
// during the call. A malformed page is an error; the records before the
// damage have been delivered.
func DecodePage(b []byte, h PageHeader, fn func(ts uint64, rec []byte)) (PageInfo, error) {
	var info PageInfo
	if len(b) < h.DataOffset || h.DataOffset < h.TimestampOffset+8 || h.DataOffset < h.CommitOffset+h.CommitSize {
		return info, fmt.Errorf("ftrace page: %d bytes, header needs %d", len(b), h.DataOffset)
	}
	ts := le.Uint64(b[h.TimestampOffset:])
	var commit uint64
	if h.CommitSize == 8 {
		commit = le.Uint64(b[h.CommitOffset:])
	} else {
		commit = uint64(le.Uint32(b[h.CommitOffset:]))
	}
	data := b[h.DataOffset:]
	size := commit & commitMask
	if size > uint64(len(data)) {
		return info, fmt.Errorf("ftrace page: commit says %d bytes of data, the page holds %d", size, len(data))
	}
	if commit&missedEvents != 0 {
		info.Missed = true
		if commit&missedStored != 0 && size+8 <= uint64(len(data)) {
			info.MissedCount = le.Uint64(data[size:])
		}
	}
	data = data[:size]
	for off := 0; off+4 <= len(data); {
		hdr := le.Uint32(data[off:])
		typ, delta := hdr&31, uint64(hdr>>5)
		switch {
		case typ == typePadding:
			if delta == 0 {
				return info, nil // the rest of the page is empty
			}
			n, err := arrayLen(data, off)
			if err != nil {
				return info, err
			}
			off += 4 + n // a discarded record: its time does not count (as the kernel's reader)
		case typ == typeTimeExtend:
			if off+8 > len(data) {
				return info, fmt.Errorf("ftrace page: time extend cut at byte %d", off)
			}
			ts += uint64(le.Uint32(data[off+4:]))<<tsShift + delta
			off += 8
		case typ == typeTimeStamp:
			if off+8 > len(data) {
				return info, fmt.Errorf("ftrace page: time stamp cut at byte %d", off)
			}
			abs := uint64(le.Uint32(data[off+4:]))<<tsShift | delta
			if ts&tsMSB != 0 {
				abs |= ts & tsMSB
				if abs < ts {
					abs += 1 << 59
				}
			}
			ts = abs
			off += 8
		case typ == 0:
			n, err := arrayLen(data, off)
			if err != nil {
				return info, err
			}
			if n < 4 {
				return info, fmt.Errorf("ftrace page: record at byte %d says %d bytes", off, n)
			}
			ts += delta
			fn(ts, data[off+8:off+4+n])
			off += 4 + n
		default:
			n := int(typ) * 4
			if off+4+n > len(data) {
				return info, fmt.Errorf("ftrace page: record at byte %d of %d bytes runs past the data (%d)", off, n, len(data))
			}
			ts += delta
			fn(ts, data[off+4:off+4+n])
			off += 4 + n
		}
	}
	return info, nil
}

// arrayLen reads the length word of a record at off and checks that the
// record (4 + length bytes) fits.
func arrayLen(data []byte, off int) (int, error) {
	if off+8 > len(data) {
		return 0, fmt.Errorf("ftrace page: record header cut at byte %d", off)
	}
	n := int(le.Uint32(data[off+4:]))
	if n > len(data)-off-4 || n < 4 {
		return 0, fmt.Errorf("ftrace page: record at byte %d says %d bytes, %d remain", off, n, len(data)-off-4)
	}
	return n, nil
}
