package etl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

func readBytes(t testing.TB, data []byte, opts Options) ([]record.Record, event.Stats, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	var out []record.Record
	st, err := r.Read(context.Background(), func(rec *record.Record) error {
		out = append(out, rec.Clone())
		return nil
	})
	return out, st, err
}

var testGUID = mustGUID("11111111-2222-3333-4455-66778899aabb")

// TestEveryHeaderType decodes one record of each header type, 32 and 64
// bit, from byte-exact synthetic buffers.
func TestEveryHeaderType(t *testing.T) {
	pay := []byte("payload!")
	pebs := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	pmc := bytes.Repeat([]byte{9}, 16)
	recs := [][]byte{
		kernelRecord(HeaderSystem32, 2, record.GroupProcess, 1, 10, 20, 2_000_001, nil, pay),
		kernelRecord(HeaderSystem64, 3, record.GroupThread, 2, 11, 21, 2_000_002, nil, pay),
		kernelRecord(HeaderCompact32, 2, record.GroupImage, 3, 12, 22, 2_000_003, nil, pay),
		kernelRecord(HeaderCompact64, 2, record.GroupImage, 4, 13, 23, 2_000_004, nil, pay),
		kernelRecord(HeaderPerfInfo32, 2, record.GroupDiskIo, 10, 0, 0, 2_000_005, nil, pay),
		kernelRecord(HeaderPerfInfo64, 3|0x8000|0x0200, record.GroupDiskIo, 11, 0, 0, 2_000_006, append(append([]byte{}, pebs...), pmc...), pay),
		classicRecord(HeaderFull32, testGUID, 5, 1, 14, 24, 2_000_007, pay),
		classicRecord(HeaderFull64, testGUID, 6, 2, 15, 25, 2_000_008, pay),
		classicRecord(HeaderInstance32, testGUID, 7, 3, 16, 26, 2_000_009, pay),
		classicRecord(HeaderInstance64, testGUID, 8, 4, 17, 27, 2_000_010, pay),
		eventRecord(HeaderEventHeader32, EventHeaderFlag32BitHeader, testGUID, 100, 1, 9, 18, 28, 2_000_011, nil, pay),
		eventRecord(HeaderEventHeader64, EventHeaderFlag64BitHeader, testGUID, 101, 2, 10, 19, 29, 2_000_012,
			[]extItem{{1, bytes.Repeat([]byte{0xAB}, 16)}, {11, []byte("schema")}, {12, []byte("traits!!!")}}, pay),
		messageRecord(55, messageSequence|messageGUID|messageTimestamp|messageSystemInfo|messagePointer32, testGUID, 2_000_013, 30, 40, pay),
		messageRecord(56, messageComponentID, testGUID, 0, 0, 0, pay),       // no timestamp: takes the previous one
		{0x10, 0x00, HeaderTimed, 0xC0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, // TIMED: skipped, counted
	}
	data := synthFile(defaultSynthHeader(), nil, synthBuffer(1, 1, BufferTypeGeneric, 0, 4096, false, recs...))
	got, st, err := readBytes(t, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1+14 {
		t.Fatalf("%d records, want 15", len(got))
	}
	if st.Get(event.CountDropped, "etl: records skipped (header type TIMED)") != 1 {
		t.Errorf("TIMED record not counted: %v", st.Counters)
	}
	got = got[1:] // the log-file header
	for i, rec := range got {
		if !bytes.Equal(rec.UserData, pay) {
			t.Errorf("record %d (%s): payload %q", i, HeaderTypeName(rec.HeaderType), rec.UserData)
		}
		if rec.CPU != 1 || rec.Buffer != 1 {
			t.Errorf("record %d: cpu %d buffer %d", i, rec.CPU, rec.Buffer)
		}
	}
	type want struct {
		kind      record.Kind
		group, op uint8
		version   uint16
		ptr       int
		tid       uint32
	}
	wants := []want{
		{record.KindSystem, record.GroupProcess, 1, 2, 4, 10},
		{record.KindSystem, record.GroupThread, 2, 3, 8, 11},
		{record.KindCompact, record.GroupImage, 3, 2, 4, 12},
		{record.KindCompact, record.GroupImage, 4, 2, 8, 13},
		{record.KindPerfInfo, record.GroupDiskIo, 10, 2, 4, record.NoID},
		{record.KindPerfInfo, record.GroupDiskIo, 11, 3, 8, record.NoID},
		{record.KindClassic, 0, 5, 1, 4, 14},
		{record.KindClassic, 0, 6, 2, 8, 15},
		{record.KindInstance, 0, 7, 3, 4, 16},
		{record.KindInstance, 0, 8, 4, 8, 17},
		{record.KindEvent, 0, 9, 1, 4, 18},
		{record.KindEvent, 0, 10, 2, 8, 19},
		{record.KindMessage, 0, 0, 0, 4, 30},
		{record.KindMessage, 0, 0, 0, 8, record.NoID},
	}
	for i, w := range wants {
		rec := got[i]
		if rec.Kind != w.kind || rec.Group != w.group || rec.Opcode != w.op || rec.Version != w.version || rec.PointerSize != w.ptr || rec.ThreadID != w.tid {
			t.Errorf("record %d (%s): kind %v group %d op %d v%d ptr %d tid %d, want %+v", i, HeaderTypeName(rec.HeaderType),
				rec.Kind, rec.Group, rec.Opcode, rec.Version, rec.PointerSize, rec.ThreadID, w)
		}
		wantTS := int64(2_000_001 + i)
		if i == 13 {
			wantTS = 2_000_013
		}
		if rec.Timestamp != wantTS {
			t.Errorf("record %d: timestamp %d, want %d", i, rec.Timestamp, wantTS)
		}
	}
	if g := got[0].Provider; g != GroupGUID(record.GroupProcess) {
		t.Errorf("SYSTEM provider %s", g)
	}
	for _, i := range []int{6, 7, 8, 9, 10, 11, 12} {
		if got[i].Provider != testGUID {
			t.Errorf("record %d: provider %s", i, got[i].Provider)
		}
	}
	if got[13].Provider != (record.GUID{}) {
		t.Errorf("component-id message: provider %s, want zero", got[13].Provider)
	}
	// PERFINFO extensions.
	if ext := got[5].Ext; len(ext) != 2 || ext[0].Type != ExtTypePEBSIndex || !bytes.Equal(ext[0].Data, pebs) || ext[1].Type != ExtTypePMCCounters || !bytes.Equal(ext[1].Data, pmc) {
		t.Errorf("PERFINFO ext: %+v", ext)
	}
	// EVENT_HEADER descriptor and extended items.
	ev := got[11]
	if ev.ID != 101 || ev.Channel != 11 || ev.Level != 4 || ev.Task != 7 || ev.Keyword != 0x8000000000000010 || ev.ProcessID != 29 {
		t.Errorf("descriptor: %+v", ev)
	}
	if len(ev.Ext) != 3 || ev.Ext[0].Type != 1 || len(ev.Ext[0].Data) != 16 || string(ev.Ext[1].Data) != "schema" || string(ev.Ext[2].Data) != "traits!!!" {
		t.Errorf("ext items: %+v", ev.Ext)
	}
	if got[12].ID != 55 || got[12].ProcessID != 40 {
		t.Errorf("message: id %d pid %d", got[12].ID, got[12].ProcessID)
	}
}

// TestMergeOrder builds three processor streams whose buffers lie out of
// order in the file and checks the merge: time order, ties by processor,
// each processor's buffers by sequence number.
func TestMergeOrder(t *testing.T) {
	ev := func(ts int64, tid uint32) []byte {
		return kernelRecord(HeaderSystem64, 2, record.GroupThread, 1, tid, 1, ts, nil, []byte{1, 2, 3})
	}
	h := defaultSynthHeader()
	data := synthFile(h, nil,
		synthBuffer(2, 5, 0, 0, 0, true, ev(1_000_050, 1), ev(1_000_060, 2)), // cpu 2, second buffer
		synthBuffer(0, 2, 0, 0, 0, false, ev(1_000_010, 3), ev(1_000_030, 4)),
		synthBuffer(2, 3, 0, 0, 0, false, ev(1_000_020, 5), ev(1_000_030, 6)), // cpu 2, first buffer
		synthBuffer(1, 4, 0, 0, 0, true, ev(1_000_030, 7), ev(1_000_070, 8)),
	)
	got, _, err := readBytes(t, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tids []uint32
	for _, r := range got[1:] {
		tids = append(tids, r.ThreadID)
	}
	want := []uint32{3, 5, 4, 7, 6, 1, 2, 8}
	if !equalU32(tids, want) {
		t.Errorf("merged order %v, want %v", tids, want)
	}
	got, _, err = readBytes(t, data, Options{Order: OrderFile})
	if err != nil {
		t.Fatal(err)
	}
	tids = tids[:0]
	for _, r := range got[1:] {
		tids = append(tids, r.ThreadID)
	}
	if want := []uint32{1, 2, 3, 4, 5, 6, 7, 8}; !equalU32(tids, want) {
		t.Errorf("file order %v, want %v", tids, want)
	}
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestClockTypes checks timestamp conversion for the three clock types
// and 32-bit log-file headers.
func TestClockTypes(t *testing.T) {
	start := int64(133000000000000000) // FILETIME
	startWall := FiletimeToTime(start)
	for _, c := range []struct {
		name   string
		h      synthHeader
		ts     int64 // a record timestamp
		wantNs int64 // its time from the start
		kind   event.ClockKind
	}{
		{"qpc", synthHeader{ptr: 8, clockType: ClockTypeQPC, perfFreq: 3_117_777, headerTS: 5_000_000}, 5_000_000 + 3_117_777*2, 2_000_000_000, event.ClockQPC},
		{"qpc32", synthHeader{ptr: 4, clockType: ClockTypeQPC, perfFreq: 10_000_000, headerTS: 1}, 1 + 15, 1500, event.ClockQPC},
		{"systemtime", synthHeader{ptr: 8, clockType: ClockTypeSystemTime, headerTS: start}, start + 10_000_000, 1_000_000_000, event.ClockFiletime},
		{"cycles", synthHeader{ptr: 8, clockType: ClockTypeCPUCycles, cpuMHz: 2500, headerTS: 1_000}, 1_000 + 2_500_000_000, 1_000_000_000, event.ClockCycles},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.h.startTime = start
			c.h.logger, c.h.file = "s", "f"
			data := synthFile(c.h, nil, synthBuffer(0, 1, 0, 0, 0, false,
				kernelRecord(HeaderSystem64, 2, record.GroupThread, 1, 1, 1, c.ts, nil, nil)))
			r, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			h := r.Header()
			if h.PointerSize != uint32(c.h.ptr) || h.LoggerName != "s" || h.LogFileName != "f" || h.TimeZoneBias != -60 || h.TimeZoneName != "W. Europe Standard Time" {
				t.Errorf("header: %+v", *h)
			}
			clk := h.Clock()
			if clk.Kind != c.kind || clk.Origin != c.h.headerTS {
				t.Errorf("clock %+v", clk)
			}
			if got := clk.ToNanos(c.ts); got != c.wantNs {
				t.Errorf("ToNanos = %d, want %d", got, c.wantNs)
			}
			if got, want := h.WallTime(c.ts), startWall.Add(time.Duration(c.wantNs)); !got.Equal(want) {
				t.Errorf("WallTime = %v, want %v", got, want)
			}
			eh := h.EventHeader()
			if eh.OS != "windows" || eh.StartWall != startWall.UnixNano() || eh.Clock != clk || eh.PointerSize != uint8(c.h.ptr) || eh.Source != event.SourceETLFile {
				t.Errorf("event header %+v", eh)
			}
		})
	}
}

// TestLossFlags checks that per-buffer loss flags and the header's counts
// reach the Stats.
func TestLossFlags(t *testing.T) {
	h := defaultSynthHeader()
	h.eventsLost, h.buffersLst = 7, 2
	ev := kernelRecord(HeaderSystem64, 2, record.GroupThread, 1, 1, 1, 1_000_001, nil, nil)
	data := synthFile(h, nil,
		synthBuffer(0, 1, 0, BufferFlagEventsLost, 0, false, ev),
		synthBuffer(1, 2, 0, BufferFlagBufferLost|BufferFlagEventsLost, 0, true, ev))
	_, st, err := readBytes(t, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint64{
		"etl: events lost by the session (header EventsLost)":   7,
		"etl: buffers lost by the session (header BuffersLost)": 2,
		"etl: buffers flagged EVENTS_LOST":                      2,
		"etl: buffers flagged BUFFER_LOST":                      1,
	} {
		if got := st.Get(event.CountLost, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// fixtureBytes returns the bytes of a shared fixture.
func fixtureBytes(t testing.TB, name string) []byte {
	r := openFixture(t, name, Options{})
	b := make([]byte, r.Size())
	if _, err := r.ra.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

func countRecords(t testing.TB, data []byte) (int, error) {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{})
	if err != nil {
		return 0, err
	}
	n := 0
	_, err = r.Read(context.Background(), func(*record.Record) error { n++; return nil })
	return n, err
}

// TestTruncated cuts real files (plain and compressed) at many points:
// every complete buffer's records are delivered, then an error that wraps
// ErrTruncated and names the buffer.
func TestTruncated(t *testing.T) {
	for _, name := range []string{"tx_win7_http_server_manifest.etl", "filtrace_win11_kernel_diskio_fileio-names_compressed.etl"} {
		t.Run(name, func(t *testing.T) {
			full := fixtureBytes(t, name)
			total, err := countRecords(t, full)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := NewReader(bytes.NewReader(full), int64(len(full)), Options{})
			bufs := r.Buffers()
			for _, k := range []int{1, 2, len(bufs) / 2, len(bufs) - 1} {
				b := bufs[k]
				// Records in the buffers before k.
				prefix := full[:b.FileOffset]
				// Cut exactly at a buffer boundary: every record of the
				// complete buffers, and the header's buffer count tells
				// the file is short.
				before, err := countRecords(t, prefix)
				var bfe *FormatError
				if !errors.Is(err, ErrTruncated) || !errors.As(err, &bfe) || bfe.Buffer != k || !bfe.RestUnread || !strings.Contains(err.Error(), "cut at a buffer boundary") {
					t.Fatalf("cut at buffer %d's start: err = %v", k, err)
				}
				for _, cut := range []int64{b.FileOffset + 10, b.FileOffset + int64(b.BufferSize)/2, b.FileOffset + int64(b.BufferSize) - 1} {
					n, err := countRecords(t, full[:cut])
					var fe *FormatError
					if !errors.Is(err, ErrTruncated) || !errors.As(err, &fe) || fe.Buffer != k || fe.BufferOffset != b.FileOffset || !fe.RestUnread {
						t.Fatalf("cut at %#x (buffer %d): err = %v", cut, k, err)
					}
					if n < before || n > total {
						t.Fatalf("cut at %#x: %d records, want at least the %d of the complete buffers", cut, n, before)
					}
				}
			}
		})
	}
}

// TestCorrupt damages real files: a bad record size in one buffer keeps the
// records before it and every other buffer; a bad compressed stream loses
// only its buffer; a bad BufferSize ends the index; all are reported with
// the buffer, offset and field.
func TestCorrupt(t *testing.T) {
	t.Run("record size", func(t *testing.T) {
		full := fixtureBytes(t, "tx_win7_kernel-process_manifest.etl")
		total, _ := countRecords(t, full)
		r, _ := NewReader(bytes.NewReader(full), int64(len(full)), Options{})
		b := r.Buffers()[5]
		data := append([]byte(nil), full...)
		// Walk to the third record of buffer 5 and break its size.
		pos := int(b.FileOffset) + BufferHeaderSize
		for i := 0; i < 2; i++ {
			pos += align8(int(le.Uint16(data[pos:])))
		}
		le.PutUint16(data[pos:], 0xFFF0)
		n, err := countRecords(t, data)
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, ErrCorrupt) || fe.Buffer != 5 || fe.BufferOffset+int64(fe.Pos) != int64(pos) || fe.Field != "record size" {
			t.Fatalf("err = %v (%+v), want buffer 5 at %#x, field record size", err, fe, pos)
		}
		if !strings.Contains(err.Error(), "buffer 5") {
			t.Errorf("message %q does not name the buffer", err)
		}
		// Only the tail of buffer 5 (8 KiB, about 100 records) is lost.
		if n < total-120 || n >= total {
			t.Errorf("%d records of %d delivered", n, total)
		}
	})
	t.Run("compressed data", func(t *testing.T) {
		full := fixtureBytes(t, largestFixture)
		r, _ := NewReader(bytes.NewReader(full), int64(len(full)), Options{})
		b := r.Buffers()[100]
		data := append([]byte(nil), full...)
		for i := int64(0); i < 64; i++ {
			data[b.FileOffset+BufferHeaderSize+100+i] ^= 0x5A
		}
		n, err := countRecords(t, data)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Buffer != 100 {
			t.Fatalf("err = %v", err)
		}
		if n < 179474-1000 || n >= 179474 {
			t.Errorf("%d records delivered", n)
		}
	})
	t.Run("buffer size", func(t *testing.T) {
		full := fixtureBytes(t, "tx_win7_http_server_manifest.etl")
		data := append([]byte(nil), full...)
		le.PutUint32(data[10*8192:], 3) // buffer 10
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Buffers()) != 10 || r.IndexError() == nil {
			t.Fatalf("%d buffers, index error %v", len(r.Buffers()), r.IndexError())
		}
		st, err := r.Read(context.Background(), func(*record.Record) error { return nil })
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Field != "BufferSize" || fe.Buffer != 10 {
			t.Fatalf("err = %v", err)
		}
		if len(st.Problems()) == 0 {
			t.Error("damage not among the Stats problems")
		}
	})
	t.Run("not an etl file", func(t *testing.T) {
		for _, data := range [][]byte{nil, []byte("hello"), bytes.Repeat([]byte{0}, 4096)} {
			if _, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{}); err == nil {
				t.Errorf("%d bytes accepted", len(data))
			}
		}
	})
}

// TestReadStops checks that Read stops on the callback's error and on a
// cancelled context.
func TestReadStops(t *testing.T) {
	r := openFixture(t, "tx_win7_kernel-process_manifest.etl", Options{})
	stop := errors.New("stop")
	n := 0
	if _, err := r.Read(context.Background(), func(*record.Record) error {
		n++
		if n == 10 {
			return stop
		}
		return nil
	}); err != stop || n != 10 {
		t.Errorf("callback error: %v after %d records", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Read(ctx, func(*record.Record) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestFillerAndBadMarker: filler (zeros) inside the used part ends the
// buffer and is counted; a marker without the header flag is an error
// naming the field.
func TestFillerAndBadMarker(t *testing.T) {
	ev := kernelRecord(HeaderSystem64, 2, record.GroupThread, 1, 1, 1, 1_000_001, nil, nil)
	data := synthFile(defaultSynthHeader(), nil, synthBuffer(0, 1, 0, 0, 0, false, ev, make([]byte, 16), ev))
	got, st, err := readBytes(t, data, Options{})
	if err != nil || len(got) != 2 {
		t.Fatalf("%d records, err %v", len(got), err)
	}
	if st.Get(event.CountLost, "etl: buffers with filler before SavedOffset (rest not read)") != 1 ||
		st.Get(event.CountLost, "etl: bytes of filler not read") != 16+uint64(len(ev)) {
		t.Errorf("filler not counted: %v", st.Problems())
	}
	bad := append([]byte(nil), ev...)
	bad[3] = 0x40
	data = synthFile(defaultSynthHeader(), nil, synthBuffer(0, 1, 0, 0, 0, false, ev, bad, ev))
	got, _, err = readBytes(t, data, Options{})
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Field != "record marker" || fe.Buffer != 1 || len(got) != 2 {
		t.Fatalf("%d records, err %v", len(got), err)
	}
}

// TestDuplicatedBuffer: a buffer repeated in the file (a duplicated
// region) is read once, and reported.
func TestDuplicatedBuffer(t *testing.T) {
	name := "filtrace_win11_kernel_diskio_fileio-names_compressed.etl"
	full := fixtureBytes(t, name)
	total, err := countRecords(t, full)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := NewReader(bytes.NewReader(full), int64(len(full)), Options{})
	b := r.Buffers()[5]
	end := b.FileOffset + int64(b.BufferSize)
	dup := append(append(append([]byte(nil), full[:end]...), full[b.FileOffset:end]...), full[end:]...)
	n, err := countRecords(t, dup)
	if n != total || err == nil || !strings.Contains(err.Error(), "duplicated buffer") {
		t.Errorf("%d records of %d, err %v", n, total, err)
	}
	var fe *FormatError
	if !errors.Is(err, ErrDuplicate) || !errors.As(err, &fe) || fe.RestUnread || fe.BufferOffset != end {
		t.Errorf("err %#v: want the duplicate at %#x, wrapping ErrDuplicate, read past", err, end)
	}
	// Counted, but not as lost: nothing is missing.
	r, _ = NewReader(bytes.NewReader(dup), int64(len(dup)), Options{})
	st, _ := r.Read(context.Background(), func(*record.Record) error { return nil })
	if st.Get(event.CountInfo, "etl: duplicated buffers not read again (no event lost)") != 1 {
		t.Errorf("duplicate not counted: %+v", st.Counters)
	}
	for _, c := range st.Problems() {
		if strings.Contains(c.Name, "duplicated") {
			t.Errorf("the duplicate counted as a problem: %+v", c)
		}
	}
}

// TestStrayHeaderBuffer: the log-file header buffer again inside the file
// (a stray copy of a file's start) is not read, and is reported at its
// offset; every record around it is read.
func TestStrayHeaderBuffer(t *testing.T) {
	name := "filtrace_win11_kernel_diskio_fileio-names_compressed.etl"
	full := fixtureBytes(t, name)
	total, err := countRecords(t, full)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := NewReader(bytes.NewReader(full), int64(len(full)), Options{})
	head := full[:r.Buffers()[0].BufferSize]
	at := r.Buffers()[5].FileOffset
	// This file's own first buffer again: a duplicate, nothing lost; the
	// first buffer of another file (here: another flush time): damage.
	other := bytes.Clone(head)
	other[0x10] ^= 1 // its TimeStamp
	for _, c := range []struct {
		ins []byte
		dup bool
	}{{head, true}, {other, false}} {
		stray := append(append(append([]byte(nil), full[:at]...), c.ins...), full[at:]...)
		n, err := countRecords(t, stray)
		var fe *FormatError
		if n != total || !errors.As(err, &fe) || fe.Field != "BufferType" || fe.BufferOffset != at || errors.Is(err, ErrDuplicate) != c.dup {
			t.Errorf("a header buffer (this file's own: %v): %d records of %d, err %v", c.dup, n, total, err)
		}
	}
}
