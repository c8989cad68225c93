package hist

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestLog2Buckets(t *testing.T) {
	var h Log2
	for _, v := range []uint64{0, 1, 2, 3, 4, 7, 8, 1000, math.MaxUint64} {
		h.Add(v)
	}
	want := map[int]uint64{0: 1, 1: 1, 2: 2, 3: 2, 4: 1, 10: 1, 64: 1}
	for k := 0; k < log2Buckets; k++ {
		if got := h.BucketCount(k); got != want[k] {
			t.Errorf("bucket %d: %d, want %d", k, got, want[k])
		}
	}
	if h.Count() != 9 || h.Min() != 0 || h.Max() != math.MaxUint64 || h.Sum() != math.MaxUint64 {
		t.Errorf("totals: n=%d min=%d max=%d sum=%d", h.Count(), h.Min(), h.Max(), h.Sum())
	}
	b := h.Buckets()
	if len(b) != 65 || b[3] != (Bucket{Low: 4, High: 7, Count: 2}) || b[64].High != math.MaxUint64 {
		t.Errorf("buckets: %d, %+v, %+v", len(b), b[3], b[64])
	}
}

func TestLog2QuantileInBucket(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Log2
	vals := make([]uint64, 10000)
	for i := range vals {
		vals[i] = uint64(r.ExpFloat64() * 5000)
		h.Add(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[rank(q, uint64(len(vals)))-1]
		got := h.Quantile(q)
		if log2Index(got) != log2Index(exact) {
			t.Errorf("q%.3f: %d, exact %d: not in the same bucket", q, got, exact)
		}
	}
	if h.Quantile(0) != vals[0] || h.Quantile(1) != vals[len(vals)-1] {
		t.Error("q0/q1 are not min/max")
	}
	var empty Log2
	if empty.Quantile(0.5) != 0 || empty.Buckets() != nil {
		t.Error("empty histogram")
	}
}

func TestLog2Merge(t *testing.T) {
	var a, b, all Log2
	for i := uint64(0); i < 1000; i++ {
		v := i * i
		all.Add(v)
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	a.Merge(&b)
	if a != all {
		t.Errorf("merged %+v\nwant   %+v", a.Summary(), all.Summary())
	}
	var empty Log2
	empty.Merge(&all)
	if empty != all {
		t.Error("merge into empty")
	}
}

func TestLog2Render(t *testing.T) {
	var h Log2
	h.AddN(3, 2)
	h.AddN(12, 8)
	h.Add(40)
	var buf bytes.Buffer
	if err := h.Render(&buf, RenderOptions{Unit: "usecs", Width: 8}); err != nil {
		t.Fatal(err)
	}
	want := `   usecs : count distribution
 2 -> 3  : 2     |**      |
 4 -> 7  : 0     |        |
 8 -> 15 : 8     |********|
16 -> 31 : 0     |        |
32 -> 63 : 1     |*       |
`
	if buf.String() != want {
		t.Errorf("render:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestLinear(t *testing.T) {
	if _, err := NewLinear(0, 10, 0); err == nil {
		t.Error("step 0 accepted")
	}
	if _, err := NewLinear(10, 10, 1); err == nil {
		t.Error("empty range accepted")
	}
	if _, err := NewLinear(0, 1<<40, 1); err == nil {
		t.Error("2^40 buckets accepted")
	}
	h, err := NewLinear(-10, 25, 10) // [-10,0) [0,10) [10,20) [20,25)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{-11, -10, -1, 0, 9, 10, 24, 25, 100} {
		h.Add(v)
	}
	got := h.Buckets()
	want := []LinearBucket{{-10, 0, 2}, {0, 10, 2}, {10, 20, 1}, {20, 25, 1}}
	if !slices.Equal(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
	if h.Under() != 1 || h.Over() != 2 || h.Count() != 9 || h.Min() != -11 || h.Max() != 100 || h.Sum() != 146 {
		t.Errorf("totals: %+v", h.Summary())
	}
	var buf bytes.Buffer
	if err := h.Render(&buf, RenderOptions{Unit: "ms", Width: 4}); err != nil {
		t.Fatal(err)
	}
	wantR := `       ms : count distribution
    < -10 : 1     |**  |
-10 -> -1 : 2     |****|
  0 -> 9  : 2     |****|
 10 -> 19 : 1     |**  |
 20 -> 24 : 1     |**  |
    >= 25 : 2     |****|
`
	if buf.String() != wantR {
		t.Errorf("render:\n%s\nwant:\n%s", buf.String(), wantR)
	}
	o, _ := NewLinear(-10, 25, 10)
	o.Add(5)
	if err := h.Merge(o); err != nil || h.Count() != 10 || h.Buckets()[1].Count != 3 {
		t.Errorf("merge: %v %+v", err, h.Summary())
	}
	other, _ := NewLinear(0, 25, 5)
	if err := h.Merge(other); err == nil {
		t.Error("merged histograms with different buckets")
	}
	// Quantiles: h holds -11 | -10 -1 | 0 5 9 | 10 | 24 | 25 100: ranks in a bucket give its midpoint, in Under or Over none.
	for _, c := range []struct {
		q  float64
		v  int64
		ok bool
	}{{0, -11, true}, {0.1, -11, true}, {0.2, -6, true}, {0.5, 4, true}, {0.7, 14, true}, {0.8, 22, true}, {0.9, 0, false}, {1, 100, true}} {
		if v, ok := h.Quantile(c.q); v != c.v || ok != c.ok {
			t.Errorf("Quantile(%v) = %d, %v; want %d, %v", c.q, v, ok, c.v, c.ok)
		}
	}
	// Extreme bounds do not overflow.
	x, err := NewLinear(math.MinInt64, math.MaxInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	x.Add(math.MinInt64)
	x.Add(math.MaxInt64 - 1)
	x.Add(0)
	if x.Count() != 3 || x.Over() != 0 || x.Under() != 0 {
		t.Errorf("extreme: %+v", x.Summary())
	}
	if v, ok := x.Quantile(0.5); !ok || v != 4611686018427387902 { // the midpoint of [-1, MaxInt64)
		t.Errorf("extreme Quantile(0.5) = %d, %v", v, ok)
	}
}

func TestSketchBucketGeometry(t *testing.T) {
	prevHi := uint64(0)
	for i := 0; i < sketchBlocks*sketchSub; i++ {
		lo, hi := sketchBounds(i)
		if i > 0 && lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if sketchIndex(lo) != i || sketchIndex(hi) != i {
			t.Fatalf("bucket %d [%d,%d] maps to %d/%d", i, lo, hi, sketchIndex(lo), sketchIndex(hi))
		}
		if i >= sketchExact && float64(hi-lo+1)/float64(lo) > 1.0/sketchSub+1e-12 {
			t.Fatalf("bucket %d [%d,%d] is wider than 1/%d", i, lo, hi, sketchSub)
		}
		prevHi = hi
	}
	if prevHi != math.MaxUint64 {
		t.Fatalf("last bucket ends at %d", prevHi)
	}
}

func TestSketchQuantileBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dists := map[string]func() uint64{
		"lognormal": func() uint64 { return uint64(math.Exp(r.NormFloat64()*2 + 10)) },
		"uniform":   func() uint64 { return r.Uint64N(1 << 40) },
		"small":     func() uint64 { return r.Uint64N(200) },
		"bimodal": func() uint64 {
			if r.IntN(10) == 0 {
				return 5_000_000 + r.Uint64N(1000)
			}
			return 20_000 + r.Uint64N(100)
		},
	}
	qs := []float64{0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1}
	for name, gen := range dists {
		var s Sketch
		vals := make([]uint64, 50000)
		for i := range vals {
			vals[i] = gen()
			s.Add(vals[i])
		}
		slices.Sort(vals)
		multi := s.Quantiles(qs...)
		for k, q := range qs {
			exact := vals[rank(q, uint64(len(vals)))-1]
			got := s.Quantile(q)
			if multi[k] != got {
				t.Errorf("%s q%g: Quantiles %d, Quantile %d", name, q, multi[k], got)
			}
			if math.Abs(float64(got)-float64(exact)) > float64(exact)*SketchRelativeError {
				t.Errorf("%s q%g: %d, exact %d: error %.4f%% > %.4f%%", name, q, got, exact,
					100*math.Abs(float64(got)-float64(exact))/float64(exact), 100*SketchRelativeError)
			}
			if exact < sketchExact && got != exact {
				t.Errorf("%s q%g: %d, exact %d below %d", name, q, got, exact, sketchExact)
			}
		}
		var sum uint64
		for _, v := range vals {
			sum += v
		}
		if s.Count() != uint64(len(vals)) || s.Sum() != sum || s.Min() != vals[0] || s.Max() != vals[len(vals)-1] {
			t.Errorf("%s totals", name)
		}
	}
}

func TestSketchMergeAndJSON(t *testing.T) {
	var a, b, all Sketch
	for i := uint64(1); i <= 10000; i++ {
		v := i * 997
		all.Add(v)
		if i%2 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	a.Merge(&b)
	if a.Summary() != all.Summary() {
		t.Errorf("merged %+v, want %+v", a.Summary(), all.Summary())
	}
	js, err := json.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	var back SketchSummary
	if err := json.Unmarshal(js, &back); err != nil || back != a.Summary() {
		t.Errorf("json %s: %v", js, err)
	}
	var e Sketch
	if q := e.Quantiles(0.5, 0.99); q[0] != 0 || q[1] != 0 || e.Quantile(0.5) != 0 {
		t.Error("empty sketch")
	}
}

func TestLog2JSON(t *testing.T) {
	var h Log2
	h.Add(5)
	h.Add(6)
	js, err := json.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"count":2,"sum":11,"min":5,"max":6,"buckets":[{"low":4,"high":7,"count":2}]}`; string(js) != want {
		t.Errorf("json %s, want %s", js, want)
	}
}

func TestRenderEmptyAndWideUnit(t *testing.T) {
	var h Log2
	var buf bytes.Buffer
	if err := h.Render(&buf, RenderOptions{Unit: "nanoseconds", Indent: "  "}); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "  nanoseconds : count distribution\n" {
		t.Errorf("%q", got)
	}
	h.Add(1)
	buf.Reset()
	h.Render(&buf, RenderOptions{Unit: "nanoseconds"})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 || strings.Index(lines[0], ":") != strings.Index(lines[1], ":") {
		t.Errorf("misaligned:\n%s", buf.String())
	}
}

var sink uint64

func BenchmarkLog2Add(b *testing.B) {
	var h Log2
	for i := 0; i < b.N; i++ {
		h.Add(uint64(i) * 2654435761 >> 12)
	}
	sink = h.Count()
}

func BenchmarkSketchAdd(b *testing.B) {
	var s Sketch
	for i := 0; i < b.N; i++ {
		s.Add(uint64(i) * 2654435761 >> 20)
	}
	sink = s.Count()
}

func BenchmarkSketchQuantiles(b *testing.B) {
	var s Sketch
	for i := 0; i < 100000; i++ {
		s.Add(uint64(i) * 2654435761 >> 12)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink += s.Quantiles(0.5, 0.9, 0.99)[2]
	}
}

// TestSketchResetReuse checks that a sketch reset and filled again (its
// zeroed blocks kept) and merges into and out of it answer exactly like
// fresh sketches given the same values.
func TestSketchResetReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var reused Sketch
	for round := range 50 {
		reused.Reset()
		var fresh, a, b, merged Sketch
		n := rng.IntN(300)
		for i := range n {
			v := rng.Uint64() >> rng.IntN(64)
			reused.Add(v)
			fresh.Add(v)
			if i%2 == 0 {
				a.AddN(v, 1)
			} else {
				b.Add(v)
			}
		}
		merged.Merge(&a)
		merged.Merge(&b)
		qs := []float64{0, 0.1, 0.5, 0.9, 0.99, 0.999, 1}
		want := fresh.Quantiles(qs...)
		for name, s := range map[string]*Sketch{"reused": &reused, "merged": &merged} {
			if got := s.Quantiles(qs...); !slices.Equal(got, want) || s.Count() != fresh.Count() ||
				s.Sum() != fresh.Sum() || s.Min() != fresh.Min() || s.Max() != fresh.Max() {
				t.Fatalf("round %d, %s: %v (n %d), fresh %v (n %d)", round, name, got, s.Count(), want, fresh.Count())
			}
			for _, q := range qs {
				if s.Quantile(q) != fresh.Quantile(q) {
					t.Fatalf("round %d, %s: Quantile(%v) = %d, fresh %d", round, name, q, s.Quantile(q), fresh.Quantile(q))
				}
			}
		}
	}
}

// sketchReference answers Quantiles from (value, count) pairs as the
// sketch's definition says: the bucket of the value of rank ceil(q*n),
// its midpoint clamped to [min, max]; min and max exactly at the ends.
func sketchReference(pairs [][2]uint64, qs []float64) []uint64 {
	pairs = slices.Clone(pairs)
	slices.SortFunc(pairs, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var n uint64
	for _, p := range pairs {
		n += p[1]
	}
	lo, hi := pairs[0][0], pairs[len(pairs)-1][0]
	out := make([]uint64, len(qs))
	for k, q := range qs {
		r := rank(q, n)
		switch r {
		case 1:
			out[k] = lo
			continue
		case n:
			out[k] = hi
			continue
		}
		var seen uint64
		for _, p := range pairs {
			seen += p[1]
			if seen >= r {
				blo, bhi := sketchBounds(sketchIndex(p[0]))
				out[k] = clamp(blo+(bhi-blo+1)/2, lo, hi)
				break
			}
		}
	}
	return out
}

// TestSketchWidening checks counts past what a narrow (16-bit) block
// holds: by Add, by AddN and by Merge, and after a Reset of widened
// blocks.
func TestSketchWidening(t *testing.T) {
	qs := []float64{0, 0.001, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1}
	check := func(name string, s *Sketch, pairs [][2]uint64) {
		t.Helper()
		want := sketchReference(pairs, qs)
		var n uint64
		for _, p := range pairs {
			n += p[1]
		}
		if got := s.Quantiles(qs...); !slices.Equal(got, want) || s.Count() != n {
			t.Fatalf("%s: quantiles %v (n %d), want %v (n %d)", name, got, s.Count(), want, n)
		}
		for k, q := range qs {
			if got := s.Quantile(q); got != want[k] {
				t.Fatalf("%s: Quantile(%v) = %d, want %d", name, q, got, want[k])
			}
		}
	}

	// One bucket past 65,535 by Add; a neighbour stays narrow.
	var a Sketch
	for range 70_000 {
		a.Add(1000)
	}
	for range 3 {
		a.Add(5000)
	}
	a.Add(1001)
	check("add", &a, [][2]uint64{{1000, 70_000}, {5000, 3}, {1001, 1}})

	// Two narrow sketches whose sum overflows only when merged.
	var b, c Sketch
	for range 40_000 {
		b.Add(700)
		c.Add(700)
	}
	c.Add(90)
	b.Merge(&c)
	check("merge", &b, [][2]uint64{{700, 80_000}, {90, 1}})

	// Merging a wide block into a narrow one and a narrow into a wide one.
	var d Sketch
	d.Add(1000)
	d.Merge(&a)
	a.Merge(&d)
	check("merge wide", &a, [][2]uint64{{1000, 140_001}, {5000, 6}, {1001, 2}})

	// AddN far beyond 16 bits, then small adds to the same block.
	var e Sketch
	e.AddN(123456, 1<<40)
	e.Add(123457)
	e.AddN(10, 1)
	check("addn", &e, [][2]uint64{{123456, 1 << 40}, {123457, 1}, {10, 1}})

	// A reset sketch reuses its wide and narrow blocks.
	a.Reset()
	a.Add(1000)
	a.AddN(1001, 65_535)
	a.Add(1001)
	check("reset", &a, [][2]uint64{{1000, 1}, {1001, 65_536}})
}

// TestSketchReserve checks that a reserved window counts the values in
// its range without growing, and that reserving changes no answer.
func TestSketchReserve(t *testing.T) {
	var plain, reserved Sketch
	reserved.Reserve(1_000, 10_000_000)
	span := reserved.span()
	if span == 0 {
		t.Fatal("Reserve allocated no window")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		v := 1_000 + rng.Uint64N(10_000_000-1_000)
		plain.Add(v)
		reserved.Add(v)
	}
	if reserved.span() != span {
		t.Fatalf("window grew from %d to %d buckets for values inside the reserved range", span, reserved.span())
	}
	qs := []float64{0, 0.5, 0.9, 0.99, 1}
	if got, want := reserved.Quantiles(qs...), plain.Quantiles(qs...); !slices.Equal(got, want) {
		t.Fatalf("reserved %v, plain %v", got, want)
	}
	// Values outside still count; an empty reserved sketch is empty.
	reserved.Add(5)
	reserved.Add(1 << 40)
	if reserved.Count() != 5002 || reserved.Min() != 5 || reserved.Max() != 1<<40 {
		t.Fatalf("count %d min %d max %d", reserved.Count(), reserved.Min(), reserved.Max())
	}
	var empty Sketch
	empty.Reserve(10, 20)
	if empty.Count() != 0 || empty.Quantile(0.5) != 0 {
		t.Fatal("a reserved empty sketch is not empty")
	}
}
