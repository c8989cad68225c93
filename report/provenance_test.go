package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestProvenanceCache: reads classified by page-cache provenance are
// summed by part; bytes_from_cache is the first part only, the headline
// says served from memory against from disk, and a file whose reads
// were not classified shows "-" (#27).
func TestProvenanceCache(t *testing.T) {
	var b builder
	// cat: a cold read (read-ahead, its own I/O, waited), a warm one.
	r1 := b.ev(event.LayerFile, event.OpRead, 100, 100, 10, 5000, "/data/f", 1<<20)
	r1.ReadAhead, r1.ReadDisk, r1.ReadWaited, r1.ReadAheadFrom = 1<<20-8192, 4096, 4096, 1
	r2 := b.ev(event.LayerFile, event.OpRead, 100, 100, 20, 500, "/data/g", 1<<20)
	r2.ReadCached, r2.Flags = 1<<20, event.FlagCacheHit
	// a pipe read: not classified
	b.ev(event.LayerFile, event.OpRead, 101, 101, 30, 500, "pipe:[7]", 100)
	r := New(Options{TopN: 10})
	b.run(t, r, event.Trailer{End: 100})
	res := r.Result()
	c := res.Cache
	if c == nil || !c.Provenance {
		t.Fatalf("cache %+v, want provenance", c)
	}
	if c.BytesCache != 1<<20 || c.BytesReadahead != 1<<20-8192 || c.BytesDisk != 4096 || c.BytesWaited != 4096 || c.BytesOther != 100 {
		t.Errorf("cache bytes %+v", c.CacheCounts)
	}
	if c.MemoryRatio != 0.5 {
		t.Errorf("memory ratio %v, want 0.5", c.MemoryRatio)
	}
	var out bytes.Buffer
	if err := res.WriteText(&out, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"2.00 MiB read: 1.00 MiB served from memory already cached (50.0%), 1.00 MiB from disk (50.0%: read-ahead or direct)",
		"from disk: 1016 KiB brought in by read-ahead, 4.00 KiB read for the read itself, 4.00 KiB waited for on I/O already in flight",
		"100 B not classified"} {
		if !strings.Contains(text, want) {
			t.Errorf("report text lacks %q:\n%s", want, text)
		}
	}
	for _, f := range res.FilesByBytes {
		if f.Name == "pipe:[7]" && hitCell(f.Cache) != "-" {
			t.Errorf("file %s: cache cell %q, want - (no read classified)", f.Name, hitCell(f.Cache))
		}
		if f.Name == "/data/g" && hitCell(f.Cache) != "100.0%" {
			t.Errorf("file %s: cache cell %q, want 100.0%%", f.Name, hitCell(f.Cache))
		}
	}
}

// TestBlockBytesAgree: a process's block bytes count what the block
// layer's total counts (reads and writes, not discards), and an I/O
// whose completion was never seen counts no bytes and no latency, as
// Parquet's null bytes say (#27).
func TestBlockBytesAgree(t *testing.T) {
	var b builder
	rd := b.ev(event.LayerBlock, event.OpBlockRead, 100, 100, 10, 1000, "", 4096)
	rd.Size = 4096
	dc := b.ev(event.LayerBlock, event.OpBlockDiscard, 100, 100, 20, 1000, "", 1<<20)
	dc.Size = 1 << 20
	un := b.ev(event.LayerBlock, event.OpBlockWrite, 100, 100, 30, 0, "", -1)
	un.Size, un.Flags, un.Status = 8192, event.FlagNoCompletion, event.StatusUnknown
	r := New(Options{TopN: 10})
	b.run(t, r, event.Trailer{End: 100})
	res := r.Result()
	var layer uint64
	for _, l := range res.Layers {
		if l.Layer == "block" {
			layer = l.Bytes
		}
	}
	var proc uint64
	for _, p := range res.Processes {
		proc += p.BlockBytes
	}
	if layer != 4096 || proc != layer {
		t.Errorf("block layer %d bytes, processes %d; want 4096 both", layer, proc)
	}
	for _, d := range res.Devices {
		if d.Histogram.Count != 2 || d.Incomplete != 1 {
			t.Errorf("device histogram of %d I/Os, %d incomplete; want 2 and 1", d.Histogram.Count, d.Incomplete)
		}
	}
}
