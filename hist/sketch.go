package hist

import (
	"encoding/json"
	"math"
	"math/bits"
)

// Sketch geometry: values below 128 have a bucket each; above, every power
// of two is split into 64 buckets of equal width, so a bucket is at most
// 1/64 of its lower bound wide. Counters are allocated a block of 64
// buckets at a time.
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
// power of two above. The counters form one window over the buckets
// between the smallest and the largest value seen, in whole blocks of 64
// buckets, at least doubled when it grows. The window starts with 16-bit
// counters and is widened to 64-bit counters when one count would pass
// 65,535: the many small sketches of a report (one per process and per
// file) stay small, and an Add touches two cache lines (the struct's
// first 64 bytes and one counter). Latencies from 1 µs to 100 ms take
// 2–4 KiB; the worst case (values over the whole uint64 range, widened)
// is 30 KiB. Counts are
// exact at every width; Count, Sum, Min and Max are exact. The zero value
// is an empty sketch ready to use.
type Sketch struct {
	// narrow holds the counters of buckets lo, lo+1, … while they are 16
	// bits wide; nil once the window is wide. The fields Add touches
	// come first, within 64 bytes.
	narrow   []uint16
	lo       uint // first bucket of the window, a multiple of sketchSub
	n        uint64
	sum      uint64 // saturating
	min, max uint64
	// wide holds the counters once widened (then narrow is nil).
	wide []uint64
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
	k := uint(sketchIndex(v)) - s.lo // wraps below the window
	if k < uint(len(s.narrow)) && s.narrow[k] != math.MaxUint16 {
		s.narrow[k]++
	} else {
		s.addSlow(uint(sketchIndex(v)), 1)
	}
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if v > s.max {
		s.max = v
	}
	s.n++
	s.sum = satAdd(s.sum, v)
}

// span returns the number of buckets in the window.
func (s *Sketch) span() uint {
	if s.wide != nil {
		return uint(len(s.wide))
	}
	return uint(len(s.narrow))
}

// cover grows the window to hold buckets lo to hi-1, whole blocks.
func (s *Sketch) cover(lo, hi uint) {
	lo = lo &^ (sketchSub - 1)
	hi = (hi + sketchSub - 1) &^ (sketchSub - 1)
	n, shift := s.span(), uint(0)
	if n > 0 {
		if lo >= s.lo && hi <= s.lo+n {
			return
		}
		// Grow by at least the old span in the direction needed (within
		// the bucket range): a window reaches its final size in a few
		// steps instead of a copy per block.
		if lo < s.lo {
			lo = min(lo, s.lo-min(s.lo, n))
		}
		if hi > s.lo+n {
			hi = max(hi, min(s.lo+2*n, sketchBlocks*sketchSub))
		}
		lo, hi = min(lo, s.lo), max(hi, s.lo+n)
		shift = s.lo - lo // where the old counters go in the new window
	}
	if s.wide != nil {
		w := make([]uint64, hi-lo)
		copy(w[shift:], s.wide)
		s.wide = w
	} else {
		b := make([]uint16, hi-lo)
		copy(b[shift:], s.narrow)
		s.narrow = b
	}
	s.lo = lo
}

// Reserve makes room for the values from lo to hi, so that values in that
// range are counted without growing the window: for sketches created
// often (one per file), one allocation instead of a few.
func (s *Sketch) Reserve(lo, hi uint64) {
	if lo > hi {
		return
	}
	s.cover(uint(sketchIndex(lo)), uint(sketchIndex(hi))+1)
}

// widen turns the window's counters into 64-bit ones.
func (s *Sketch) widen() {
	if s.wide != nil {
		return
	}
	w := make([]uint64, len(s.narrow))
	for k, c := range s.narrow {
		w[k] = uint64(c)
	}
	s.wide, s.narrow = w, nil
}

// addSlow adds n to bucket i when Add's narrow increment does not apply:
// the window is wide, does not reach i, or the count would overflow its
// 16 bits.
func (s *Sketch) addSlow(i uint, n uint64) {
	s.cover(i, i+1)
	k := i - s.lo
	if s.wide == nil {
		if c := uint64(s.narrow[k]) + n; c <= math.MaxUint16 {
			s.narrow[k] = uint16(c)
			return
		}
		s.widen()
	}
	s.wide[k] += n
}

// count returns the count of window slot k.
func (s *Sketch) count(k uint) uint64 {
	if s.wide != nil {
		return s.wide[k]
	}
	return uint64(s.narrow[k])
}

// AddN counts n occurrences of v.
func (s *Sketch) AddN(v, n uint64) {
	if n == 0 {
		return
	}
	s.addSlow(uint(sketchIndex(v)), n)
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
	on := o.span()
	s.cover(o.lo, o.lo+on)
	off := o.lo - s.lo
	if s.wide == nil {
		for k := range on {
			if uint64(s.narrow[off+k])+o.count(k) > math.MaxUint16 {
				s.widen()
				break
			}
		}
	}
	if s.wide != nil {
		w := s.wide[off : off+on]
		for k := range w {
			w[k] += o.count(uint(k))
		}
	} else {
		b := s.narrow[off : off+on]
		for k := range b {
			b[k] += uint16(o.count(uint(k)))
		}
	}
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	if o.max > s.max {
		s.max = o.max
	}
	s.n += o.n
	s.sum = satAdd(s.sum, o.sum)
}

// Reset empties s, keeping its window (zeroed) for reuse.
func (s *Sketch) Reset() {
	clear(s.narrow)
	clear(s.wide)
	s.n, s.sum, s.min, s.max = 0, 0, 0, 0
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
	for k := range s.span() {
		seen += s.count(k)
		if seen >= r {
			lo, hi := sketchBounds(int(s.lo + k))
			return clamp(lo+(hi-lo+1)/2, s.min, s.max)
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
	for j := range s.span() {
		c := s.count(j)
		if c == 0 {
			continue
		}
		seen += c
		for k < len(qs) && seen >= rank(qs[k], s.n) {
			r := rank(qs[k], s.n)
			if r == s.n {
				out[k] = s.max
			} else {
				lo, hi := sketchBounds(int(s.lo + j))
				out[k] = clamp(lo+(hi-lo+1)/2, s.min, s.max)
			}
			k++
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
