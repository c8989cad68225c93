package hist

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

func TestSketchDataRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var a, b, all Sketch
	for i := 0; i < 100_000; i++ {
		v := uint64(rng.ExpFloat64() * 50_000)
		if i%2 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
		all.Add(v)
	}
	a.AddN(math.MaxUint64, 70_000) // widened counters, the last bucket
	all.AddN(math.MaxUint64, 70_000)
	var merged Sketch
	for _, s := range []*Sketch{&a, &b} {
		js, err := json.Marshal(s.Data())
		if err != nil {
			t.Fatal(err)
		}
		var d SketchData
		if err := json.Unmarshal(js, &d); err != nil {
			t.Fatal(err)
		}
		back, err := SketchFromData(d)
		if err != nil {
			t.Fatal(err)
		}
		if back.Summary() != s.Summary() {
			t.Fatalf("round trip: %+v, want %+v", back.Summary(), s.Summary())
		}
		merged.Merge(back)
	}
	if merged.Summary() != all.Summary() {
		t.Errorf("merged decodings %+v, want the sketch of all values %+v", merged.Summary(), all.Summary())
	}
	var empty Sketch
	if s, err := SketchFromData(empty.Data()); err != nil || s.Count() != 0 {
		t.Errorf("empty sketch: %v %v", s, err)
	}
}

func TestSketchDataBad(t *testing.T) {
	var s Sketch
	for v := uint64(1); v < 1e6; v *= 3 {
		s.Add(v)
	}
	good := s.Data()
	for name, mut := range map[string]func(d *SketchData){
		"count":     func(d *SketchData) { d.Count++ },
		"order":     func(d *SketchData) { d.Buckets[0], d.Buckets[1] = d.Buckets[1], d.Buckets[0] },
		"range":     func(d *SketchData) { d.Buckets[len(d.Buckets)-1][0] = 1 << 20 },
		"zero":      func(d *SketchData) { d.Buckets[0][1] = 0; d.Count-- },
		"min":       func(d *SketchData) { d.Min = d.Max + 1 },
		"max":       func(d *SketchData) { d.Max = 1 << 40 },
		"empty":     func(d *SketchData) { d.Buckets = nil },
		"overflow":  func(d *SketchData) { d.Buckets[0][1] = math.MaxUint64 },
		"zerocount": func(d *SketchData) { d.Count = 0 },
	} {
		d := good
		d.Buckets = append([][2]uint64(nil), good.Buckets...)
		mut(&d)
		if _, err := SketchFromData(d); err == nil {
			t.Errorf("%s: bad encoding accepted", name)
		}
	}
}

func FuzzSketchFromData(f *testing.F) {
	f.Add([]byte(`{"count":2,"sum":3,"min":1,"max":2,"buckets":[[1,1],[2,1]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d SketchData
		if json.Unmarshal(data, &d) != nil {
			return
		}
		s, err := SketchFromData(d)
		if err != nil {
			return
		}
		_ = s.Summary()
		var m Sketch
		m.Merge(s)
		if m.Count() != d.Count {
			t.Fatalf("merged count %d, want %d", m.Count(), d.Count)
		}
	})
}
