package stackjoin

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortTS checks sortTS against a plain sort on inputs that take each
// of its ways: sorted, nearly sorted (insertion), interleaved sorted runs
// (merge) and random (many runs: pdqsort).
func TestSortTS(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := map[string]func(n int) []tsIndex{
		"sorted": func(n int) []tsIndex {
			o := make([]tsIndex, n)
			for i := range o {
				o[i] = tsIndex{ts: int64(i / 3), i: uint64(i)}
			}
			return o
		},
		"nearly": func(n int) []tsIndex {
			o := make([]tsIndex, n)
			for i := range o {
				o[i] = tsIndex{ts: int64(i + rng.IntN(4)), i: uint64(i)}
			}
			return o
		},
		"runs": func(n int) []tsIndex {
			// Blocks of 1..200 records from one of 8 sorted streams.
			var o []tsIndex
			next := make([]int64, 8)
			for len(o) < n {
				s := rng.IntN(8)
				for k := rng.IntN(200) + 1; k > 0 && len(o) < n; k-- {
					next[s] += int64(rng.IntN(50))
					o = append(o, tsIndex{ts: next[s], i: uint64(len(o))})
				}
			}
			return o
		},
		"random": func(n int) []tsIndex {
			o := make([]tsIndex, n)
			for i := range o {
				o[i] = tsIndex{ts: int64(rng.IntN(n)), i: uint64(i)}
			}
			return o
		},
	}
	for name, g := range gen {
		for _, n := range []int{0, 1, 2, 17, 1000, 20000} {
			o := g(n)
			want := slices.Clone(o)
			slices.SortFunc(want, func(a, b tsIndex) int {
				if c := cmp.Compare(a.ts, b.ts); c != 0 {
					return c
				}
				return cmp.Compare(a.i, b.i)
			})
			if err := sortTS(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o, want) {
				t.Fatalf("%s, %d: not sorted", name, n)
			}
		}
	}
}

// TestSortDefsOnce: a file's key definitions, sorted by small keys, come
// in the order the in-place sort of a live session gives them (key,
// space, time, arrival), ties and all.
func TestSortDefsOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 7, 100, 5000, 20000, -3000} {
		var a Joiner
		nkeys := n/4 + 1
		if n < 0 {
			n, nkeys = -n, 3 // long runs of one key
		}
		keys := make([]uint64, nkeys) // keys that recur: small ones, addresses, hashes
		for i := range keys {
			switch i % 3 {
			case 0:
				keys[i] = uint64(i)
			case 1:
				keys[i] = 0xFFFFF80000000000 | rng.Uint64()&0xFFFFFFFF
			default:
				keys[i] = rng.Uint64()
			}
		}
		for i := 0; i < n; i++ {
			a.defs = append(a.defs, keyDef{key: keys[rng.IntN(len(keys))], ts: int64(rng.IntN(8)) - 4,
				frames: part{off: uint32(i)}, seq: uint32(i), kernel: rng.IntN(2) == 0, create: rng.IntN(2) == 0})
		}
		if n > 50 {
			// The order is the arrival (seq), not the index: seq
			// shuffled (unique: equal definitions would have no order).
			for i, q := range rng.Perm(n) {
				a.defs[i].seq = uint32(q)
			}
		}
		b := Joiner{defs: slices.Clone(a.defs)}
		a.sortDefs()
		if err := b.sortDefsOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.defs, b.defs) {
			t.Fatalf("%d definitions: sortDefsOnce differs from sortDefs", n)
		}
		if !b.defsSorted {
			t.Errorf("%d definitions: not marked sorted", n)
		}
	}
}
