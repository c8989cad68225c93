package ring

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestArenaBackedAhead: on Linux the arena is backed with memory ahead of
// the recording, so the reader that hands events over does not take the
// page faults of a filling ring (populate). Before, the arena's pages
// were backed only as events filled them: a new ring grew nobody's
// resident memory until then.
func TestArenaBackedAhead(t *testing.T) {
	const limit = 32 << 20
	r, err := New(limit)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The arena's own pages (mincore), not the process's resident memory,
	// which the runtime's scavenger and earlier tests move meanwhile.
	want := int64(len(r.arena))
	deadline := time.Now().Add(20 * time.Second)
	for residentOf(t, r.arena) < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := residentOf(t, r.arena); got < want {
		t.Errorf("%d of the arena's %d MiB resident after 20 s with no event, want all", got>>20, want>>20)
	}
}

// residentOf returns how many bytes of mapping b are resident (mincore).
func residentOf(t *testing.T, b []byte) int64 {
	t.Helper()
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	var n int64
	for _, v := range vec {
		if v&1 != 0 {
			n += int64(page)
		}
	}
	return n
}

// TestCloseWhilePopulating: Close stops the populating and waits for it
// (the arena is unmapped after it).
func TestCloseWhilePopulating(t *testing.T) {
	for range 20 {
		r, err := New(256 << 20)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
