package blockio

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/iotrace/iotrace/backend/ebpf/ftrace"
	"github.com/iotrace/iotrace/event"
)

// rqCompleteRecord builds a block_rq_complete record in Linux 6.18's
// layout (../ftrace/testdata/block_rq_complete.format).
func rqCompleteRecord(id uint16, dev uint32, sector uint64, nr uint32, errno int32, rwbs string) []byte {
	b := make([]byte, 48)
	binary.LittleEndian.PutUint16(b[0:], id)
	binary.LittleEndian.PutUint32(b[8:], dev)
	binary.LittleEndian.PutUint64(b[16:], sector)
	binary.LittleEndian.PutUint32(b[24:], nr)
	binary.LittleEndian.PutUint32(b[28:], uint32(errno))
	copy(b[34:44], rwbs)
	return b
}

func testWitnessLog(t *testing.T, keep int) (*witnessLog, uint16) {
	t.Helper()
	text, err := os.ReadFile("../ftrace/testdata/block_rq_complete.format")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ftrace.ParseFormat(string(text))
	if err != nil {
		t.Fatal(err)
	}
	l := newWitnessLog(keep)
	if err := l.addFormat(f); err != nil {
		t.Fatal(err)
	}
	return l, f.ID
}

func TestOpLetter(t *testing.T) {
	for rwbs, want := range map[string]byte{"R": 'R', "RA": 'R', "WS": 'W', "FWS": 'W', "FWFS": 'W', "WFS": 'W', "FF": 'F', "F": 'F', "DE": 'D', "N": 'N', "": 0} {
		if got := opLetter([]byte(rwbs)); got != want {
			t.Errorf("opLetter(%q) = %q, want %q", rwbs, got, want)
		}
	}
}

// TestWitnessFind: the earliest completion in the bio's time window that
// covers its last sector (its sector, for an empty preflush), of its
// disk and direction; each completion goes to one bio.
func TestWitnessFind(t *testing.T) {
	l, id := testWitnessLog(t, 64)
	const disk = 252 << 20
	add := func(ts uint64, dev uint32, sector uint64, nr uint32, errno int32, rwbs string) {
		l.add(ts, rqCompleteRecord(id, dev, sector, nr, errno, rwbs))
	}
	add(100, disk, 1000, 8, 0, "WS")   // a 4 KiB write before the window
	add(200, disk, 992, 24, 0, "WS")   // a merged request covering 1000..1007
	add(210, disk+1, 1000, 8, 0, "WS") // another disk
	add(220, disk, 1000, 8, 0, "R")    // another direction
	add(230, disk, 0, 0, 0, "FWS")     // an empty preflush
	add(240, disk, 0, 0, 0, "FF")      // the flush request
	add(300, disk, 1000, 8, -5, "WS")  // a later write there, failed
	add(400, disk, 4000, 0x7fffffff, 0, "R")

	q := witnessQuery{dev: disk, sector: 1000, bytes: 4096, op: 'W', after: 150, before: 1000}
	if r, miss := l.find(q); miss != missNone || r.ts != 200 {
		t.Errorf("first write: %+v, %v; want the merged request at 200", r, miss)
	}
	if r, miss := l.find(q); miss != missNone || r.ts != 300 || r.errno != -5 {
		t.Errorf("second write: %+v, %v; want the failed one at 300 (200 is taken)", r, miss)
	}
	if _, miss := l.find(q); miss != missNoRecord {
		t.Errorf("third write: %v, want no record", miss)
	}
	empty := witnessQuery{dev: disk, sector: 0, bytes: 0, op: 'W', after: 150, before: 1000}
	if r, miss := l.find(empty); miss != missNone || r.ts != 230 {
		t.Errorf("empty preflush: %+v, %v; want 230", r, miss)
	}
	late := witnessQuery{dev: disk, sector: 1000, bytes: 4096, op: 'R', after: 150, before: 215}
	if _, miss := l.find(late); miss != missNoRecord {
		t.Errorf("a read found before its completion's time: %v", miss)
	}
	// A huge request does not wrap.
	if _, miss := l.find(witnessQuery{dev: disk, sector: 4000, bytes: 8 << 9, op: 'R', after: 150, before: 1000}); miss != missNone {
		t.Errorf("read inside a request of 2^31 sectors: %v", miss)
	}
	l.lost(500)
	if _, miss := l.find(witnessQuery{dev: disk, sector: 77, bytes: 512, op: 'R', after: 450, before: 1000}); miss != missLoss {
		t.Errorf("after a loss: %v, want missLoss", miss)
	}
}

