package stackjoin

import (
	"cmp"
	"slices"
)

// Sorting what a file's first pass collected: stack records and stacks
// by time (sortTS: nearly in order, taken in linear time), key
// definitions by key (sortDefOrder: a radix sort).

// tsIndex is a sort key: a time, then i (which ends with an index, so
// that equal times keep their order).
type tsIndex struct {
	ts int64
	i  uint64
}

// sortTS sorts o by time, then index.
func sortTS(o []tsIndex) {
	// The first pass meets the records of each processor in time order,
	// its streams merged with little lead: nearly sorted, or sorted runs
	// (a stream runs ahead past the records the pass does not keep).
	// Insertion sort takes the former in linear time; when moves add up,
	// the ascending runs are merged instead.
	budget := 2 * len(o)
	for i := 1; i < len(o); i++ {
		x := o[i]
		j := i
		for j > 0 && tsLess(x, o[j-1]) {
			o[j] = o[j-1]
			j--
		}
		o[j] = x
		if budget -= i - j; budget < 0 {
			mergeRuns(o)
			return
		}
	}
}

// mergeRuns sorts o by merging its ascending runs, pairwise, until one is
// left; when o has many short runs, it sorts it by pdqsort instead.
func mergeRuns(o []tsIndex) {
	bounds := []int{0}
	for i := 1; i < len(o); i++ {
		if tsLess(o[i], o[i-1]) {
			bounds = append(bounds, i)
		}
	}
	bounds = append(bounds, len(o))
	if len(bounds) <= 2 {
		return
	}
	if len(bounds) > len(o)/8 {
		slices.SortFunc(o, func(a, b tsIndex) int {
			if c := cmp.Compare(a.ts, b.ts); c != 0 {
				return c
			}
			return cmp.Compare(a.i, b.i)
		})
		return
	}
	src, dst := o, make([]tsIndex, len(o))
	for len(bounds) > 2 {
		// Merge runs 0 and 1, 2 and 3, ... into dst; bounds are
		// rewritten in place (each is read before it is overwritten).
		k := 1
		for j := 0; j+1 < len(bounds); j += 2 {
			lo, hi := bounds[j], bounds[j+1]
			if j+2 < len(bounds) {
				mid := hi
				hi = bounds[j+2]
				mergeTS(dst[lo:hi], src[lo:mid], src[mid:hi])
			} else {
				copy(dst[lo:hi], src[lo:hi])
			}
			bounds[k] = hi
			k++
		}
		bounds = bounds[:k]
		src, dst = dst, src
	}
	if &src[0] != &o[0] {
		copy(o, src)
	}
}

// mergeTS merges the sorted a and b into d (len(a)+len(b) long).
func mergeTS(d, a, b []tsIndex) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if tsLess(b[j], a[i]) {
			d[k] = b[j]
			j++
		} else {
			d[k] = a[i]
			i++
		}
		k++
	}
	k += copy(d[k:], a[i:])
	copy(d[k:], b[j:])
}

func tsLess(a, b tsIndex) bool {
	return a.ts < b.ts || a.ts == b.ts && a.i < b.i
}

// sortDefOrder sorts o by key (a radix sort, byte by byte from the
// lowest: the keys are addresses and hashes, rarely equal), then each run
// of equal keys by space, time and arrival (insertion sort: runs are
// short, else pdqsort).
func sortDefOrder(o []defOrder) {
	if len(o) < 2 {
		return
	}
	tmp := make([]defOrder, len(o))
	src, dst := o, tmp
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for i := range src {
			count[byte(src[i].key>>shift)]++
		}
		if count[byte(src[0].key>>shift)] == len(src) {
			continue // every key has this byte: the order stands
		}
		pos := 0
		for b := range count {
			pos, count[b] = pos+count[b], pos
		}
		for i := range src {
			b := byte(src[i].key >> shift)
			dst[count[b]] = src[i]
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &o[0] {
		copy(o, src)
	}
	for lo := 0; lo < len(o); {
		hi := lo + 1
		for hi < len(o) && o[hi].key == o[lo].key {
			hi++
		}
		run := o[lo:hi]
		if len(run) > 16 {
			// Many definitions of one key (a damaged or crafted file):
			// no quadratic insertion sort.
			slices.SortFunc(run, func(a, b defOrder) int {
				switch {
				case defAfter(a, b):
					return 1
				case defAfter(b, a):
					return -1
				}
				return 0
			})
		} else {
			for i := 1; i < len(run); i++ {
				x := run[i]
				j := i
				for j > 0 && defAfter(run[j-1], x) {
					run[j] = run[j-1]
					j--
				}
				run[j] = x
			}
		}
		lo = hi
	}
}

// defAfter reports whether a comes after b, both of one key: by space
// (user first), time, then arrival and index.
func defAfter(a, b defOrder) bool {
	if ka, kb := a.ks>>63, b.ks>>63; ka != kb {
		return ka > kb
	}
	if a.ts != b.ts {
		return a.ts > b.ts
	}
	return a.ks > b.ks
}

// defOrder is the sort key of a key definition: key, then space (kernel
// in the top bit of ks), time, arrival (seq, in bits 32-62: a file's
// first pass never keeps 1<<31 definitions) and its index (low 32 bits).
type defOrder struct {
	key uint64
	ts  int64
	ks  uint64
}
