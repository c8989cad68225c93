package ebpf

import (
	"encoding/binary"
	"testing"

	"github.com/iotrace/iotrace/backend/ebpf/blockio"
)

// pcQ and pcD are the records of a fill of file f, bytes [off, off+n),
// queued by pid in call cause, and of its completion at done.
func pcQ(bio, off uint64, n uint32, pid uint32, cause uint64) *pcRec {
	return &pcRec{Kind: pcQueue, Time: 60, Bio: bio, Ino: 7, Dev: 1, Off: off, Bytes: n, PidStatus: pid, Cause: cause, Bdev: 8, Sector: 2048}
}

func pcD(bio, done uint64) *pcRec { return &pcRec{Kind: pcDone, Bio: bio, Time: done} }

var pcF = pcFile{dev: 1, ino: 7}

func TestProvenanceClassify(t *testing.T) {
	const pid, other = 10, 20
	for _, c := range []struct {
		name    string
		recs    []*pcRec
		off, n  uint64
		id, t0  uint64
		want    readProvenance
		pending uint64
		// witness answers FillDone (0: it does not know)
		witness uint64
		sector  uint64 // the pending fill's first sector, when not 2048
	}{
		{name: "nothing known: cached", off: 0, n: 4096, id: 5, t0: 100,
			want: readProvenance{cached: 4096}},
		{name: "its own I/O", recs: []*pcRec{pcQ(1, 0, 8192, pid, 5), pcD(1, 150)}, off: 0, n: 4096, id: 5, t0: 100,
			want: readProvenance{disk: 4096}},
		{name: "read-ahead of an earlier read, done before", recs: []*pcRec{pcQ(1, 0, 65536, pid, 3), pcD(1, 90)}, off: 4096, n: 8192, id: 5, t0: 100,
			want: readProvenance{ahead: 8192, aheadFrom: 3}},
		{name: "read-ahead still in flight at the read's start: waited", recs: []*pcRec{pcQ(1, 0, 65536, pid, 3), pcD(1, 120)}, off: 0, n: 4096, id: 5, t0: 100,
			want: readProvenance{waited: 4096}},
		{name: "another process's fill, done before: cached", recs: []*pcRec{pcQ(1, 0, 65536, other, 9), pcD(1, 50)}, off: 0, n: 4096, id: 5, t0: 100,
			want: readProvenance{cached: 4096}},
		{name: "another process's fill in flight: waited", recs: []*pcRec{pcQ(1, 0, 65536, other, 9), pcD(1, 150)}, off: 0, n: 4096, id: 5, t0: 100,
			want: readProvenance{waited: 4096}},
		{name: "completion never seen", recs: []*pcRec{pcQ(1, 0, 65536, pid, 3)}, off: 0, n: 4096, id: 5, t0: 100,
			want: readProvenance{unknown: 4096}, pending: 4096},
		{name: "completion never seen, its own I/O: from disk all the same", recs: []*pcRec{pcQ(1, 0, 65536, pid, 5)}, off: 0, n: 4096, id: 5, t0: 100,
			want: readProvenance{disk: 4096}},
		{name: "completion never seen, the witness's before the read: read-ahead", recs: []*pcRec{pcQ(1, 0, 65536, pid, 3)}, off: 0, n: 4096, id: 5, t0: 100,
			witness: 90, want: readProvenance{ahead: 4096, aheadFrom: 3}},
		{name: "completion never seen, the witness's during the read: waited", recs: []*pcRec{pcQ(1, 0, 65536, pid, 3)}, off: 0, n: 4096, id: 5, t0: 100,
			witness: 130, want: readProvenance{waited: 4096}},
		{name: "evicted: cached again (re-created without disk I/O)", recs: []*pcRec{pcQ(1, 0, 65536, pid, 3), pcD(1, 90),
			{Kind: pcEvict, Ino: 7, Dev: 1, Off: 0, Bytes: 65536}}, off: 0, n: 4096, id: 5, t0: 100,
			want: readProvenance{cached: 4096}},
		{name: "parts: cached, read-ahead, own I/O", recs: []*pcRec{pcQ(1, 4096, 4096, pid, 3), pcD(1, 90), pcQ(2, 8192, 4096, pid, 5), pcD(2, 120)},
			off: 0, n: 12288, id: 5, t0: 100, want: readProvenance{cached: 4096, ahead: 4096, disk: 4096, aheadFrom: 3}},
		{name: "a split replaces the parent's range", recs: []*pcRec{pcQ(1, 0, 131072, pid, 3), pcQ(2, 0, 65536, pid, 3),
			{Kind: pcQueue, Flags: pcfSplit, Bio: 1, Ino: 7, Dev: 1, Off: 65536, Bytes: 65536, PidStatus: pid, Cause: 3, Bdev: 8, Sector: 2176}, pcD(2, 90)},
			off: 0, n: 131072, id: 5, t0: 100, want: readProvenance{ahead: 65536, unknown: 65536, aheadFrom: 3}, pending: 65536, sector: 2176},
		{name: "unseen completion, reported before the read began", recs: []*pcRec{pcQ(1, 0, 4096, pid, 3), {Kind: pcDone, Flags: pcfUnseen, Bio: 1, Time: 80}},
			off: 0, n: 4096, id: 5, t0: 100, want: readProvenance{ahead: 4096, aheadFrom: 3}},
		{name: "unseen completion, reported during the read", recs: []*pcRec{pcQ(1, 0, 4096, pid, 3), {Kind: pcDone, Flags: pcfUnseen, Bio: 1, Time: 130}},
			off: 0, n: 4096, id: 5, t0: 100, want: readProvenance{unknown: 4096}},
		{name: "not contiguous in the file", recs: []*pcRec{{Kind: pcQueue, Flags: pcfNonContig, Bio: 1, Ino: 7, Dev: 1, Off: 0, Bytes: 8192, PidStatus: pid, Cause: 5}, pcD(1, 150)},
			off: 0, n: 4096, id: 5, t0: 100, want: readProvenance{unknown: 4096}},
		{name: "failed fill", recs: []*pcRec{pcQ(1, 0, 4096, pid, 5), {Kind: pcDone, Bio: 1, Time: 150, PidStatus: 10}},
			off: 0, n: 4096, id: 5, t0: 100, want: readProvenance{unknown: 4096}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pc := newPageCache()
			asked := 0
			pc.fillDone = func(q blockio.FillQuery) (uint64, bool) {
				asked++
				want := blockio.FillQuery{Bio: 1, Ino: pcF.ino, InoDev: pcF.dev, Dev: 8, Sector: 2048, Bytes: 65536, After: 60, Before: c.t0 + 50}
				if c.sector != 0 {
					want.Sector = c.sector
				}
				if q != want {
					t.Errorf("FillDone(%+v), want %+v: bio 1 where it lies, queued at 60, before the read's end", q, want)
				}
				return c.witness, c.witness != 0
			}
			for _, r := range c.recs {
				pc.record(r)
			}
			got := pc.classify(pcF, c.off, c.n, pid, c.id, c.t0, c.t0+50)
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			if got.cached+got.ahead+got.disk+got.waited+got.unknown != c.n {
				t.Errorf("parts of %+v do not add up to %d", got, c.n)
			}
			if pc.pendingBytes != c.pending {
				t.Errorf("bytes not classified for an unseen completion: %d, want %d", pc.pendingBytes, c.pending)
			}
			if c.witness != 0 && (asked != 1 || pc.witnessedFills != 1) {
				t.Errorf("the witness asked %d times, %d fills timed by it; want 1 each", asked, pc.witnessedFills)
			}
		})
	}
}

