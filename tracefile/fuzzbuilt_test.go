package tracefile

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// choices hands out the bytes of a fuzz input as the choices of a
// generator: a byte at a time, 0 once they are used up.
type choices struct{ b []byte }

func (c *choices) byte() byte {
	if len(c.b) == 0 {
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}

func (c *choices) n(k int) int { return int(c.byte()) % k }

// count returns a count as a chunk may claim one: small, or up to 2^24,
// or 2^60.
func (c *choices) count(small int) uint64 {
	switch c.n(8) {
	case 0:
		return uint64(c.byte())<<16 | uint64(c.byte())<<8 | uint64(c.byte())
	case 1:
		return 1 << 60
	}
	return uint64(c.n(small))
}

// builtChunk builds a records chunk from the choices in data, by its
// count and size fields: a string table whose count may exceed its
// entries, strings of up to 64 KB, facts (stacks with address lists whose
// counts may exceed their bytes, modules, names) whose count may differ
// from what follows, events defining templates and threads, each field
// a reference that may be out of range. It returns the file.
func builtChunk(t *testing.T, data []byte) []byte {
	c := &choices{b: data}
	os := [...]string{"linux", "windows", ""}[c.n(3)]
	// Strings.
	nstr := c.n(20)
	strs := appendUvarint(nil, c.count(nstr+2))
	for range nstr {
		n := c.n(40)
		if c.n(16) == 0 {
			n = 1 << (10 + c.n(7)) // up to 64 KB
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		strs = appendString(strs, string(b))
	}
	// Facts.
	nfact := c.n(20)
	facts := appendUvarint(nil, c.count(nfact+2))
	for range nfact {
		facts = appendUvarint(facts, uint64(c.n(3)))
		kind := [...]event.FactKind{event.FactName, event.FactStack, event.FactModule, event.FactProcess}[c.n(4)]
		facts = append(facts, byte(kind))
		m := uint64(c.byte()) | uint64(c.byte())<<8 | uint64(c.byte()&0x3)<<16
		facts = appendUvarint(facts, m)
		facts = appendVarint(facts, int64(c.byte()))
		for bit := uint64(fSpace); bit <= fUser; bit <<= 1 {
			if m&bit == 0 {
				continue
			}
			switch bit {
			case fSpace:
				facts = append(facts, c.byte())
			case fDev:
				facts = appendUvarint(appendUvarint(facts, uint64(c.byte())), uint64(c.byte()))
			case fName, fImage, fDetail:
				facts = appendUvarint(facts, uint64(c.n(nstr+2)))
			case fKernel, fUser:
				n := c.count(300)
				facts = appendUvarint(facts, n)
				for i := range min(n, uint64(c.n(400))) {
					facts = appendVarint(facts, int64(i&1))
				}
			default:
				facts = appendUvarint(facts, uint64(c.byte()))
			}
		}
	}
	// Events.
	nev := c.n(40)
	events := appendUvarint(nil, c.count(nev+2))
	tmpls, thrs := 0, 0
	for range nev {
		ref := c.n(tmpls + 2)
		events = appendUvarint(events, uint64(ref))
		mask := uint64(0)
		if ref == tmpls {
			tmpls++
			mask = uint64(c.byte()&1)<<3 | uint64(c.byte()&1)<<10 | uint64(c.byte()&1)<<26
			events = append(events, c.byte(), c.byte(), c.byte(), c.byte())
			events = appendUvarint(events, uint64(c.byte()))
			events = appendUvarint(events, uint64(c.n(nstr+2)))
			events = appendUvarint(events, mask)
		}
		th := c.n(thrs + 2)
		events = appendUvarint(events, uint64(th))
		if th == thrs {
			thrs++
			for range 3 {
				events = appendUvarint(events, uint64(c.byte()))
			}
			events = appendVarint(events, int64(c.byte()))
			events = appendUvarint(events, uint64(c.n(nstr+2)))
		}
		events = appendVarint(events, int64(c.byte()))
		for bit := uint64(mPath); bit <= mStack; bit <<= 1 {
			if mask&bit != 0 {
				events = appendUvarint(events, uint64(c.n(nstr+2)))
			}
		}
	}
	return recordsChunkFile(t, os, strs, facts, events)
}

// FuzzBuiltChunk builds .iot records chunks from their count and size
// fields (builtChunk: what blind bit flips, stopped by the CRC, rarely
// reach) and reads them with the checks of FuzzReader, allocating at most
// 8 times the file plus 4 MiB (never what a count claims).
func FuzzBuiltChunk(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 2, 5, 7, 4, 1, 2, 0, 1, 255, 255, 3, 9, 9, 9})
	f.Add([]byte{1, 5, 1, 0, 3, 3, 9, 1, 1, 0, 0xff, 0xff, 3, 0, 0, 0, 7, 2, 2, 1, 1, 1, 0, 1, 5, 6})
	// A stack whose address count claims 2^60.
	f.Add([]byte{0, 1, 2, 3, 2, 0, 1, 0, 0, 0x30, 0, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		file := builtChunk(t, data)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer testenv.FailHung("reading a built .iot chunk")()
		if r, err := NewReader(bytes.NewReader(file)); err == nil {
			_ = r.Run(context.Background(), discardSink{})
		}
		runtime.ReadMemStats(&after)
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(8*len(file)+4<<20); got > limit {
			t.Fatalf("a %d-byte file allocated %d bytes (limit %d)", len(file), got, limit)
		}
		checkFile(t, file)
	})
}