// TestWitnessSeenNotTaken: a completion the programs saw is no unseen
// bio's. Two empty preflushes end at the disk's sector 0: the first
// completes under the programs' eyes, after the second was queued; the
// second's completion is missed. The second must get its own completion,
// not the first's, as it did before the programs' completions were set
// aside. A merged request the programs saw is set aside once for each of
// its bios; a completion seen further back than seenSlack, or newer than
// the last read, sets nothing aside.
func TestWitnessSeenNotTaken(t *testing.T) {
	l, id := testWitnessLog(t, 64)
	const disk = 252 << 20
	add := func(ts uint64, sector uint64, nr uint32, rwbs string) {
		l.add(ts, rqCompleteRecord(id, disk, sector, nr, 0, rwbs))
	}
	add(1_000, 0, 0, "FWS")       // preflush 1, seen by the programs at 1_002
	add(2_000, 0, 0, "FWS")       // preflush 2, missed
	add(3_000, 992, 32, "WS")     // a merged request, seen for its bios ending at 1007 and 1023
	add(4_000, 2000, 8, "WS")     // seen 2 ms later: beyond seenSlack, not set aside
	add(1_500_000, 5000, 8, "WS") // seen at 1_500_001, after the read that began at 1_500_000
	l.saw(seenRec{q: witnessQuery{dev: disk, sector: 0, bytes: 0, op: 'W'}, ts: 1_002})
	l.saw(seenRec{q: witnessQuery{dev: disk, sector: 1000, bytes: 4096, op: 'W'}, ts: 3_001})
	l.saw(seenRec{q: witnessQuery{dev: disk, sector: 1016, bytes: 4096, op: 'W'}, ts: 3_001})
	l.saw(seenRec{q: witnessQuery{dev: disk, sector: 2000, bytes: 4096, op: 'W'}, ts: 4_000 + seenSlack + 1})
	l.saw(seenRec{q: witnessQuery{dev: disk, sector: 5000, bytes: 4096, op: 'W'}, ts: 1_500_001})
	l.settle(1_500_000)
	if len(l.pending) != 1 || l.pending[0].ts != 1_500_001 {
		t.Errorf("pending %+v, want the completion seen after the read began", l.pending)
	}

	flush := witnessQuery{dev: disk, sector: 0, bytes: 0, op: 'W', after: 500, before: 3_000_000}
	if r, miss := l.find(flush); miss != missNone || r.ts != 2_000 {
		t.Errorf("the missed preflush: %+v, %v; want its own completion at 2000, not the seen one at 1000", r, miss)
	}
	if r, miss := l.find(witnessQuery{dev: disk, sector: 1016, bytes: 4096, op: 'W', after: 500, before: 3_000_000}); miss != missNoRecord {
		t.Errorf("a bio inside the seen merged request: %+v, %v; want no record", r, miss)
	}
	if r, miss := l.find(witnessQuery{dev: disk, sector: 2000, bytes: 4096, op: 'W', after: 500, before: 3_000_000}); miss != missNone || r.ts != 4_000 {
		t.Errorf("a completion seen beyond seenSlack: %+v, %v; want it left open", r, miss)
	}
	l.settle(2_000_000)
	if len(l.pending) != 0 {
		t.Errorf("pending %+v after a later read", l.pending)
	}
	if _, miss := l.find(witnessQuery{dev: disk, sector: 5000, bytes: 4096, op: 'W', after: 500, before: 3_000_000}); miss != missNoRecord {
		t.Errorf("a completion seen, set aside at the next read: %v", miss)
	}

	// A full backlog is counted, not grown.
	for range maxSeenPending + 3 {
		l.saw(seenRec{q: witnessQuery{dev: disk, op: 'W'}, ts: 5_000_000})
	}
	if len(l.pending) != maxSeenPending || l.seenDropped != 3 {
		t.Errorf("backlog %d, dropped %d; want %d and 3", len(l.pending), l.seenDropped, maxSeenPending)
	}
}

