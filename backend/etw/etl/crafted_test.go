package etl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/backend/etw/xpress"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/bounded"
)

// Files built on purpose from the format's own size and count fields
// (issue 35): each is generated here, never stored.

// repeating returns a plain-LZ77 stream that decompresses to rec, then
// rec again and again up to n bytes in all: its literals and one match
// (the tokens xpress.Compress writes), a few dozen bytes whatever n.
func repeating(rec []byte, n int) []byte {
	out := binary.LittleEndian.AppendUint32(nil, 0) // the flag word, set below
	out = append(out, rec...)
	l := n - len(rec) - 3 // the match's length less the minimum
	out = binary.LittleEndian.AppendUint16(out, uint16((len(rec)-1)<<3|7))
	out = append(out, 15, 255) // the length's nibble and byte: longer still
	out = binary.LittleEndian.AppendUint16(out, 0)
	out = binary.LittleEndian.AppendUint32(out, uint32(l))
	// Flags, from the top bit: a literal (0) per byte of rec, the match
	// (1), then 1s: a match with no input left ends the stream.
	binary.LittleEndian.PutUint32(out, math.MaxUint32>>len(rec))
	return out
}

// compressedBuffer returns a compressed buffer of processor cpu whose
// records stream decompresses to used-BufferHeaderSize bytes.
func compressedBuffer(cpu uint16, seq int64, used int, stream []byte) []byte {
	b := make([]byte, BufferHeaderSize, BufferHeaderSize+len(stream))
	b = append(b, stream...)
	le.PutUint32(b[0x00:], uint32(len(b)))
	le.PutUint32(b[0x04:], uint32(used))
	le.PutUint32(b[0x08:], uint32(used))
	le.PutUint64(b[0x10:], 133000000000000000)
	le.PutUint64(b[0x18:], uint64(seq))
	le.PutUint16(b[0x28:], cpu)
	le.PutUint32(b[0x30:], uint32(used))
	le.PutUint16(b[0x34:], BufferFlagCompressed|BufferFlagProcIndex)
	return b
}

// perfRecord is a 24-byte PERFINFO record at ts.
func perfRecord(ts int64) []byte {
	return kernelRecord(HeaderPerfInfo64, 2, record.GroupPerfInfo, 46, 0, 0, ts, nil, make([]byte, 8))
}

// TestRepeating checks the generator: its stream decompresses to what it
// says.
func TestRepeating(t *testing.T) {
	rec := perfRecord(1_000_100)
	s := repeating(rec, 1<<20)
	dst := make([]byte, 1<<20)
	n, err := xpress.Decompress(dst, s)
	if err != nil || n != 1<<20 || !bytes.Equal(dst[:24], rec) || !bytes.Equal(dst[24:48], rec) {
		t.Fatalf("%d bytes of %d from %d, %v", n, 1<<20, len(s), err)
	}
}

// readData reads the file data with opts, every record to a function that
// does nothing, and returns the count and the error.
func readData(data []byte, opts Options) (int, event.Stats, error) {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		return 0, event.Stats{}, err
	}
	n := 0
	st, err := r.Read(context.Background(), func(*record.Record) error { n++; return nil })
	return n, st, err
}

