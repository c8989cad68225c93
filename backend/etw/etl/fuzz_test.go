package etl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// fuzzSeedFiles are small synthetic ETL files covering every header type,
// compression and several processors.
func fuzzSeedFiles() [][]byte {
	pay := []byte("payload!")
	h := defaultSynthHeader()
	h32 := h
	h32.ptr = 4
	all := [][]byte{
		kernelRecord(HeaderSystem64, 3, record.GroupThread, 2, 11, 21, 1_000_002, nil, pay),
		kernelRecord(HeaderCompact32, 2, record.GroupImage, 3, 12, 22, 1_000_003, nil, pay),
		kernelRecord(HeaderPerfInfo64, 3|0x8000|0x0100, record.GroupDiskIo, 11, 0, 0, 1_000_006, make([]byte, 16), pay),
		classicRecord(HeaderFull32, testGUID, 5, 1, 14, 24, 1_000_007, pay),
		classicRecord(HeaderInstance64, testGUID, 8, 4, 17, 27, 1_000_010, pay),
		eventRecord(HeaderEventHeader64, 0, testGUID, 101, 2, 10, 19, 29, 1_000_012, []extItem{{1, make([]byte, 16)}, {12, []byte("t")}}, pay),
		messageRecord(55, messageGUID|messageTimestamp|messageSystemInfo, testGUID, 1_000_013, 30, 40, pay),
	}
	return [][]byte{
		synthFile(h, nil, synthBuffer(1, 1, 0, 0, 0, false, all...)),
		synthFile(h, nil, synthBuffer(0, 2, 0, 0, 0, true, all[:3]...), synthBuffer(1, 1, 0, BufferFlagEventsLost, 0, true, all[3:]...)),
		synthFile(h32, all[1:2], synthBuffer(3, 1, 0, 0, 256, false, all[0])),
		// No message records: every buffer can be compacted.
		synthFile(h, nil, synthBuffer(0, 2, 0, 0, 0, true, all[:6]...), synthBuffer(1, 1, 0, 0, 0, false, all[2:6]...),
			synthBuffer(0, 3, 0, 0, 0, true, all[5:6]...)),
	}
}

// FuzzReader feeds arbitrary bytes to the whole reader (index, header,
// decompression, buffer walk, merge) in both orders: it must never panic,
// every record must lie inside its buffer, and a pass must end.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeedFiles() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, order := range []Order{OrderTime, OrderFile} {
			r, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{Order: order, MaxBufferSize: 1 << 20})
			if err != nil {
				return
			}
			rs := r.Records()
			n := 0
			for ; ; n++ {
				rec, err := rs.Next()
				if err != nil {
					if err != io.EOF {
						var fe *FormatError
						if !errors.As(err, &fe) {
							t.Fatalf("error is not a FormatError: %v", err)
						}
					}
					if _, err2 := rs.Next(); err2 != err && err2.Error() != err.Error() {
						t.Fatalf("Next after the end: %v, then %v", err, err2)
					}
					break
				}
				if n > len(data) {
					t.Fatalf("more records (%d) than bytes", n)
				}
				if rec.PointerSize != 4 && rec.PointerSize != 8 {
					t.Fatalf("pointer size %d", rec.PointerSize)
				}
			}
			_ = rs.Stats()
		}
		fuzzCompacted(t, data)
	})
}

// fuzzCompacted checks, on a file FuzzReader was given, that a pass
// selected with the Selection the cache compacted buffers to delivers
// records of a full pass in order, reports the rest, and ends with the
// same stats and error.
func fuzzCompacted(t *testing.T, data []byte) {
	keep := func(r *record.Record) bool { return r.Opcode&1 == 0 }
	sel := NewSelection(keep)
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{MaxBufferSize: 1 << 20})
	if err != nil {
		return
	}
	r.Compact(sel)
	var all []flatRecord
	allStats, allErr := r.Read(context.Background(), func(rec *record.Record) error {
		all = append(all, flatten(rec))
		return nil
	})
	got, drops, st, err := readSelected(t, r, sel)
	if fmt.Sprint(err) != fmt.Sprint(allErr) {
		t.Fatalf("selected pass: error %v, full pass %v", err, allErr)
	}
	checkSelected(t, "fuzz", all, allStats, keep, got, drops, st)
}

// FuzzBufferWalk walks arbitrary bytes as the records of one buffer, as
// the reader does: no panic, every record inside the data, progress on
// every step.
func FuzzBufferWalk(f *testing.F) {
	for _, s := range fuzzSeedFiles() {
		f.Add(s[BufferHeaderSize:])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p recordParser
		p.filePointerSize = 8
		var rec record.Record
		for pos := 0; pos < len(data); {
			size, res, fe := p.parse(data, pos, &rec, 0)
			if fe != nil {
				if fe.pos < pos || fe.pos > len(data) || fe.field == "" {
					t.Fatalf("error at %d (walk at %d): %v", fe.pos, pos, fe)
				}
				return
			}
			if res == resEnd || res == resFiller {
				return
			}
			if size < 4 || pos+size > len(data) {
				t.Fatalf("record of %d bytes at %d in %d", size, pos, len(data))
			}
			if res == resRecord && len(rec.UserData) > size {
				t.Fatalf("payload %d bytes in a %d-byte record", len(rec.UserData), size)
			}
			pos += align8(size)
		}
	})
}

// FuzzLogfileHeader decodes arbitrary TRACE_LOGFILE_HEADER payloads.
func FuzzLogfileHeader(f *testing.F) {
	for _, ptr := range []int{4, 8} {
		h := defaultSynthHeader()
		h.ptr = ptr
		rec := logfileHeaderRecord(h)
		f.Add(rec[sizeSystem:], ptr == 4)
	}
	f.Fuzz(func(t *testing.T, payload []byte, is32 bool) {
		ptr := 8
		if is32 {
			ptr = 4
		}
		h, err := parseLogfileHeader(payload, ptr)
		if err != nil {
			return
		}
		_ = h.Clock()
		_ = h.WallTime(h.HeaderTimestamp + 12345)
		_ = h.EventHeader()
	})
}
