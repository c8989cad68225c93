package blockio

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// linearFind is the witness lookup by a scan of every record kept: the
// reference the index must agree with.
func linearFind(l *witnessLog, q witnessQuery) int {
	end := q.sector + uint64(q.bytes>>9)
	best := -1
	for i := range l.ring {
		r := &l.ring[i]
		if (!l.full && i >= l.next) || r.used || r.dev != q.dev || r.op != q.op || r.ts <= q.after || r.ts >= q.before {
			continue
		}
		if q.bytes == 0 {
			if r.nr != 0 || r.sector != q.sector {
				continue
			}
		} else if r.sector >= end || r.sector+uint64(r.nr) < end {
			continue
		}
		if best < 0 || r.ts < l.ring[best].ts {
			best = i
		}
	}
	return best
}

// TestWitnessIndexAgrees: over random completions (small and huge, empty
// flushes, sectors near bucket edges and near 2^64) and random bios, with
// the log growing (its table doubled and refiled) then wrapping many
// times, the indexed lookup takes the same record as a scan of the whole
// log.
func TestWitnessIndexAgrees(t *testing.T) {
	for _, keep := range []int{257, 3000} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) { indexAgrees(t, keep) })
	}
}

func indexAgrees(t *testing.T, keep int) {
	rng := rand.New(rand.NewPCG(1, uint64(keep)))
	l, id := testWitnessLog(t, keep)
	ops := []string{"R", "WS", "FWS", "D", "FF"}
	sector := func() uint64 {
		switch rng.IntN(8) {
		case 0:
			return ^uint64(0) - rng.Uint64N(64)
		case 1:
			return rng.Uint64N(4)<<levelShift(rng.IntN(indexLevels)) - rng.Uint64N(16)
		default:
			return rng.Uint64N(1 << 16)
		}
	}
	nr := func() uint32 {
		switch rng.IntN(10) {
		case 0:
			return 0
		case 1:
			return uint32(rng.Uint64N(1 << 31))
		default:
			return uint32(8 * (1 + rng.IntN(256)))
		}
	}
	found := 0
	for ts := uint64(1); ts < 40000; ts++ {
		l.add(ts, rqCompleteRecord(id, uint32(rng.IntN(3)), sector(), nr(), 0, ops[rng.IntN(len(ops))]))
		if ts%3 != 0 {
			continue
		}
		var q witnessQuery
		if rng.IntN(3) == 0 && l.next > 0 { // a bio a kept completion ends
			r := l.ring[rng.IntN(l.next)]
			b := min(r.nr, 64) << 9
			q = witnessQuery{dev: r.dev, sector: r.sector + uint64(r.nr) - uint64(b>>9), bytes: b, op: r.op}
		} else {
			q = witnessQuery{dev: uint32(rng.IntN(3)), sector: sector(), bytes: uint32(rng.IntN(4)) * 4096, op: ops[rng.IntN(len(ops))][0]}
		}
		q.after = ts - min(ts-1, rng.Uint64N(600))
		q.before = ts + 1
		if q.after < l.oldest {
			q.after = l.oldest // queued within what the log keeps (missOld is TestWitnessKeep's)
		}
		want := linearFind(l, q)
		r, miss := l.find(q)
		switch {
		case want < 0 && miss == missNone:
			t.Fatalf("ts %d: %+v found %+v, the scan finds none", ts, q, r)
		case want >= 0 && (miss != missNone || r != withUsed(l.ring[want])):
			t.Fatalf("ts %d: %+v found %+v (%v), the scan finds %+v", ts, q, r, miss, l.ring[want])
		case want >= 0:
			found++
		}
	}
	if found < 1000 {
		t.Errorf("only %d lookups found a record: the test does not exercise the index", found)
	}
}

func withUsed(r witnessRec) witnessRec { r.used = true; return r }

// BenchmarkWitnessFind: one lookup in a full log of DefaultWitnessKeep
// completions on one disk (ns/op is the cost per bio whose completion no
// program saw), by the index and, as before it, by a scan of the log.
func BenchmarkWitnessFind(b *testing.B) {
	l, id := testWitnessLog(&testing.T{}, DefaultWitnessKeep)
	for i := range uint64(DefaultWitnessKeep) {
		l.add(i+1, rqCompleteRecord(id, 1, (i*8)%(1<<24), 8, 0, "R"))
	}
	query := func(i int) witnessQuery {
		return witnessQuery{dev: 1, sector: uint64(i*8) % (1 << 24), bytes: 4096, op: 'R', before: ^uint64(0)}
	}
	b.Run("index", func(b *testing.B) {
		for i := range b.N {
			l.find(query(i))
		}
	})
	b.Run("scan", func(b *testing.B) {
		for i := range b.N {
			linearFind(l, query(i))
		}
	})
}

// BenchmarkWitnessSeen: setting aside the witness record of a completion
// the programs saw (saw, then settle), in a full log: the cost the reader
// pays per block event.
func BenchmarkWitnessSeen(b *testing.B) {
	l, id := testWitnessLog(&testing.T{}, DefaultWitnessKeep)
	for i := range uint64(DefaultWitnessKeep) {
		l.add(i+1, rqCompleteRecord(id, 1, (i*8)%(1<<24), 8, 0, "R"))
	}
	for i := range b.N {
		j := uint64(i % DefaultWitnessKeep)
		l.saw(seenRec{q: witnessQuery{dev: 1, sector: (j * 8) % (1 << 24), bytes: 4096, op: 'R'}, ts: j + 2})
		if len(l.pending) == 64 {
			l.settle(^uint64(0))
		}
	}
}
