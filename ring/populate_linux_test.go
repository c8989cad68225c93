package ring

import (
	"testing"
	"time"
)

// TestArenaBackedAhead: on Linux the arena is backed with memory ahead of
// the recording, so the reader that hands events over does not take the
// page faults of a filling ring (populate). Before, the arena's pages
// were backed only as events filled them: a new ring grew nobody's
// resident memory until then.
func TestArenaBackedAhead(t *testing.T) {
	const limit = 32 << 20
	rss0 := residentBytes()
	r, err := New(limit)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := int64(limit - ChunkSize(limit) - populateStep)
	deadline := time.Now().Add(20 * time.Second)
	for residentBytes()-rss0 < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := residentBytes() - rss0; got < want {
		t.Errorf("resident memory grew by %d MiB in 20 s with no event, want the arena's %d MiB", got>>20, want>>20)
	}
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
