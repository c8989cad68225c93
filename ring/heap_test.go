package ring

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/tracefile"
)

// TestHeapHeldWithNewNames: a ring's Go heap stays within a constant
// whatever the names its events carry. Each event here names a file and
// a process never seen before (what a build or bench/soak.sh's names
// load gives), with long paths, and processes start and end: 8 times the
// budget goes through a 4 MiB ring. The chunk encoder kept every string
// it had seen, up to 65,536 of them, across chunks, and the decoder that
// folds the facts of dropped chunks a string per slot of its intern
// table: 16 MiB of heap here for a 4 MiB ring (up to 256 MiB and 64 MiB
// with paths of PATH_MAX); both are bounded by bytes now.
func TestHeapHeldWithNewNames(t *testing.T) {
	const limit = 4 << 20
	// heapSlack is the ring's heap besides its arena: the chunk being
	// built, its encoder's tables and kept strings, the folding decoder,
	// the live facts (docs/record.md, "Memory").
	const heapSlack = 12 << 20
	r, err := New(limit)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r.Begin(&event.Header{})
	pad := strings.Repeat("d/", 450) // 900 bytes, as a deep tree's paths
	fed := 0
	for i := uint64(1); fed < 8*limit; i++ {
		pid := uint32(1000 + i%30000)
		comm := "p" + strconv.FormatUint(i, 10)
		path := "/build/" + pad + strconv.FormatUint(i, 10) + ".o"
		r.Fact(&event.Fact{Kind: event.FactProcess, Pid: pid, ProcStart: int64(i), Name: comm})
		r.Fact(name(pid, 3, path, false))
		e := ev(i, 3)
		e.Pid, e.Tid, e.ProcStart, e.Comm, e.Path = pid, pid, int64(i), comm, path
		r.Event(e)
		r.Fact(name(pid, 3, path, true))
		r.Fact(&event.Fact{Kind: event.FactProcess, Pid: pid, ProcStart: int64(i), End: true})
		fed += len(path) + len(comm)
	}
	st := r.Stats()
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d MiB of names through a %d MiB ring: %d events, %d kept, %d live facts; Go heap held %.1f MiB",
		fed>>20, limit>>20, st.Seen, st.Kept, st.LiveFacts, float64(held)/(1<<20))
	if st.Overwritten == 0 {
		t.Fatalf("%+v: the ring did not fill", st)
	}
	if held > heapSlack {
		t.Errorf("the Go heap holds %d MiB beside a %d MiB ring (want at most %d MiB)", held>>20, limit>>20, heapSlack>>20)
	}
	runtime.KeepAlive(r)
}

// feedMixed sends n events to s with facts as a busy machine has them
// (a process started and ended every 8 events, a descriptor opened and
// closed every 4, a new name every 16) and returns the longest single
// call: the longest the reader waited on the sink, housekeeping included.
func feedMixed(s event.Sink, n int) time.Duration {
	var worst time.Duration
	e := ev(1, 3)
	e.Comm, e.Native = "postgres", "pread64"
	for i := range n {
		t0 := time.Now()
		id := uint64(i)
		pid := uint32(1000 + i/8%5000)
		if i%8 == 0 {
			s.Fact(&event.Fact{Kind: event.FactProcess, Pid: pid, ProcStart: int64(i / 8), Name: "worker"})
		}
		if i%4 == 0 {
			s.Fact(name(pid, 3, paths[i/16%len(paths)]+"."+strconv.Itoa(i/16), false))
		}
		e.ID, e.Time, e.Pid, e.Tid, e.ProcStart = id, int64(i)*1000, pid, pid, int64(i/8)
		e.Path = paths[i/16%len(paths)]
		s.Event(e)
		if i%4 == 3 {
			s.Fact(name(pid, 3, "", true))
		}
		if i%8 == 7 {
			s.Fact(&event.Fact{Kind: event.FactProcess, Pid: pid, ProcStart: int64(i / 8), End: true})
		}
		worst = max(worst, time.Since(t0))
	}
	return worst
}

// BenchmarkRingFullMixed and BenchmarkWriterFileMixed compare what the
// reader pays per event, and the longest it waits for one (max-µs), for
// a full flight recorder (every chunk sealed drops one, copies it into
// the arena and folds the dropped chunk's facts) and for record's
// writer to a file (every chunk sealed is written), on a stream with
// facts as a busy machine has them.
func BenchmarkRingFullMixed(b *testing.B) {
	r, _ := New(64 << 20)
	defer r.Close()
	r.Begin(&event.Header{})
	for r.Stats().Overwritten == 0 {
		feedMixed(r, 100000)
	}
	b.ResetTimer()
	worst := feedMixed(r, b.N)
	b.ReportMetric(float64(worst.Microseconds()), "max-µs")
}

func BenchmarkWriterFileMixed(b *testing.B) {
	f, err := os.CreateTemp(b.TempDir(), "w*.iot")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := tracefile.NewWriter(f, tracefile.WriterOptions{})
	w.Begin(&event.Header{})
	b.ResetTimer()
	worst := feedMixed(w, b.N)
	b.ReportMetric(float64(worst.Microseconds()), "max-µs")
}
