package report

import (
	"math"
	"slices"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/hist"
	"github.com/iotrace/iotrace/internal/synth"
)

// TestSynthKnownAnswers checks the report against answers computed
// directly from a synthetic trace's events: exact counts and bytes per op
// and layer, percentiles within the documented bound, cache hits,
// per-device totals and errors.
func TestSynthKnownAnswers(t *testing.T) {
	for _, os := range []string{"linux", "windows"} {
		t.Run(os, func(t *testing.T) {
			tr := synth.Trace(synth.Options{Seed: 7, Events: 20000, OS: os, Resolved: true, BlockPercent: 30})
			r := New(Options{TopN: 5})
			if err := tr.Replay(r); err != nil {
				t.Fatal(err)
			}
			res := r.Result()

			type want struct {
				count, bytes, failed uint64
				lat                  []uint64
			}
			ops := map[string]*want{}
			var reads, hits, blockBytes, errs uint64
			devIOs := map[string]uint64{}
			for i := range tr.Events {
				e := &tr.Events[i]
				if e.Layer == event.LayerMarker {
					continue
				}
				w := ops[e.Op.String()]
				if w == nil {
					w = &want{}
					ops[e.Op.String()] = w
				}
				w.count++
				if movesData(e.Op) || e.Op == event.OpReadDir || e.Layer == event.LayerBlock {
					w.bytes += dataBytes(e)
				}
				if e.Failed() {
					w.failed++
				}
				if e.Flags&event.FlagNoCompletion == 0 {
					w.lat = append(w.lat, uint64(max(e.Duration, 0)))
				}
				switch e.Layer {
				case event.LayerFile:
					if e.Failed() {
						errs++
					}
					if e.Op == event.OpRead && !e.Failed() && e.Flags&event.FlagNoCompletion == 0 {
						reads++
						if e.CausedIOs == 0 || e.Flags&event.FlagCacheHit != 0 {
							hits++
						}
					}
				case event.LayerBlock:
					if e.Op == event.OpBlockRead || e.Op == event.OpBlockWrite {
						blockBytes += dataBytes(e)
					}
					d := e.Dev.String()
					if d == "" {
						d = "(unknown)"
					}
					devIOs[d]++
				}
			}
			if len(res.Ops) != len(ops) {
				t.Errorf("%d ops in the report, %d in the trace", len(res.Ops), len(ops))
			}
			for _, o := range res.Ops {
				w := ops[o.Op]
				if w == nil {
					t.Errorf("op %s not in the trace", o.Op)
					continue
				}
				if o.Count != w.count || o.Bytes != w.bytes || o.Failed != w.failed {
					t.Errorf("op %s: count %d bytes %d failed %d; want %d %d %d", o.Op, o.Count, o.Bytes, o.Failed, w.count, w.bytes, w.failed)
				}
				slices.Sort(w.lat)
				for _, q := range []struct {
					q   float64
					got uint64
				}{{0.5, o.Latency.P50}, {0.9, o.Latency.P90}, {0.99, o.Latency.P99}, {1, o.Latency.Max}} {
					if len(w.lat) == 0 {
						continue
					}
					exact := w.lat[int(math.Ceil(q.q*float64(len(w.lat))))-1]
					if math.Abs(float64(q.got)-float64(exact)) > float64(exact)*hist.SketchRelativeError {
						t.Errorf("op %s q%g: %d, exact %d", o.Op, q.q, q.got, exact)
					}
				}
			}
			for _, l := range res.Layers {
				if l.Layer == "block" && l.Bytes != blockBytes {
					t.Errorf("block bytes %d, want %d", l.Bytes, blockBytes)
				}
			}
			if res.Cache == nil {
				t.Fatal("synthetic trace links the layers but the report has no cache section")
			}
			if res.Cache.Reads != reads || res.Cache.Reads-res.Cache.DiskReads != hits {
				t.Errorf("cache: reads %d hits %d; want %d %d", res.Cache.Reads, res.Cache.Reads-res.Cache.DiskReads, reads, hits)
			}
			if hits == 0 || hits == reads {
				t.Errorf("synthetic trace should mix hits and misses: %d of %d", hits, reads)
			}
			for _, d := range res.Devices {
				var n uint64
				for _, o := range d.Ops {
					n += o.Count
				}
				if n != devIOs[d.Device] {
					t.Errorf("device %s: %d I/Os, want %d", d.Device, n, devIOs[d.Device])
				}
			}
			if len(res.Devices) != len(devIOs) {
				t.Errorf("%d devices, want %d", len(res.Devices), len(devIOs))
			}
			if res.ErrorsTotal != errs {
				t.Errorf("errors %d, want %d", res.ErrorsTotal, errs)
			}
			// Every problem counter of the trailer is shown.
			for _, c := range tr.Trailer.Stats.Problems() {
				found := false
				for _, p := range res.Problems {
					if p.Name == c.Name && p.Value == c.Value && p.Origin == "trace" {
						found = true
					}
				}
				if !found {
					t.Errorf("trailer problem %+v not shown", c)
				}
			}
			// Process tree: every listed child comes after its parent.
			seen := map[uint32]int{}
			for i, p := range res.Processes {
				if p.Depth > 0 {
					if _, ok := seen[p.PPid]; !ok && p.Depth > 0 {
						t.Errorf("process %d (depth %d) listed before its parent %d", p.Pid, p.Depth, p.PPid)
					}
				}
				seen[p.Pid] = i
			}
		})
	}
}

func TestPruningKeepsTopAndBoundsError(t *testing.T) {
	r := New(Options{TopN: 3, Capacity: 8})
	r.Begin(&event.Header{OS: "linux"})
	// 200 small files once each, interleaved with one big file.
	for i := 0; i < 200; i++ {
		e := event.New()
		e.Layer, e.Op, e.Status, e.Duration = event.LayerFile, event.OpRead, event.StatusOK, 1000
		e.Path, e.Bytes = "/small/"+string(rune('a'+i%26))+string(rune('a'+i/26)), 10
		r.Event(&e)
		big := e
		big.Path, big.Bytes = "/big", 1<<20
		r.Event(&big)
	}
	r.End(&event.Trailer{})
	res := r.Result()
	if res.FilesByBytes[0].Name != "/big" || res.FilesByBytes[0].Bytes != 200<<20 || res.FilesByBytes[0].ErrorBytes != 0 {
		t.Errorf("top file %+v", res.FilesByBytes[0])
	}
	var files Tracking
	for _, tk := range res.Tracking {
		if tk.Table == "files" {
			files = Tracking(tk)
		}
	}
	if files.Pruned == 0 || files.Tracked > 16 {
		t.Errorf("tracking %+v", files)
	}
	// The layer totals are exact whatever was pruned.
	if res.Layers[0].Bytes != 200*10+200<<20 {
		t.Errorf("file bytes %d", res.Layers[0].Bytes)
	}
}

type Tracking TrackingInfo