// TestInflatingBuffers: compressed buffers of a few dozen bytes that
// claim to decompress to 16 MiB each, on 32 and on 256 processors, with
// the log-file header saying 64 KiB or 16 MiB: each is refused before
// anything is allocated for it (a decompressed buffer is at most
// BufferSize and MaxRatio times its compressed records), in well under
// 2 s and 100 MB.
func TestInflatingBuffers(t *testing.T) {
	for _, c := range []struct {
		cpus    int
		bufSize uint32
	}{{32, 64 << 10}, {256, 64 << 10}, {32, 16 << 20}} {
		h := defaultSynthHeader()
		h.bufSize, h.cpus = c.bufSize, uint32(c.cpus)
		var bufs [][]byte
		for cpu := range c.cpus {
			used := 16 << 20
			bufs = append(bufs, compressedBuffer(uint16(cpu), 1, used, repeating(perfRecord(int64(1_000_100+cpu)), used-BufferHeaderSize)))
		}
		file := synthFile(h, nil, bufs...)
		what := fmt.Sprintf("%d processors × 16 MiB in %d bytes, BufferSize %d", c.cpus, len(file), c.bufSize)
		var n int
		var st event.Stats
		var err error
		bounded.Check(t, what, bounded.Default, func(func()) { n, st, err = readData(file, Options{}) })
		if n != 1 || err == nil || !strings.Contains(err.Error(), "decompresses to 16777216, more than it may") {
			t.Errorf("%s: %d records, %v", what, n, err)
		}
		if got := st.Get(event.CountLost, "etl: unreadable buffers skipped (corrupt)"); got != uint64(c.cpus) {
			t.Errorf("%s: %d buffers counted unreadable", what, got)
		}
	}
	// Buffers as a logger writes them (records of their own times),
	// within BufferSize and MaxRatio: read, 64 KiB a processor.
	h := defaultSynthHeader()
	h.bufSize = 64 << 10
	var bufs [][]byte
	const per = (64<<10 - BufferHeaderSize) / 24
	for cpu := range 256 {
		var recs [][]byte
		for i := range per {
			recs = append(recs, perfRecord(int64(1_000_100+cpu*per+i)))
		}
		bufs = append(bufs, synthBuffer(uint16(cpu), 1, 0, 0, 0, true, recs...))
	}
	file := synthFile(h, nil, bufs...)
	var n int
	var err error
	bounded.Check(t, fmt.Sprintf("256 processors × 64 KiB in %d bytes", len(file)), bounded.Default, func(func()) { n, _, err = readData(file, Options{}) })
	if want := 1 + 256*per; n != want || err != nil {
		t.Errorf("256 processors × 64 KiB: %d records (want %d), %v", n, want, err)
	}
}

// spin is a busy loop's rounds in 50 µs or so.
const spin = 50_000

