package hist

import (
	"encoding/json"
	"io"
	"math"
	"math/bits"
)

// log2Buckets is the number of Log2 buckets: one for 0 and one per bit
// length 1..64.
const log2Buckets = 65

// Log2 is a histogram of unsigned values in power-of-two buckets: bucket 0
// holds 0, bucket k (1..64) holds [2^(k-1), 2^k-1]. The zero value is an
// empty histogram ready to use; it takes about 540 bytes and never
// allocates.
type Log2 struct {
	counts   [log2Buckets]uint64
	n        uint64
	sum      uint64 // saturates at MaxUint64
	min, max uint64
}

// Bucket is one bucket of a Log2 histogram: Count values v with
// Low <= v <= High.
type Bucket struct {
	Low   uint64 `json:"low"`
	High  uint64 `json:"high"`
	Count uint64 `json:"count"`
}

// log2Index returns the bucket of v.
func log2Index(v uint64) int { return bits.Len64(v) }

// log2Bounds returns the inclusive bounds of bucket k.
func log2Bounds(k int) (lo, hi uint64) {
	if k == 0 {
		return 0, 0
	}
	lo = 1 << (k - 1)
	if k == 64 {
		return lo, math.MaxUint64
	}
	return lo, 1<<k - 1
}

// Add counts one value.
func (h *Log2) Add(v uint64) { h.AddN(v, 1) }

// AddN counts n occurrences of v.
func (h *Log2) AddN(v, n uint64) {
	if n == 0 {
		return
	}
	h.counts[log2Index(v)] += n
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n += n
	h.sum = satAdd(h.sum, satMul(v, n))
}

// Merge adds every value counted by o to h.
func (h *Log2) Merge(o *Log2) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum = satAdd(h.sum, o.sum)
}

// Reset empties h.
func (h *Log2) Reset() { *h = Log2{} }

// Count returns the number of values added.
func (h *Log2) Count() uint64 { return h.n }

// Sum returns the sum of the values added (saturating at MaxUint64).
func (h *Log2) Sum() uint64 { return h.sum }

// Min returns the smallest value added, 0 when empty.
func (h *Log2) Min() uint64 { return h.min }

// Max returns the largest value added, 0 when empty.
func (h *Log2) Max() uint64 { return h.max }

// Mean returns the mean of the values added, 0 when empty.
func (h *Log2) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.n)
}

// Quantile returns an estimate of the q-quantile (0 <= q <= 1) by nearest
// rank: the value of rank ceil(q*Count). The estimate is the midpoint of
// the power-of-two bucket holding that value, clamped to [Min, Max], so it
// lies in the same bucket as the exact answer: less than a factor of 2
// off. Use [Sketch] when percentiles must be accurate. Quantile(0) is Min,
// Quantile(1) is Max; an empty histogram returns 0.
func (h *Log2) Quantile(q float64) uint64 {
	if h.n == 0 {
		return 0
	}
	r := rank(q, h.n)
	if r == 1 {
		return h.min
	}
	if r == h.n {
		return h.max
	}
	var seen uint64
	for k, c := range h.counts {
		seen += c
		if seen >= r {
			lo, hi := log2Bounds(k)
			return clamp(lo+(hi-lo)/2, h.min, h.max)
		}
	}
	return h.max
}

// Buckets returns the buckets from the lowest to the highest non-empty
// one (empty ones in between included, as drawn), or nil when empty.
func (h *Log2) Buckets() []Bucket {
	if h.n == 0 {
		return nil
	}
	first, last := log2Index(h.min), log2Index(h.max)
	out := make([]Bucket, 0, last-first+1)
	for k := first; k <= last; k++ {
		lo, hi := log2Bounds(k)
		out = append(out, Bucket{Low: lo, High: hi, Count: h.counts[k]})
	}
	return out
}

// BucketCount returns the count of bucket k (0..64): values in
// [2^(k-1), 2^k-1], or 0 for k == 0.
func (h *Log2) BucketCount(k int) uint64 {
	if k < 0 || k >= log2Buckets {
		return 0
	}
	return h.counts[k]
}

// Summary is the JSON form of a histogram: its totals and buckets.
type Summary struct {
	Count   uint64   `json:"count"`
	Sum     uint64   `json:"sum"`
	Min     uint64   `json:"min"`
	Max     uint64   `json:"max"`
	Buckets []Bucket `json:"buckets"`
}

// Summary returns the totals and buckets of h.
func (h *Log2) Summary() Summary {
	return Summary{Count: h.n, Sum: h.sum, Min: h.min, Max: h.max, Buckets: h.Buckets()}
}

// MarshalJSON encodes h as its [Summary].
func (h *Log2) MarshalJSON() ([]byte, error) { return json.Marshal(h.Summary()) }

// Render draws h as a biolatency-style table, one row per bucket from the
// lowest to the highest non-empty one:
//
//	usecs               : count    distribution
//	    0 -> 1          : 3        |**                                      |
//	    2 -> 3          : 55       |****************************************|
//
// An empty histogram draws the header only.
func (h *Log2) Render(w io.Writer, opts RenderOptions) error {
	rows := make([]row, 0, 16)
	for _, b := range h.Buckets() {
		rows = append(rows, row{lo: utoa(b.Low), hi: utoa(b.High), count: b.Count})
	}
	return render(w, opts, rows)
}

// rank returns the 1-based nearest rank of quantile q among n values.
func rank(q float64, n uint64) uint64 {
	if !(q > 0) { // also NaN
		return 1
	}
	if q >= 1 {
		return n
	}
	r := uint64(math.Ceil(q * float64(n)))
	if r < 1 {
		r = 1
	}
	if r > n {
		r = n
	}
	return r
}

func clamp(v, lo, hi uint64) uint64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

func satAdd(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return math.MaxUint64
	}
	return s
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// MergeSummaries adds the counts of b to a, bucket by bucket: the summary
// of a histogram of both sets of values (buckets are the same powers of
// two in every Log2).
func MergeSummaries(a, b Summary) Summary {
	var h Log2
	for _, s := range []Summary{a, b} {
		for _, k := range s.Buckets {
			h.AddN(k.Low, k.Count)
		}
	}
	out := h.Summary()
	out.Count, out.Sum = a.Count+b.Count, satAdd(a.Sum, b.Sum)
	switch {
	case a.Count == 0:
		out.Min, out.Max = b.Min, b.Max
	case b.Count == 0:
		out.Min, out.Max = a.Min, a.Max
	default:
		out.Min, out.Max = min(a.Min, b.Min), max(a.Max, b.Max)
	}
	return out
}
