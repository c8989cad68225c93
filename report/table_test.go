package report

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestSelectFirst checks selectFirst against a sort: the first k
// elements are the same set, for every k, with and without ties.
func TestSelectFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		n := rng.IntN(200)
		if round%10 == 0 {
			n = 2048 + rng.IntN(100)
		}
		spread := 1 + rng.IntN(n+1) // small spreads make many ties
		a := make([]int, n)
		for i := range a {
			a[i] = rng.IntN(spread)
		}
		want := slices.Sorted(slices.Values(a))
		for _, k := range []int{0, 1, n / 3, n / 2, n - 1, n, rng.IntN(n + 1)} {
			b := slices.Clone(a)
			selectFirst(b, k, func(x, y *int) int { return cmp.Compare(*x, *y) })
			if k < 0 || k > n {
				continue
			}
			got := slices.Sorted(slices.Values(b[:k]))
			if !slices.Equal(got, want[:k]) {
				t.Fatalf("round %d, n %d, k %d: first %v, want %v", round, n, k, got, want[:k])
			}
			if !slices.Equal(slices.Sorted(slices.Values(b)), want) {
				t.Fatalf("round %d: not a permutation", round)
			}
		}
	}
}

// TestPruneDeterministic checks that what a table keeps does not depend
// on the order in which its map is walked: ties in bytes and time are
// broken by key.
func TestPruneDeterministic(t *testing.T) {
	var first []string
	for run := range 20 {
		tb := newTable(8, stringSlot, func(a, b string) int { return cmp.Compare(a, b) })
		for i := range 16 {
			e, _ := tb.get(string(rune('a' + i)))
			e.tot.bytes = uint64(i % 3) // many ties
			e.tot.time = uint64(i % 2)
		}
		tb.prune()
		var kept []string
		for k := range tb.m {
			kept = append(kept, k)
		}
		slices.Sort(kept)
		if run == 0 {
			first = kept
		} else if !slices.Equal(kept, first) {
			t.Fatalf("run %d kept %v, run 0 kept %v", run, kept, first)
		}
	}
}

// TestEntityReset checks that reset clears every field (a field added to
// entity and forgotten in reset fails here) and keeps the sketch usable.
func TestEntityReset(t *testing.T) {
	var e entity
	fill(reflect.ValueOf(&e).Elem())
	e.opsUsed = 1<<event.NumOps - 1
	e.lat.Add(12345)
	e.reset()
	if e.lat.Count() != 0 || e.lat.Max() != 0 {
		t.Fatalf("sketch not reset: %d values", e.lat.Count())
	}
	got := reflect.ValueOf(&e).Elem()
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		if name == "lat" {
			continue
		}
		if !got.Field(i).IsZero() {
			t.Errorf("reset left field %s = %v", name, got.Field(i))
		}
	}
}

// fill sets every settable field of v to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); v.Type().Field(i).Name != "lat" {
				fill(f)
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.String:
		reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().SetString("x")
	case reflect.Bool:
		reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().SetUint(7)
	}
}
