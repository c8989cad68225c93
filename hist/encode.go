package hist

import (
	"fmt"
	"math"
)

// SketchData is the mergeable encoding of a [Sketch], as `iotrace report
// --format json` writes it (docs/analysis.md): the exact totals and every
// non-empty bucket as a pair [index, count]. Bucket i holds the values
// from the lower to the upper bound of [SketchBucketBounds](i). Two
// encodings decode to sketches whose [Sketch.Merge] is the sketch of all
// their values, with the same error bound as one sketch of them.
type SketchData struct {
	Count   uint64      `json:"count"`
	Sum     uint64      `json:"sum"`
	Min     uint64      `json:"min"`
	Max     uint64      `json:"max"`
	Buckets [][2]uint64 `json:"buckets"`
}

// SketchBucketBounds returns the inclusive bounds of sketch bucket i.
func SketchBucketBounds(i int) (lo, hi uint64) { return sketchBounds(i) }

// sketchBuckets is the number of buckets (the last one holds MaxUint64).
var sketchBuckets = sketchIndex(math.MaxUint64) + 1

// Data returns the mergeable encoding of s.
func (s *Sketch) Data() SketchData {
	d := SketchData{Count: s.n, Sum: s.sum, Min: s.min, Max: s.max, Buckets: [][2]uint64{}}
	for k := range s.span() {
		if c := s.count(k); c != 0 {
			d.Buckets = append(d.Buckets, [2]uint64{uint64(s.lo + k), c})
		}
	}
	return d
}

// SketchFromData decodes an encoding made by [Sketch.Data]. It checks that
// the encoding is one a sketch can have (bucket indexes in range and
// increasing, counts that add up to Count, Min and Max inside the first
// and last buckets) and says what is wrong otherwise.
func SketchFromData(d SketchData) (*Sketch, error) {
	s := &Sketch{}
	if d.Count == 0 {
		if len(d.Buckets) != 0 || d.Sum != 0 || d.Min != 0 || d.Max != 0 {
			return nil, fmt.Errorf("sketch: count 0 with buckets or totals")
		}
		return s, nil
	}
	var total uint64
	prev := -1
	for j, b := range d.Buckets {
		if b[0] >= uint64(sketchBuckets) || int(b[0]) <= prev {
			return nil, fmt.Errorf("sketch: bucket %d: index %d out of order or past the last bucket (%d)", j, b[0], sketchBuckets-1)
		}
		if b[1] == 0 {
			return nil, fmt.Errorf("sketch: bucket %d (index %d) has count 0", j, b[0])
		}
		if total+b[1] < total {
			return nil, fmt.Errorf("sketch: bucket counts overflow")
		}
		total += b[1]
		prev = int(b[0])
	}
	if total != d.Count {
		return nil, fmt.Errorf("sketch: bucket counts add up to %d, count says %d", total, d.Count)
	}
	if d.Min > d.Max {
		return nil, fmt.Errorf("sketch: min %d above max %d", d.Min, d.Max)
	}
	first, last := int(d.Buckets[0][0]), int(d.Buckets[len(d.Buckets)-1][0])
	if sketchIndex(d.Min) != first || sketchIndex(d.Max) != last {
		return nil, fmt.Errorf("sketch: min %d or max %d outside the first (%d) and last (%d) buckets", d.Min, d.Max, first, last)
	}
	for _, b := range d.Buckets {
		s.addSlow(uint(b[0]), b[1])
	}
	s.n, s.sum, s.min, s.max = d.Count, d.Sum, d.Min, d.Max
	return s, nil
}
