package etl

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/internal/testenv"
)

// choices hands out the bytes of a fuzz input as the choices of a
// generator: a byte at a time, 0 once they are used up.
type choices struct {
	b []byte
}

func (c *choices) byte() byte {
	if len(c.b) == 0 {
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}

func (c *choices) n(k int) int { return int(c.byte()) % k }

func (c *choices) u32() uint32 {
	return uint32(c.byte()) | uint32(c.byte())<<8 | uint32(c.byte())<<16 | uint32(c.byte())<<24
}

// builtFile builds an .etl file from the choices in data: the log-file
// header's BufferSize and BuffersWritten, buffers on several processors
// (compressed or not, with their sequence numbers), records of every
// kind and of any time (2^62 too), buffers repeated (changed or not), and
// compressed buffers whose SavedOffset claims any size, up to 16 MiB,
// from a few bytes.
func builtFile(data []byte) []byte {
	c := &choices{b: data}
	h := defaultSynthHeader()
	h.bufSize = [...]uint32{4096, 64 << 10, 16 << 20, 0, 72, 1 << 31}[c.n(6)]
	if c.n(4) == 0 {
		h.written = c.u32() % 64
	}
	if c.n(8) == 0 {
		h.startTime = int64(c.u32()) << 32
	}
	var bufs [][]byte
	nbuf := c.n(12)
	for i := 0; i < nbuf; i++ {
		switch c.n(8) {
		case 0: // a buffer before it again, changed or not
			if len(bufs) > 0 {
				b := bytes.Clone(bufs[c.n(len(bufs))])
				if c.n(2) == 0 {
					le.PutUint64(b[0x18:], uint64(c.byte()))
				}
				if c.n(2) == 0 && len(b) > BufferHeaderSize {
					b[len(b)-1] ^= c.byte() | 1
				}
				bufs = append(bufs, b)
				continue
			}
		case 1: // a compressed buffer claiming to decompress to any size
			used := BufferHeaderSize + 24 + int(c.u32()%(16<<20))
			bufs = append(bufs, compressedBuffer(uint16(c.n(300)), int64(c.byte()), used, repeating(perfRecord(int64(c.u32())), used-BufferHeaderSize)))
			continue
		}
		var recs [][]byte
		ts := int64(1_000_000)
		for r := c.n(40); r > 0; r-- {
			switch c.n(16) {
			case 0:
				ts = 1 << 62
			case 1:
				ts = -1 << 62
			default:
				ts += int64(c.byte())
			}
			pay := make([]byte, c.n(64))
			switch c.n(5) {
			case 0:
				recs = append(recs, kernelRecord(HeaderSystem64, 2, record.GroupFileIo, c.byte(), 1, 2, ts, nil, pay))
			case 1:
				recs = append(recs, classicRecord(HeaderFull32, testGUID, c.byte(), 1, 1, 2, ts, pay))
			case 2:
				recs = append(recs, eventRecord(HeaderEventHeader64, 0, testGUID, uint16(c.byte()), 0, 0, 1, 2, ts, nil, pay))
			case 3:
				recs = append(recs, messageRecord(uint16(c.byte()), messageTimestamp, testGUID, ts, 1, 2, pay))
			default:
				recs = append(recs, perfRecord(ts))
			}
		}
		bufs = append(bufs, synthBuffer(uint16(c.n(6)), int64(c.byte()), 0, 0, 0, c.n(2) == 0, recs...))
	}
	return synthFile(h, nil, bufs...)
}

// FuzzBuiltFile builds .etl files from their size and count fields
// (builtFile: what blind bit flips rarely reach) and reads them in both
// orders: no panic, a pass ends, and it allocates at most
// 2·MaxRatio times the file plus 8 MiB (what one decompressed buffer per
// processor and the cache of them can take, never what a field claims).
func FuzzBuiltFile(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 3, 1, 0, 10, 5, 5, 5})
	f.Add([]byte{0, 1, 0, 4, 1, 1, 0xff, 0xff, 0xff, 0x00, 2, 1, 0xff, 0xff, 0xff, 0x00})
	f.Add([]byte{1, 3, 0, 6, 2, 20, 3, 9, 9, 9, 9, 9, 0, 0, 1, 1, 1, 1, 4, 0})
	// A compressed buffer of a few dozen bytes claiming 16 MiB.
	f.Add([]byte{0, 1, 1, 1, 1, 0xff, 0xff, 0xef, 0x00, 5, 1, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		file := builtFile(data)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer testenv.FailHung("reading a built .etl file")()
		for _, order := range []Order{OrderTime, OrderFile} {
			r, err := NewReader(bytes.NewReader(file), int64(len(file)), Options{Order: order})
			if err != nil {
				return
			}
			n := 0
			_, err = r.ReadKept(context.Background(), func(*record.Record) bool { n++; return n%2 == 0 }, func(*record.Record) error { return nil })
			if err != nil && err == io.EOF {
				t.Fatal("io.EOF as an error")
			}
		}
		runtime.ReadMemStats(&after)
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(2*2*MaxRatio*len(file)+8<<20); got > limit {
			t.Fatalf("a %d-byte file allocated %d bytes reading it twice (limit %d)", len(file), got, limit)
		}
	})
}