// TestProvenanceConsumed: once a process has read its read-ahead, its
// next read of the same bytes is cached; another process's read of the
// same fill, done before it began, is cached too, and leaves the fill to
// its submitter.
func TestProvenanceConsumed(t *testing.T) {
	pc := newPageCache()
	pc.record(pcQ(1, 0, 65536, 10, 3))
	pc.record(pcD(1, 90))
	if got := pc.classify(pcF, 0, 4096, 20, 50, 100, 150); got != (readProvenance{cached: 4096}) {
		t.Errorf("other process: %+v", got)
	}
	if got := pc.classify(pcF, 0, 8192, 10, 5, 100, 150); got != (readProvenance{ahead: 8192, aheadFrom: 3}) {
		t.Errorf("first read: %+v", got)
	}
	if got := pc.classify(pcF, 0, 16384, 10, 6, 200, 250); got != (readProvenance{cached: 8192, ahead: 8192, aheadFrom: 3}) {
		t.Errorf("second read: %+v", got)
	}
	if pc.npieces != 1 {
		t.Errorf("%d pieces left, want 1 (48 KiB not read yet)", pc.npieces)
	}
}

// TestProvenanceWitnessedFill: a fill timed by the witness for a read
// keeps that time when its record comes late as unseen (a bound only), so
// that another process's later read of it is known cached; the programs'
// own completion record, had it come, would replace it.
func TestProvenanceWitnessedFill(t *testing.T) {
	pc := newPageCache()
	pc.fillDone = func(blockio.FillQuery) (uint64, bool) { return 90, true }
	pc.record(pcQ(1, 0, 65536, 10, 3))
	if got := pc.classify(pcF, 0, 4096, 10, 5, 100, 150); got != (readProvenance{ahead: 4096, aheadFrom: 3}) {
		t.Errorf("first read: %+v", got)
	}
	pc.fillDone = nil
	pc.record(&pcRec{Kind: pcDone, Flags: pcfUnseen, Bio: 1, Time: 500})
	if got := pc.classify(pcF, 8192, 4096, 20, 50, 200, 250); got != (readProvenance{cached: 4096}) {
		t.Errorf("another process's read after the late unseen record: %+v, want cached (done at 90)", got)
	}
	if len(pc.inflight) != 0 {
		t.Errorf("%d fills still in flight", len(pc.inflight))
	}
}

