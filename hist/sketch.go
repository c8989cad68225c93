package hist

import (
	"encoding/json"
	"math"
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
// power of two above, allocated in blocks of 64 counters as values reach
// them. A block starts with 16-bit counters (128 bytes) and is widened to
// 64-bit counters (512 bytes) when one of its counts would pass 65,535: the
// many small sketches of a report (one per process and per file) stay
// small, and an Add touches few cache lines. Latencies from 1 µs to 100 ms
// take about 3–10 KiB (the struct itself is ≈ 1 KiB); the worst case is
// 31 KiB. Counts are exact at every width; Count, Sum, Min and Max are
// exact. The zero value is an empty sketch ready to use.
type Sketch struct {
	n        uint64
	sum      uint64 // saturating
	min, max uint64
	// used has bit i set when block i may hold non-zero counts: Merge,
	// Reset and the quantile walks visit only those blocks (a reset
	// sketch keeps its blocks, zeroed, for reuse).
	used uint64
	// Block i is narrow[i] (16-bit counters) or wide[i] (64-bit
	// counters), never both; nil when never reached.
	narrow [sketchBlocks]*[sketchSub]uint16
	wide   [sketchBlocks]*[sketchSub]uint64
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
	i := uint(sketchIndex(v))
	bi, j := i/sketchSub%sketchBlocks, i%sketchSub
	if b := s.narrow[bi]; b != nil && b[j] != math.MaxUint16 {
		b[j]++
	} else if w := s.wide[bi]; w != nil {
		w[j]++
	} else {
		s.addSlow(bi, j, 1)
	}
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

// addSlow adds n to counter j of block bi when Add's narrow increment
// does not apply: the block is wide, missing, or the count would overflow
// its 16 bits.
func (s *Sketch) addSlow(bi, j uint, n uint64) {
	if w := s.wide[bi]; w != nil {
		w[j] += n
		return
	}
	b := s.narrow[bi]
	if b == nil {
		b = new([sketchSub]uint16)
		s.narrow[bi] = b
	}
	if c := uint64(b[j]) + n; c <= math.MaxUint16 {
		b[j] = uint16(c)
		return
	}
	s.widen(bi)[j] += n
}

// widen turns block bi (narrow or missing) into a wide block and returns it.
func (s *Sketch) widen(bi uint) *[sketchSub]uint64 {
	w := s.wide[bi]
	if w != nil {
		return w
	}
	w = new([sketchSub]uint64)
	if b := s.narrow[bi]; b != nil {
		for j, c := range b {
			w[j] = uint64(c)
		}
		s.narrow[bi] = nil
	}
	s.wide[bi] = w
	return w
}

// block returns the counts of block bi, copied into buf when the block is
// narrow; nil when the block was never reached.
func (s *Sketch) block(bi uint, buf *[sketchSub]uint64) *[sketchSub]uint64 {
	if w := s.wide[bi%sketchBlocks]; w != nil {
		return w
	}
	b := s.narrow[bi%sketchBlocks]
	if b == nil {
		return nil
	}
	for j, c := range b {
		buf[j] = uint64(c)
	}
	return buf
}

// AddN counts n occurrences of v.
func (s *Sketch) AddN(v, n uint64) {
	if n == 0 {
		return
	}
	i := uint(sketchIndex(v))
	bi, j := i/sketchSub%sketchBlocks, i%sketchSub
	s.addSlow(bi, j, n)
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
	var buf [sketchSub]uint64
	for u := o.used; u != 0; u &= u - 1 {
		bi := uint(bits.TrailingZeros64(u)) % sketchBlocks
		ob := o.block(bi, &buf)
		if ob == nil {
			continue
		}
		if w := s.wide[bi]; w != nil {
			for j := range w {
				w[j] += ob[j]
			}
			continue
		}
		b := s.narrow[bi]
		if b == nil {
			b = new([sketchSub]uint16)
			s.narrow[bi] = b
		}
		fits := true
		for j, c := range b {
			if uint64(c)+ob[j] > math.MaxUint16 {
				fits = false
				break
			}
		}
		if fits {
			for j := range b {
				b[j] += uint16(ob[j])
			}
			continue
		}
		w := s.widen(bi)
		for j := range w {
			w[j] += ob[j]
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
		bi := uint(bits.TrailingZeros64(u)) % sketchBlocks
		if b := s.narrow[bi]; b != nil {
			clear(b[:])
		}
		if w := s.wide[bi]; w != nil {
			clear(w[:])
		}
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
	var buf [sketchSub]uint64
	for u := s.used; u != 0; u &= u - 1 {
		bi := bits.TrailingZeros64(u)
		b := s.block(uint(bi), &buf)
		if b == nil {
			continue
		}
		for j, c := range b {
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
	var buf [sketchSub]uint64
	for u := s.used; u != 0; u &= u - 1 {
		bi := bits.TrailingZeros64(u)
		b := s.block(uint(bi), &buf)
		if b == nil {
			continue
		}
		for j, c := range b {
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
