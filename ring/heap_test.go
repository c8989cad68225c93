package ring

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
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