// TestProvenanceForgotten: beyond the budget the files with the most
// ranges are forgotten, and their unknown bytes are not called cached.
func TestProvenanceForgotten(t *testing.T) {
	pc := newPageCache()
	for i := uint64(0); i <= maxPieces; i++ {
		pc.record(pcQ(i+1, i*8192, 4096, 10, 3))
		pc.record(pcD(i+1, 90))
	}
	if pc.forgotten != 1 || pc.npieces > maxPieces/2 {
		t.Fatalf("forgotten %d, %d pieces", pc.forgotten, pc.npieces)
	}
	if got := pc.classify(pcF, 0, 4096, 10, 5, 100, 150); got != (readProvenance{unknown: 4096}) {
		t.Errorf("read of a forgotten file: %+v", got)
	}
}

func TestPCRecDecode(t *testing.T) {
	b := make([]byte, pcRecSize)
	b[0], b[1] = recPageCache, pcQueue
	binary.LittleEndian.PutUint16(b[2:], pcfUntraced)
	binary.LittleEndian.PutUint64(b[8:], 99)
	binary.LittleEndian.PutUint64(b[16:], 0xffff888100000000)
	binary.LittleEndian.PutUint64(b[24:], 7)
	binary.LittleEndian.PutUint64(b[32:], 4096)
	binary.LittleEndian.PutUint64(b[40:], 55)
	binary.LittleEndian.PutUint32(b[48:], 8192)
	binary.LittleEndian.PutUint32(b[52:], 1)
	binary.LittleEndian.PutUint32(b[56:], 10)
	binary.LittleEndian.PutUint32(b[60:], 8<<20|1)
	binary.LittleEndian.PutUint64(b[64:], 2048)
	var r pcRec
	if err := r.decode(b); err != nil {
		t.Fatal(err)
	}
	want := pcRec{Kind: pcQueue, Flags: pcfUntraced, Time: 99, Bio: 0xffff888100000000, Ino: 7, Off: 4096, Cause: 55, Bytes: 8192, Dev: 1, PidStatus: 10, Bdev: 8<<20 | 1, Sector: 2048}
	if r != want {
		t.Errorf("decoded %+v, want %+v", r, want)
	}
	if err := r.decode(b[:pcRecSize-1]); err == nil {
		t.Error("a short record decoded")
	}
}
