package ftrace

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestInstanceRecordsBlockCompletions: an instance of this process
// records the block completions of O_DIRECT reads, with the boot clock,
// in the binary page format; Close removes it.
func TestInstanceRecordsBlockCompletions(t *testing.T) {
	testenv.RequirePrivileged(t, "creates a tracefs instance")
	name := "iotrace-" + strconv.Itoa(os.Getpid()) + "-test"
	in, err := Open(Options{Name: name, Events: []string{"block/block_rq_complete", "block/no_such_event"}, Clock: "boot", BufferKB: 256})
	if err != nil {
		t.Fatal(err)
	}
	dir := in.dir
	defer in.Close()
	if m := in.Missing(); len(m) != 1 || m[0] != "block/no_such_event" {
		t.Errorf("missing %v", m)
	}
	var f *Format
	for _, x := range in.Formats() {
		f = x
	}
	if f == nil || f.Name != "block_rq_complete" {
		t.Fatalf("formats %+v", in.Formats())
	}
	nr, _ := f.Field("nr_sector")
	typ, _ := f.Field("common_type")

	// Reads the kernel cannot serve from the page cache.
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Skipf("O_DIRECT on %s: %v", path, err)
	}
	defer unix.Close(fd)
	buf := alignedBuf(4096)
	var before, after unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &before)
	const n = 16
	for i := range n {
		if _, err := unix.Pread(fd, buf, int64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &after)
	lo, hi := uint64(before.Nano()), uint64(after.Nano())
	reads := 0
	if _, err := in.Read(func(cpu int, ts uint64, rec []byte) {
		id, _ := typ.Uint(rec)
		sectors, _ := nr.Uint(rec)
		if uint16(id) == f.ID && sectors == 8 && ts >= lo && ts <= hi {
			reads++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if reads < n {
		t.Errorf("%d completions of 8 sectors between the reads' start and end, want >= %d", reads, n)
	}
	if d := in.Dropped(); d != 0 {
		t.Errorf("dropped %d", d)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("instance %s still there after Close (%v)", dir, err)
	}
}

func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & 4095)
	return b[off : off+n]
}
