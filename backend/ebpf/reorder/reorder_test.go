package reorder

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func rec(t uint64) []byte { return binary.LittleEndian.AppendUint64(nil, t) }

func recTime(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func newQueues(n int) ([]*Queue, *Merger) {
	qs := make([]*Queue, n)
	srcs := make([]Source, n)
	for i := range qs {
		qs[i] = &Queue{}
		srcs[i] = qs[i]
	}
	return qs, New(recTime, srcs...)
}

func release(t *testing.T, m *Merger, upTo uint64) []uint64 {
	t.Helper()
	var out []uint64
	if err := m.Release(upTo, func(b []byte) error {
		out = append(out, recTime(b))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func add(q *Queue, times ...uint64) {
	for _, k := range times {
		q.Add(rec(k))
	}
}

func TestReleaseInTimeOrderUpToTheWatermark(t *testing.T) {
	qs, m := newQueues(3)
	add(qs[0], 1, 4, 9)
	add(qs[1], 2, 3, 10)
	add(qs[2], 5)
	if got := release(t, m, 5); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("released %v up to 5", got)
	}
	if n := qs[0].Len() + qs[1].Len() + qs[2].Len(); n != 2 {
		t.Fatalf("%d left, want 2", n)
	}
	add(qs[2], 6)
	if got := release(t, m, ^uint64(0)); !slices.Equal(got, []uint64{6, 9, 10}) {
		t.Fatalf("then %v", got)
	}
	if m.Late() != 0 {
		t.Fatalf("%d late", m.Late())
	}
}

func TestTiesGoToTheLowerSource(t *testing.T) {
	qs, m := newQueues(2)
	qs[1].Add(append(rec(7), "slot"...))
	qs[0].Add(append(rec(7), "ring"...))
	var got []string
	_ = m.Release(^uint64(0), func(b []byte) error { got = append(got, string(b[8:])); return nil })
	if !slices.Equal(got, []string{"ring", "slot"}) {
		t.Fatalf("%v", got)
	}
}

// A source's own disorder is kept: a record timed before the one ahead of
// it in its source goes out after it, not before.
func TestASourceKeepsItsOrder(t *testing.T) {
	qs, m := newQueues(2)
	add(qs[0], 5, 3) // e.g. a record sent ahead of another, timed earlier
	add(qs[1], 4)
	if got := release(t, m, 10); !slices.Equal(got, []uint64{4, 5, 3}) {
		t.Fatalf("%v", got)
	}
}

func TestLateRecordIsReleasedAndCounted(t *testing.T) {
	qs, m := newQueues(2)
	add(qs[0], 10)
	release(t, m, 10)
	add(qs[1], 8) // written before 10, read after it was released
	if got := release(t, m, 10); !slices.Equal(got, []uint64{8}) {
		t.Fatalf("%v", got)
	}
	if m.Late() != 1 {
		t.Fatalf("late %d, want 1", m.Late())
	}
}

func TestEmitErrorStops(t *testing.T) {
	qs, m := newQueues(1)
	add(qs[0], 1, 2)
	boom := errors.New("sink failed")
	n := 0
	if err := m.Release(^uint64(0), func([]byte) error { n++; return boom }); !errors.Is(err, boom) || n != 1 {
		t.Fatalf("err %v after %d", err, n)
	}
	if qs[0].Len() != 1 {
		t.Fatalf("%d left", qs[0].Len())
	}
}

// Random interleavings of sorted sources, released at random watermarks,
// come out as the sorted union, with the queues compacted in between.
func TestRandomMergesAreSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + r.IntN(5)
		qs, m := newQueues(n)
		last := make([]uint64, n)
		var all, got []uint64
		var now uint64
		for range 1 + r.IntN(5000) {
			now += uint64(r.IntN(5))
			src := r.IntN(n)
			// a source's records are in time order, a little behind the clock
			k := max(last[src], now-min(now, uint64(r.IntN(3))))
			last[src] = k
			add(qs[src], k)
			all = append(all, k)
			if r.IntN(50) == 0 {
				got = append(got, release(t, m, now-min(now, 3))...)
			}
		}
		got = append(got, release(t, m, ^uint64(0))...)
		slices.Sort(all)
		if !slices.Equal(got, all) {
			t.Fatalf("released %d records out of order or not all (%d)", len(got), len(all))
		}
		if m.Late() != 0 {
			t.Fatalf("%d late", m.Late())
		}
	}
}

func BenchmarkQueueRelease(b *testing.B) {
	qs, m := newQueues(3)
	r := make([]byte, 168)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		binary.LittleEndian.PutUint64(r, uint64(i))
		qs[i%3].Add(r)
		if i%4096 == 4095 {
			_ = m.Release(uint64(i-100), func([]byte) error { return nil })
		}
	}
}