// TestWitnessKeep: a bio queued before the oldest completion overwritten
// is reported as beyond the witness's memory, not as missing.
func TestWitnessKeep(t *testing.T) {
	l, id := testWitnessLog(t, 4)
	for i := range uint64(10) {
		l.add(100+i, rqCompleteRecord(id, 1, i*8, 8, 0, "R"))
	}
	if _, miss := l.find(witnessQuery{dev: 1, sector: 0, bytes: 4096, op: 'R', after: 50, before: 1000}); miss != missOld {
		t.Errorf("overwritten: %v, want missOld", miss)
	}
	if r, miss := l.find(witnessQuery{dev: 1, sector: 72, bytes: 4096, op: 'R', after: 105, before: 1000}); miss != missNone || r.ts != 109 {
		t.Errorf("kept: %+v %v", r, miss)
	}
}

// TestWitnessMalformed: short records are counted, other events ignored.
func TestWitnessMalformed(t *testing.T) {
	l, id := testWitnessLog(t, 4)
	l.add(1, []byte{1})
	l.add(2, rqCompleteRecord(id, 1, 0, 8, 0, "R")[:20])
	l.add(3, rqCompleteRecord(id+1, 1, 0, 8, 0, "R"))
	if l.malformed != 2 || l.next != 0 {
		t.Errorf("malformed %d, kept %d; want 2 and 0", l.malformed, l.next)
	}
}

// TestWitnessedEvent: the event of a bio whose completion came from the
// witness has its queue time, the latency to that completion, the status
// the kernel's record gives, and the flag.
func TestWitnessedEvent(t *testing.T) {
	d := NewDecoder(DefaultOpfLayout(), 1000)
	r := Record{Bio: 1, QueueTS: 5000, DoneTS: 90000, Sector: 8, Bytes: 4096, Opf: 1, Pid: 7, Tid: 7, Flags: RecUnseen | RecNoIssue}
	var e event.Event
	d.Witnessed(&r, witnessRec{ts: 7500}, &e)
	if e.Time != 4000 || e.Duration != 2500 || e.Wait != 0 || e.Bytes != 4096 || e.Status != event.StatusOK ||
		e.Flags&event.FlagFtraceCompletion == 0 || e.Flags&event.FlagNoCompletion != 0 || e.Pid != 7 {
		t.Errorf("%+v", e)
	}
	d.Witnessed(&r, witnessRec{ts: 7500, errno: -5}, &e)
	if e.Code != 5 || !e.Failed() || e.Bytes != -1 {
		t.Errorf("failed: code %d status %v bytes %d", e.Code, e.Status, e.Bytes)
	}
}

// FuzzWitnessRecord: any record bytes are decoded or counted malformed,
// and a lookup afterwards neither panics nor takes a record of another
// disk.
func FuzzWitnessRecord(f *testing.F) {
	f.Add(rqCompleteRecord(2107, 252<<20, 1000, 8, 0, "WS"), uint64(10))
	f.Add([]byte{0x3b, 0x08, 1}, uint64(1))
	f.Fuzz(func(t *testing.T, rec []byte, ts uint64) {
		l, _ := testWitnessLog(t, 8)
		l.add(ts, rec)
		if l.malformed+uint64(l.next) > 1 {
			t.Fatalf("one record: %d malformed, %d kept", l.malformed, l.next)
		}
		r, miss := l.find(witnessQuery{dev: 7, sector: 0, bytes: 4096, op: 'W', before: ^uint64(0)})
		if miss == missNone && r.dev != 7 {
			t.Fatalf("found a record of device %d", r.dev)
		}
	})
}
