package report

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRecentBlocksModel checks the ring and its index against a plain
// list of the last n blocks, with causes drawn from a small set so that
// chains, probe collisions, wrap-around and deletions by backward shift
// all happen.
func TestRecentBlocksModel(t *testing.T) {
	for _, size := range []int{1, 2, 8, 64} {
		rb := newRecentBlocks(size)
		rng := rand.New(rand.NewPCG(1, uint64(size)))
		type added struct {
			cause uint64
			id    uint64
		}
		var all []added
		for step := range 20000 {
			cause := 1 + rng.Uint64N(uint64(3*size))
			if rng.IntN(4) == 0 {
				cause = 1 + rng.Uint64N(3) // long chains
			}
			id := uint64(step + 1)
			rb.add(cause, blockRef{ID: id})
			all = append(all, added{cause, id})
			live := all[max(0, len(all)-size):]
			for _, probe := range []uint64{cause, 1 + rng.Uint64N(uint64(3*size)), 1 << 40} {
				var want []uint64
				for _, a := range live {
					if a.cause == probe && len(want) < maxChain {
						want = append(want, a.id)
					}
				}
				var got []uint64
				for _, b := range rb.take(probe, nil) {
					got = append(got, b.ID)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("ring of %d, step %d: take(%d) = %v, want %v", size, step, probe, got, want)
				}
			}
		}
		// The index holds exactly the causes still in the ring.
		used := 0
		for _, v := range rb.heads {
			if v != 0 {
				used++
			}
		}
		causes := map[uint64]bool{}
		for _, a := range all[len(all)-size:] {
			causes[a.cause] = true
		}
		if used != len(causes) {
			t.Errorf("ring of %d: %d index entries for %d live causes", size, used, len(causes))
		}
	}
}

// TestRecentBlocksTakeAppends checks that take respects what dst holds.
func TestRecentBlocksTakeAppends(t *testing.T) {
	rb := newRecentBlocks(128)
	for i := range 100 {
		rb.add(7, blockRef{ID: uint64(i)})
	}
	dst := make([]blockRef, 30)
	got := rb.take(7, dst)
	if len(got) != maxChain || got[30].ID != 0 || got[31].ID != 1 {
		t.Errorf("take appended %d blocks (%v, %v), want the 2 oldest", len(got)-30, got[30].ID, got[31].ID)
	}
}
