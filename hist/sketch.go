package hist

import (
	"encoding/json"
	"math/bits"
)

// Sketch geometry: values below 128 have a bucket each; above, every power
// of two is split into 64 buckets of equal width, so a bucket is at most
// 1/64 of its lower bound wide.
const (
	sketchSubBits = 6
	sketchSub     = 1 << sketchSubBits // buckets per power of two
	sketchExact   = 2 * sketchSub      // values below this are exact
	sketchBlocks  = 64 - sketchSubBits - 1 + 2
)

// SketchRelativeError is the bound on the relative error of
// [Sketch.Quantile]: 1/128, under 0.8 %.
const SketchRelativeError = 1.0 / (2 * sketchSub)

// Sketch estimates quantiles of unsigned values (latencies in ns, sizes in
// bytes) in bounded memory: log-linear buckets, exact below 128 and 64 per
// power of two above, allocated in blocks of 64 counters (512 bytes) as
// values reach them. Latencies from 1 µs to 100 ms take about 9 KiB; the
// worst case is 30 KiB. Count, Sum, Min and Max are exact. The zero value
// is an empty sketch ready to use.
type Sketch struct {
	n        uint64
	sum      uint64 // saturating
	min, max uint64
	// used has bit i set when blocks[i] may hold non-zero counts: Merge,
	// Reset and the quantile walks visit only those blocks (a reset
	// sketch keeps its blocks, zeroed, for reuse).
	used   uint64
	blocks [sketchBlocks]*[sketchSub]uint64
}

// sketchIndex returns the bucket of v.
func sketchIndex(v uint64) int {
	if v < sketchExact {
		return int(v)
	}
	shift := bits.Len64(v) - sketchSubBits - 1
	return shift*sketchSub + int(v>>shift)
}

// sketchBounds returns the inclusive bounds of bucket i.
func sketchBounds(i int) (lo, hi uint64) {
	if i < sketchExact {
		return uint64(i), uint64(i)
	}
	shift := i/sketchSub - 1
	m := uint64(i%sketchSub + sketchSub)
	lo = m << shift
	return lo, lo + (1<<shift - 1)
}

// Add counts one value.
func (s *Sketch) Add(v uint64) {
	i := sketchIndex(v)
	bi := uint(i) / sketchSub
	b := s.blocks[bi%sketchBlocks]
	if b == nil {
		b = s.block(bi)
	}
	b[uint(i)%sketchSub]++
	s.used |= 1 << bi
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if v > s.max {
		s.max = v
	}
	s.n++
	s.sum = satAdd(s.sum, v)
}

// block allocates block bi.
func (s *Sketch) block(bi uint) *[sketchSub]uint64 {
	b := new([sketchSub]uint64)
	s.blocks[bi%sketchBlocks] = b
	return b
}

// AddN counts n occurrences of v.
func (s *Sketch) AddN(v, n uint64) {
	if n == 0 {
		return
	}
	i := sketchIndex(v)
	bi := uint(i) / sketchSub
	b := s.blocks[bi%sketchBlocks]
	if b == nil {
		b = s.block(bi)
	}
	b[uint(i)%sketchSub] += n
	s.used |= 1 << bi
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if v > s.max {
		s.max = v
	}
	s.n += n
	s.sum = satAdd(s.sum, satMul(v, n))
}

// Merge adds every value counted by o to s.
func (s *Sketch) Merge(o *Sketch) {
	if o.n == 0 {
		return
	}
	for u := o.used; u != 0; u &= u - 1 {
		bi := uint(bits.TrailingZeros64(u))
		ob := o.blocks[bi%sketchBlocks]
		b := s.blocks[bi%sketchBlocks]
		if b == nil {
			b = s.block(bi)
		}
		for j := range b {
			b[j] += ob[j]
		}
	}
	s.used |= o.used
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	if o.max > s.max {
		s.max = o.max
	}
	s.n += o.n
	s.sum = satAdd(s.sum, o.sum)
}

