package hist

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// Linear is a histogram of signed values in equal-width buckets: bucket i
// holds [Min+i*Step, Min+(i+1)*Step), for Min <= v < Max; values below Min
// and at or above Max are counted apart (Under, Over). Create one with
// [NewLinear].
type Linear struct {
	lo, hi, step int64
	counts       []uint64
	under, over  uint64
	n            uint64
	sum          int64 // saturating
	min, max     int64
}

// LinearBucket is one bucket of a Linear histogram: Count values v with
// Low <= v < High.
type LinearBucket struct {
	Low   int64  `json:"low"`
	High  int64  `json:"high"`
	Count uint64 `json:"count"`
}

// maxLinearBuckets bounds the memory of a Linear histogram.
const maxLinearBuckets = 1 << 20

// NewLinear returns an empty histogram of the buckets [min, max) in steps
// of step. It fails unless min < max, step > 0 and there are at most
// 1,048,576 buckets (the last bucket may be narrower when step does not
// divide max-min).
func NewLinear(min, max, step int64) (*Linear, error) {
	if step <= 0 {
		return nil, fmt.Errorf("linear histogram: step %d is not positive", step)
	}
	if min >= max {
		return nil, fmt.Errorf("linear histogram: min %d is not below max %d", min, max)
	}
	span := uint64(max) - uint64(min) // exact even when max-min overflows int64
	n := span / uint64(step)
	if span%uint64(step) != 0 {
		n++
	}
	if n > maxLinearBuckets {
		return nil, fmt.Errorf("linear histogram: [%d, %d) in steps of %d makes %d buckets, more than %d", min, max, step, n, maxLinearBuckets)
	}
	return &Linear{lo: min, hi: max, step: step, counts: make([]uint64, n)}, nil
}

// Bounds returns the min, max and step the histogram was created with.
func (h *Linear) Bounds() (min, max, step int64) { return h.lo, h.hi, h.step }

// Add counts one value.
func (h *Linear) Add(v int64) { h.AddN(v, 1) }

// AddN counts n occurrences of v.
func (h *Linear) AddN(v int64, n uint64) {
	if n == 0 {
		return
	}
	switch {
	case v < h.lo:
		h.under += n
	case v >= h.hi:
		h.over += n
	default:
		h.counts[(uint64(v)-uint64(h.lo))/uint64(h.step)] += n
	}
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if h.n == 0 || v > h.max {
		h.max = v
	}
	h.n += n
	h.sum = satAddInt(h.sum, satMulInt(v, n))
}

// Merge adds every value counted by o to h. Both must have the same
// bounds and step.
func (h *Linear) Merge(o *Linear) error {
	if h.lo != o.lo || h.hi != o.hi || h.step != o.step {
		return fmt.Errorf("merge linear histograms: [%d, %d) step %d and [%d, %d) step %d differ", h.lo, h.hi, h.step, o.lo, o.hi, o.step)
	}
	if o.n == 0 {
		return nil
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.under += o.under
	h.over += o.over
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if h.n == 0 || o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum = satAddInt(h.sum, o.sum)
	return nil
}

// Count returns the number of values added (Under and Over included).
func (h *Linear) Count() uint64 { return h.n }

// Sum returns the sum of the values added (saturating at the int64 range).
func (h *Linear) Sum() int64 { return h.sum }

// Min returns the smallest value added, 0 when empty.
func (h *Linear) Min() int64 { return h.min }

// Max returns the largest value added, 0 when empty.
func (h *Linear) Max() int64 { return h.max }

// Under returns the number of values below min.
func (h *Linear) Under() uint64 { return h.under }

// Over returns the number of values at or above max.
func (h *Linear) Over() uint64 { return h.over }

// Quantile returns an estimate of the q-quantile (0 <= q <= 1) by nearest
// rank, and whether there is one: the midpoint of the bucket holding the
// value of rank ceil(q*Count), clamped to [Min, Max], so at most half a
// step off. Quantile(0) is Min and Quantile(1) is Max. A value below min
// or at or above max (counted in Under or Over) is not known: ok is false
// then, and for an empty histogram.
func (h *Linear) Quantile(q float64) (v int64, ok bool) {
	if h.n == 0 {
		return 0, false
	}
	r := rank(q, h.n)
	switch {
	case r == 1:
		return h.min, true
	case r == h.n:
		return h.max, true
	case r <= h.under:
		return 0, false
	}
	seen := h.under
	for i, c := range h.counts {
		seen += c
		if seen >= r {
			lo, hi := h.bucketBounds(i)
			mid := int64(uint64(lo) + (uint64(hi-1)-uint64(lo))/2) // no overflow at the extremes
			return max(h.min, min(mid, h.max)), true
		}
	}
	return 0, false // in Over
}

// Buckets returns every bucket from min to max, empty ones included.
func (h *Linear) Buckets() []LinearBucket {
	out := make([]LinearBucket, len(h.counts))
	for i, c := range h.counts {
		lo, hi := h.bucketBounds(i)
		out[i] = LinearBucket{Low: lo, High: hi, Count: c}
	}
	return out
}

func (h *Linear) bucketBounds(i int) (lo, hi int64) {
	lo = int64(uint64(h.lo) + uint64(i)*uint64(h.step))
	hi = lo + h.step
	if hi > h.hi || hi < lo {
		hi = h.hi
	}
	return lo, hi
}

// LinearSummary is the JSON form of a Linear histogram.
type LinearSummary struct {
	Count   uint64         `json:"count"`
	Sum     int64          `json:"sum"`
	Min     int64          `json:"min"`
	Max     int64          `json:"max"`
	Step    int64          `json:"step"`
	Under   uint64         `json:"under"`
	Over    uint64         `json:"over"`
	Buckets []LinearBucket `json:"buckets"`
}

// Summary returns the totals and buckets of h.
func (h *Linear) Summary() LinearSummary {
	return LinearSummary{Count: h.n, Sum: h.sum, Min: h.min, Max: h.max, Step: h.step,
		Under: h.under, Over: h.over, Buckets: h.Buckets()}
}

// MarshalJSON encodes h as its [LinearSummary].
func (h *Linear) MarshalJSON() ([]byte, error) { return json.Marshal(h.Summary()) }

// Render draws h like [Log2.Render], one row per bucket between the lowest
// and the highest non-empty one ("lo -> hi" with hi inclusive), plus
// "< min" and ">= max" rows when values fell outside.
func (h *Linear) Render(w io.Writer, opts RenderOptions) error {
	var rows []row
	if h.under > 0 {
		rows = append(rows, row{lo: "< " + itoa(h.lo), count: h.under})
	}
	first, last := -1, -1
	for i, c := range h.counts {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	for i := first; first >= 0 && i <= last; i++ {
		lo, hi := h.bucketBounds(i)
		rows = append(rows, row{lo: itoa(lo), hi: itoa(hi - 1), count: h.counts[i]})
	}
	if h.over > 0 {
		rows = append(rows, row{lo: ">= " + itoa(h.hi), count: h.over})
	}
	return render(w, opts, rows)
}

func satAddInt(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return math.MinInt64
	}
	return s
}

func satMulInt(v int64, n uint64) int64 {
	if n == 1 || v == 0 {
		return v
	}
	if n > math.MaxInt64 {
		if v > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	p := v * int64(n)
	if p/int64(n) != v {
		if v > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return p
}
