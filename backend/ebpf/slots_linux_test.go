package ebpf

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// Workload "migrate": $WL_N times, opens $WL_DIR/a or /b in turn (always
// the same descriptor number), reads a byte at offset i and closes it,
// moving itself to the next CPU before each call. The open goes through
// the ring buffer (it has a path), the read and the close through the
// slots of whichever CPU the thread is on: merged out of time order, a
// read would be named after the other file.
func workloadMigrate() {
	runtime.LockOSThread()
	dir := os.Getenv("WL_DIR")
	n, err := strconv.Atoi(os.Getenv("WL_N"))
	must(err)
	var cpus []int
	var set unix.CPUSet
	must(unix.SchedGetaffinity(0, &set))
	for c := range 1024 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	k := 0
	hop := func() {
		var s unix.CPUSet
		s.Set(cpus[k%len(cpus)])
		k++
		must(unix.SchedSetaffinity(0, &s))
	}
	var b [1]byte
	for i := range n {
		hop()
		fd := mustFD(unix.Open(filepath.Join(dir, []string{"a", "b"}[i%2]), unix.O_RDONLY, 0))
		hop()
		_, err := unix.Pread(fd, b[:], int64(i))
		must(err)
		hop()
		must(unix.Close(fd))
	}
}

// TestSlotsMergedInTimeOrder: a thread hopping between CPUs, reusing one
// descriptor number for two files, has every read named after the file it
// read; the reads came through the per-CPU slots and nothing was lost.
func TestSlotsMergedInTimeOrder(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs to hop between")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const n = 3000
	for _, f := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, f), make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("IOTRACE_WORKLOAD", "migrate")
	t.Setenv("WL_DIR", dir)
	t.Setenv("WL_N", strconv.Itoa(n))
	sink := &memSink{}
	opts := backend.Options{Command: []string{self}, Layers: []event.Layer{event.LayerFile}, Warn: func(m string) { t.Logf("warn: %s", m) }}
	if err := New(Config{MarkerDir: "-"}).Run(context.Background(), opts, sink); err != nil {
		t.Fatal(err)
	}
	var reads []event.Event
	for _, e := range find(sink.events, byNative("pread64")) {
		if filepath.Dir(e.Path) == dir {
			reads = append(reads, e)
		}
	}
	if len(reads) != n {
		t.Fatalf("%d reads traced, want %d", len(reads), n)
	}
	for _, e := range reads {
		want := filepath.Join(dir, []string{"a", "b"}[e.Offset%2])
		if e.Path != want {
			t.Fatalf("read at offset %d named %q, want %q", e.Offset, e.Path, want)
		}
	}
	st := sink.trailer.Stats
	if got := st.Get(event.CountInfo, statFromSlots); got < 2*n {
		t.Errorf("%d records from the slots, want at least %d (the reads and closes)", got, 2*n)
	}
	if lost := st.Total(event.CountLost); lost != 0 {
		t.Errorf("%d events lost", lost)
	}
	t.Logf("late: %d", st.Get(event.CountInfo, statLate))
}

func TestSlotShift(t *testing.T) {
	for _, c := range []struct {
		ring, ncpu int
		want       uint
	}{
		{8 << 20, 2, 12},  // 23,831 records a CPU: the cap
		{8 << 20, 64, 10}, // 745: the floor
		{1 << 20, 2, 11},  // 2,978
		{4096, 1, 10},     // tiny buffer: the floor
		{64 << 20, 0, 12}, // no CPU count: taken as one
	} {
		if got := slotShift(c.ring, c.ncpu); got != c.want {
			t.Errorf("slotShift(%d, %d) = %d, want %d", c.ring, c.ncpu, got, c.want)
		}
	}
}