// Reset empties s, keeping the blocks it allocated for reuse.
func (s *Sketch) Reset() {
	for u := s.used; u != 0; u &= u - 1 {
		clear(s.blocks[bits.TrailingZeros64(u)%sketchBlocks][:])
	}
	s.n, s.sum, s.min, s.max, s.used = 0, 0, 0, 0, 0
}

// Count returns the number of values added.
func (s *Sketch) Count() uint64 { return s.n }

// Sum returns the sum of the values added (saturating at MaxUint64).
func (s *Sketch) Sum() uint64 { return s.sum }

// Min returns the smallest value added, 0 when empty.
func (s *Sketch) Min() uint64 { return s.min }

// Max returns the largest value added, 0 when empty.
func (s *Sketch) Max() uint64 { return s.max }

// Mean returns the mean of the values added, 0 when empty.
func (s *Sketch) Mean() float64 {
	if s.n == 0 {
		return 0
	}
	return float64(s.sum) / float64(s.n)
}

// Quantile returns an estimate of the q-quantile (0 <= q <= 1) by nearest
// rank: the value v of rank ceil(q*Count) among the values added. The
// estimate e satisfies |e - v| <= v * [SketchRelativeError] (1/128), and
// is exact for v < 128, for q = 0 (Min) and q = 1 (Max). An empty sketch
// returns 0.
func (s *Sketch) Quantile(q float64) uint64 {
	if s.n == 0 {
		return 0
	}
	r := rank(q, s.n)
	if r == 1 {
		return s.min
	}
	if r == s.n {
		return s.max
	}
	var seen uint64
	for u := s.used; u != 0; u &= u - 1 {
		bi := bits.TrailingZeros64(u)
		for j, c := range s.blocks[bi%sketchBlocks] {
			seen += c
			if seen >= r {
				lo, hi := sketchBounds(bi*sketchSub + j)
				return clamp(lo+(hi-lo+1)/2, s.min, s.max)
			}
		}
	}
	return s.max
}

// Quantiles returns Quantile of each q, walking the buckets once; qs must
// be in increasing order.
func (s *Sketch) Quantiles(qs ...float64) []uint64 {
	out := make([]uint64, len(qs))
	if s.n == 0 {
		return out
	}
	k := 0
	for k < len(qs) && rank(qs[k], s.n) == 1 {
		out[k] = s.min
		k++
	}
	var seen uint64
	for u := s.used; u != 0; u &= u - 1 {
		bi := bits.TrailingZeros64(u)
		for j, c := range s.blocks[bi%sketchBlocks] {
			if c == 0 {
				continue
			}
			seen += c
			for k < len(qs) && seen >= rank(qs[k], s.n) {
				r := rank(qs[k], s.n)
				if r == s.n {
					out[k] = s.max
				} else {
					lo, hi := sketchBounds(bi*sketchSub + j)
					out[k] = clamp(lo+(hi-lo+1)/2, s.min, s.max)
				}
				k++
			}
		}
	}
	for ; k < len(qs); k++ {
		out[k] = s.max
	}
	return out
}

// SketchSummary is the JSON form of a Sketch: exact totals and the usual
// percentiles (within [SketchRelativeError]).
type SketchSummary struct {
	Count uint64  `json:"count"`
	Sum   uint64  `json:"sum"`
	Min   uint64  `json:"min"`
	Mean  float64 `json:"mean"`
	P50   uint64  `json:"p50"`
	P90   uint64  `json:"p90"`
	P99   uint64  `json:"p99"`
	P999  uint64  `json:"p999"`
	Max   uint64  `json:"max"`
}

// Summary returns the totals and the 50th, 90th, 99th and 99.9th
// percentiles.
func (s *Sketch) Summary() SketchSummary {
	q := s.Quantiles(0.5, 0.9, 0.99, 0.999)
	return SketchSummary{Count: s.n, Sum: s.sum, Min: s.min, Mean: s.Mean(),
		P50: q[0], P90: q[1], P99: q[2], P999: q[3], Max: s.max}
}

// MarshalJSON encodes s as its [SketchSummary].
func (s *Sketch) MarshalJSON() ([]byte, error) { return json.Marshal(s.Summary()) }
