package ebpf

import (
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestIOUringDirectReadCausesBios: fio's io_uring engine reads a file with
// O_DIRECT in 4 KiB requests, issued inline by io_uring_enter; every
// request's block I/O links to that request (the bio's Cause is the
// io_uring event's ID) with the same process, and covers its 4 KiB.
func TestIOUringDirectReadCausesBios(t *testing.T) {
	f, sink := runFioUring(t, true, event.LayerFile, event.LayerBlock)
	const n = 64
	reads := find(sink.events, byNative("io_uring/READ"), byPath(f))
	if len(reads) != n {
		t.Fatalf("%d io_uring/READ events on %s, want %d", len(reads), f, n)
	}
	bytes := map[uint64]uint64{}
	for _, e := range sink.events {
		if e.Layer == event.LayerBlock && e.Cause != 0 {
			bytes[e.Cause] += e.Size
			for _, r := range reads {
				if r.ID == e.Cause && (e.Process() != r.Process() || e.Op != event.OpBlockRead) {
					t.Errorf("bio %d (op %v, process %+v) caused by io_uring read %d of process %+v", e.ID, e.Op, e.Process(), r.ID, r.Process())
				}
			}
		}
	}
	for _, r := range reads {
		if bytes[r.ID] != 4096 {
			t.Errorf("io_uring read %d at offset %d: its bios carry %d bytes, want 4096", r.ID, r.Offset, bytes[r.ID])
		}
	}
	// Each request counts the block I/O it caused (the report's cache
	// figure rests on it).
	checkCauses(t, sink, reads)
}
