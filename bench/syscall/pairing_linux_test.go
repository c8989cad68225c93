package main

import (
	"fmt"
	"math"
	"testing"
)

// TestMeasurePairsEachRunWithTheBareRunsAroundIt: the machine drifts
// (here every run is 100 ns slower than the one before it); each mode's
// added cost is its run less the mean of the bare runs just before and
// after it, so a steady drift cancels.
func TestMeasurePairsEachRunWithTheBareRunsAroundIt(t *testing.T) {
	level := 1000.0
	fake := func(extra float64) func([]string) ([]byte, error) {
		return func([]string) ([]byte, error) {
			v := level + extra
			level += 100
			return fmt.Appendf(nil, "ns_per_op=%.1f cpu_ns_per_op=%.1f\n", v, v+1), nil
		}
	}
	bare := &mode{name: "bare", n: 1, run: fake(0)}
	floor := &mode{name: "floor", n: 1, run: fake(300)}
	tracer := &mode{name: "tracer", n: 1, run: fake(450)}
	h := &harness{rounds: 3, wlCPU: -1}
	if err := h.measure([]*mode{bare, floor, tracer}, "pread", true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m    *mode
		want float64
	}{{floor, 300}, {tracer, 450}} {
		w, cpu := c.m.added()
		if w != c.want || cpu != c.want {
			t.Errorf("%s: added %v wall, %v CPU, want %v", c.m.name, w, cpu, c.want)
		}
		if len(c.m.add) != 3 {
			t.Errorf("%s: %d pairs, want 3", c.m.name, len(c.m.add))
		}
	}
	if n := len(bare.ns); n != 3*(1+2) {
		t.Errorf("%d bare runs, want 9 (one before each round, one after each mode)", n)
	}
}

func TestPairRatio(t *testing.T) {
	nan := math.NaN()
	a := []float64{110, 200, nan, 130, 90}
	b := []float64{100, 100, 100, nan, 100}
	// rounds 0, 1, 4: ratios 1.1, 2, 0.9; median 1.1
	if got := pairRatio(a, b); math.Abs(got-1.1) > 1e-9 {
		t.Errorf("pairRatio = %v, want 1.1", got)
	}
	if got := medianRun([]float64{nan, 3, 1, nan, 2}); got != 2 {
		t.Errorf("medianRun = %v, want 2", got)
	}
}

// TestOrderRunsTheBaseBesideItsPeer: -base's mode runs next to this
// build's record in every round, after it in even rounds and before it in
// odd ones; the other modes keep their order.
func TestOrderRunsTheBaseBesideItsPeer(t *testing.T) {
	bare, a, io, b := &mode{name: "bare"}, &mode{name: "a"}, &mode{name: "io"}, &mode{name: "b"}
	base := &mode{name: "base", beside: io}
	modes := []*mode{bare, a, io, b, base}
	names := func(ms []*mode) (s string) {
		for _, m := range ms {
			s += m.name + " "
		}
		return s
	}
	for r, want := range []string{"a io base b ", "a base io b ", "a io base b "} {
		if got := names(order(modes, r)); got != want {
			t.Errorf("round %d: %q, want %q", r, got, want)
		}
	}
}
