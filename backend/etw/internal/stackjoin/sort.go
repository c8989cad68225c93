package stackjoin

import "context"

// Sorting what a file's first pass collected: stack records and stacks
// by time (sortTS: nearly in order, taken in linear time), key
// definitions by key (sortDefOrder). Every sort is linear or n log n in
// merges of runs, and stops between passes when its context is done: a
// file's first pass honours Ctrl-C while it assembles its stacks.

// tsIndex is a sort key: a time, then i (which ends with an index, so
// that equal times keep their order).
type tsIndex struct {
	ts int64
	i  uint64
}

// sortTS sorts o by time, then index. It stops when ctx is done.
func sortTS(ctx context.Context, o []tsIndex) error {
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
			return mergeRuns(ctx, o)
		}
	}
	return nil
}

// mergeRuns sorts o by merging its ascending runs, pairwise, until one is
// left; when o has many short runs, it sorts it by radix instead.
func mergeRuns(ctx context.Context, o []tsIndex) error {
	bounds := []int{0}
	for i := 1; i < len(o); i++ {
		if tsLess(o[i], o[i-1]) {
			bounds = append(bounds, i)
		}
	}
	bounds = append(bounds, len(o))
	if len(bounds) <= 2 {
		return nil
	}
	if len(bounds) > len(o)/8 {
		return radixSort(ctx, o, 16, func(x *tsIndex, d int) byte {
			if d < 8 {
				return byte(x.i >> (8 * d))
			}
			return byte((uint64(x.ts) ^ 1<<63) >> (8 * (d - 8)))
		})
	}
	src, dst := o, make([]tsIndex, len(o))
	for len(bounds) > 2 {
		if err := ctx.Err(); err != nil {
			return err
		}
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
	return nil
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

// sortDefOrder sorts o by key, space, time and arrival (then index: the
// order o comes in), a radix sort: linear in the definitions however many
// share a key (a damaged or crafted file), and it stops when ctx is done.
func sortDefOrder(ctx context.Context, o []defOrder) error {
	return radixSort(ctx, o, 21, func(x *defOrder, d int) byte {
		switch {
		case d < 4: // arrival: bits 32-62 of ks
			return byte(x.ks >> 32 & (1<<31 - 1) >> (8 * d))
		case d < 12: // time, as unsigned
			return byte((uint64(x.ts) ^ 1<<63) >> (8 * (d - 4)))
		case d == 12: // space
			return byte(x.ks >> 63)
		}
		return byte(x.key >> (8 * (d - 13)))
	})
}

// radixSort sorts o, stably, by the digits key gives for d = 0 (the least
// significant) to digits-1, byte by byte, skipping a digit every element
// shares. It checks ctx before each pass.
func radixSort[T any](ctx context.Context, o []T, digits int, key func(x *T, d int) byte) error {
	if len(o) < 2 {
		return nil
	}
	var tmp []T
	src := o
	for d := 0; d < digits; d++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var count [256]int
		for i := range src {
			count[key(&src[i], d)]++
		}
		if count[key(&src[0], d)] == len(src) {
			continue // every element has this digit: the order stands
		}
		pos := 0
		for b := range count {
			pos, count[b] = pos+count[b], pos
		}
		if tmp == nil {
			tmp = make([]T, len(o))
		}
		dst := tmp
		if &src[0] == &tmp[0] {
			dst = o
		}
		for i := range src {
			b := key(&src[i], d)
			dst[count[b]] = src[i]
			count[b]++
		}
		src = dst
	}
	if &src[0] != &o[0] {
		copy(o, src)
	}
	return nil
}

// defOrder is the sort key of a key definition: key, then space (kernel
// in the top bit of ks), time, arrival (seq, in bits 32-62: a file's
// first pass never keeps 1<<31 definitions) and its index (low 32 bits).
type defOrder struct {
	key uint64
	ts  int64
	ks  uint64
}