// TestCancelledWhileRejecting: a pass whose keep function rejects every
// record stops within a second of its context's cancel, however long the
// walk (the pass used to look at the context only between records it
// delivered).
func TestCancelledWhileRejecting(t *testing.T) {
	var bufs [][]byte
	for b := range 40 {
		var recs [][]byte
		for i := range 2000 {
			recs = append(recs, perfRecord(int64(1_000_100+b*2000+i)))
		}
		bufs = append(bufs, synthBuffer(0, int64(b+1), 0, 0, 0, false, recs...))
	}
	file := synthFile(defaultSynthHeader(), nil, bufs...)
	r, err := NewReader(bytes.NewReader(file), int64(len(file)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 80,000 records, some 50 µs each: 4 s. (A loop, not the clock:
	// Windows' clock may tick every 15 ms.)
	var sink uint64
	slow := func(*record.Record) bool {
		for i := range uint64(spin) {
			sink += i * i
		}
		return sink == 1
	}
	err = bounded.Cancelled(t, "a pass rejecting every record", 200*time.Millisecond, time.Second, func(ctx context.Context) error {
		_, err := r.ReadKept(ctx, slow, func(*record.Record) error { return nil })
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v, want context.Canceled", err)
	}
}

// TestRepeatedBuffers: a buffer copied with a new SequenceNumber or
// TimeStamp is a duplicate (not read again, nothing lost); a copy with a
// record changed begins before the buffer before it on its processor:
// damage, not read; a buffer the logger did not count (BuffersWritten)
// is read, and reported.
func TestRepeatedBuffers(t *testing.T) {
	buf := func(seq int64, from int64) []byte {
		var recs [][]byte
		for i := range 10 {
			recs = append(recs, perfRecord(from+int64(i)))
		}
		return synthBuffer(0, seq, 0, 0, 0, true, recs...)
	}
	bufs := [][]byte{buf(1, 1_000_100), buf(2, 1_000_200), buf(3, 1_000_300), buf(4, 1_000_400)}
	h := defaultSynthHeader()
	h.written = 5
	good := synthFile(h, nil, bufs...)
	if n, _, err := readData(good, Options{}); n != 41 || err != nil {
		t.Fatalf("intact: %d records, %v", n, err)
	}
	copyOf := func(b []byte, edit func([]byte)) []byte {
		c := bytes.Clone(b)
		edit(c)
		return c
	}
	newSeq := copyOf(bufs[1], func(c []byte) { le.PutUint64(c[0x18:], 9) })
	newTime := copyOf(bufs[1], func(c []byte) { le.PutUint64(c[0x10:], le.Uint64(c[0x10:])+1) })
	otherCPU := copyOf(bufs[1], func(c []byte) { le.PutUint16(c[0x28:], 3) })
	changed := copyOf(bufs[1], func(c []byte) {
		le.PutUint64(c[0x18:], 9)
		c[len(c)-1] ^= 0x40 // a literal of its last record
	})
	foreign := buf(5, 1_000_500)
	for _, c := range []struct {
		what   string
		add    []byte
		n      int
		target error
		lost   string // a counter of what was not read, or ""
	}{
		{"copy with a new sequence number", newSeq, 41, ErrDuplicate, ""},
		{"copy with a new time stamp", newTime, 41, ErrDuplicate, ""},
		{"copy on another processor", otherCPU, 41, ErrDuplicate, ""},
		{"copy with a record changed", changed, 41, ErrCorrupt, StatOverlapping},
		{"a buffer more than the logger wrote", append(bytes.Clone(foreign), buf(6, 1_000_600)...), 61, ErrExtra, ""},
	} {
		file := append(bytes.Clone(good), c.add...)
		n, st, err := readData(file, Options{})
		var fe *FormatError
		if n != c.n || !errors.Is(err, c.target) || !errors.As(err, &fe) || fe.BufferOffset < int64(len(good)) || fe.RestUnread {
			t.Errorf("%s: %d records (want %d), err %v (want %v at offset %d or after)", c.what, n, c.n, err, c.target, len(good))
		}
		if c.lost != "" && st.Get(event.CountLost, c.lost) != 1 {
			t.Errorf("%s: not counted lost: %+v", c.what, st.Counters)
		}
		if c.target == ErrExtra && st.Get(event.CountInfo, StatExtra) != 2 {
			t.Errorf("%s: not counted: %+v", c.what, st.Counters)
		}
	}
}

// TestTimesOutsideTheTrace: a record timestamp near 2^62 or -2^62 is
// clamped to the trace's time range and counted (it printed at -0.0002 s);
// a header StartTime of the largest int64 is an unknown start, not
// 2185-07-21.
func TestTimesOutsideTheTrace(t *testing.T) {
	h := defaultSynthHeader()
	recs := [][]byte{perfRecord(1_000_100), perfRecord(1 << 62), perfRecord(-1 << 62), perfRecord(1_000_200)}
	file := synthFile(h, nil, synthBuffer(0, 1, 0, 0, 0, false, recs...))
	got, st, err := readBytes(t, file, Options{Order: OrderFile})
	if err != nil || len(got) != 5 {
		t.Fatalf("%d records, %v", len(got), err)
	}
	r, _ := NewReader(bytes.NewReader(file), int64(len(file)), Options{})
	hd := r.Header()
	c := hd.Clock()
	// EndTime is StartTime + 1 s (synthFile): the range reaches 1 h
	// beyond twice the session, and as far before it.
	hi, lo := c.ToNanos(got[2].Timestamp), c.ToNanos(got[3].Timestamp)
	if hi != 2*int64(time.Second)+int64(time.Hour) || lo != -int64(time.Second)-int64(time.Hour) {
		t.Errorf("clamped to %v and %v from time 0", time.Duration(hi), time.Duration(lo))
	}
	if st.Get(event.CountDropped, StatClamped) != 2 {
		t.Errorf("clamped records not counted: %+v", st.Counters)
	}
	if wall := hd.WallTime(got[2].Timestamp); wall.Before(hd.WallTime(got[1].Timestamp)) {
		t.Errorf("a clamped record's wall time %v is before the first record's", wall)
	}
	h.startTime = math.MaxInt64
	r, err = NewReader(bytes.NewReader(synthFile(h, nil)), int64(len(synthFile(h, nil))), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Header().StartWall(); w != 0 {
		t.Errorf("StartTime of the largest int64: start %v, want unknown (0)", time.Unix(0, w).UTC())
	}
	if FiletimeToUnixNano(maxFiletime) <= 0 || FiletimeToUnixNano(maxFiletime+1) != 0 || FiletimeToUnixNano(minFiletime-1) != 0 {
		t.Error("FiletimeToUnixNano: the representable range is wrong")
	}
}
