package report_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/report"
)

// diskSum adds up the block events of a stream and passes it on.
type diskSum struct {
	event.Sink
	ios   map[event.Op]uint64
	bytes uint64
}

func (d *diskSum) Event(e *event.Event) error {
	if e.Layer == event.LayerBlock {
		d.ios[e.Op]++
		if e.Op == event.OpBlockRead || e.Op == event.OpBlockWrite {
			if e.Bytes >= 0 {
				d.bytes += uint64(e.Bytes)
			} else {
				d.bytes += e.Size
			}
		}
	}
	return d.Sink.Event(e)
}

// goldenCounts reads the "COUNT Windows Kernel/DiskIO/X:N" lines of a
// TraceEvent baseline.
func goldenCounts(t *testing.T, path string) map[string]uint64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "COUNT Windows Kernel/DiskIO/")
		if !ok {
			continue
		}
		name, n, _ := strings.Cut(line, ":")
		v, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out[name] = v
	}
	return out
}

// TestRealETLDiskTotals runs the report on the real ETL fixtures with disk
// I/O: it must read them, and its block totals must equal the sum of the
// DiskIo events (and, where Microsoft's TraceEvent decoded the file, the
// event counts of its baseline).
func TestRealETLDiskTotals(t *testing.T) {
	dir := testenv.ETLDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*diskio*.etl"))
	if len(files) == 0 {
		t.Fatalf("no DiskIo fixtures in %s", dir)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			in, err := input.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			rep := report.New(report.Options{})
			sum := &diskSum{Sink: rep, ios: map[event.Op]uint64{}}
			if err := in.Run(context.Background(), sum); err != nil {
				t.Fatal(err)
			}
			res := rep.Result()
			var block report.LayerSummary
			for _, l := range res.Layers {
				if l.Layer == "block" {
					block = l
				}
			}
			var want uint64
			for _, n := range sum.ios {
				want += n
			}
			if want == 0 || block.Ops != want || block.Bytes != sum.bytes {
				t.Errorf("block layer %d I/Os %d bytes; the DiskIo events: %d I/Os %d bytes", block.Ops, block.Bytes, want, sum.bytes)
			}
			var devIOs, devBytes uint64
			for _, d := range res.Devices {
				for _, o := range d.Ops {
					devIOs += o.Count
					if o.Op == "bread" || o.Op == "bwrite" {
						devBytes += o.Bytes
					}
				}
			}
			if devIOs != want || devBytes != sum.bytes {
				t.Errorf("devices: %d I/Os %d bytes, want %d %d", devIOs, devBytes, want, sum.bytes)
			}
			golden := filepath.Join(dir, "golden", strings.TrimSuffix(filepath.Base(path), ".etl")+".traceevent-baseline.txt")
			if _, err := os.Stat(golden); err != nil {
				return
			}
			g := goldenCounts(t, golden)
			for name, op := range map[string]string{"Read": "bread", "Write": "bwrite", "FlushBuffers": "bflush"} {
				var got uint64
				for _, o := range res.Ops {
					if o.Op == op {
						got = o.Count
					}
				}
				if got != g[name] {
					t.Errorf("%s: report %d, TraceEvent %d", op, got, g[name])
				}
			}
		})
	}
}
