package blockio

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
)

// TestFillDone: a cold buffered read of a file whose fill's completion no
// program sees (the completion program detached, standing in for the
// kernel skipping it) leaves the bio in the in-flight map. FillDone,
// asked as page-cache provenance asks (the fill's device, sector, size,
// queue and the read's end), finds its completion in the witness, inside
// that window, and gives the same answer again; the bio's event at stop
// takes that completion (its latency), not another, and is counted once;
// FillDone's questions are not counted as completions not found.
func TestFillDone(t *testing.T) {
	loop := newLoop(t, 16<<20, true)
	path := filepath.Join(loop.mount, "data")
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	if _, err := unix.Pwrite(fd, buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fsync(fd); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}

	r := startTracer(t, Options{})
	if r.t.witness == nil {
		t.Fatal("no completion witness (see the warnings)")
	}
	if r.t.attached[0].name != "block_rq_complete" {
		t.Fatalf("attached %+v: want block_rq_complete first", r.t.attached)
	}
	r.t.doneSide[0].Close() // completions no longer reach the programs
	if _, err := unix.Pread(fd, buf[:4096], 0); err != nil {
		t.Fatal(err)
	}
	readEnd := uint64(bootNow(t))

	var (
		key  uint64
		info blockioBioInfo
		q    FillQuery
	)
	it := r.t.objs.Bios.Iterate()
	for it.Next(&key, &info) {
		if info.Inode == st.Ino && info.Flags&RecInodeRead != 0 {
			q = FillQuery{Bio: key, Ino: info.Inode, InoDev: info.InoDev, Dev: info.Dev, Sector: info.QueueSector - info.StartSect,
				Bytes: info.QueueBytes, After: info.QueueTs, Before: readEnd}
			break
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if q.Bio == 0 {
		t.Fatal("no page-cache read of the file in the in-flight map")
	}
	done, ok := r.t.FillDone(q)
	if !ok || done <= q.After || done >= q.Before {
		t.Fatalf("FillDone(%+v) = %d, %v: want a completion in (%d, %d)", q, done, ok, q.After, q.Before)
	}
	if again, ok := r.t.FillDone(q); !ok || again != done {
		t.Errorf("asked again: %d, %v; want %d", again, ok, done)
	}
	other := q
	other.Ino++
	if _, ok := r.t.FillDone(other); ok {
		t.Error("answered for another file's fill at that address")
	}

	var found bool
	for _, e := range onDev(r.stop(t), loop.dev) {
		if e.Time != int64(q.After)-r.t.dec.Origin || e.Op != event.OpBlockRead {
			continue
		}
		found = true
		if e.Flags&event.FlagFtraceCompletion == 0 || e.Duration != int64(done-q.After) {
			t.Errorf("%s: want its completion from the witness, latency %d", describe(&e), done-q.After)
		}
	}
	if !found {
		t.Errorf("no event of the bio queued at %d", q.After)
	}
	// Counted once, with its event; FillDone's own asking (the other
	// file's query found nothing) is no bio without completion.
	stats := r.t.Stats()
	if n := stats.Get(event.CountInfo, StatWitnessed); n == 0 {
		t.Errorf("%q = 0, want the bio counted: %+v", StatWitnessed, stats.Sorted())
	}
	if n := stats.Get(event.CountInfo, witnessMissNames[missNoRecord]); n != 0 {
		t.Errorf("%q = %d: FillDone's questions counted as completions not found", witnessMissNames[missNoRecord], n)
	}
}
