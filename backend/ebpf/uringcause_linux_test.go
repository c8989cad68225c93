package ebpf

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
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

// TestIOUringWorkerBiosAreTheSubmitters: with IOSQE_ASYNC on every request
// (fio's force_async=1), io_uring's workers (iou-wrk-N) do the O_DIRECT
// reads; each request's bios still link to it (iomap's boundary in the
// worker) and are attributed to the thread that submitted it, with its
// name, not the worker's (#19).
func TestIOUringWorkerBiosAreTheSubmitters(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "fio")
	f := filepath.Join(t.TempDir(), "data")
	s := traceCmd(t, []string{"fio", "--name=uring", "--ioengine=io_uring", "--rw=read", "--bs=4k", "--size=256k",
		"--filename=" + f, "--iodepth=4", "--direct=1", "--force_async=1", "--output=/dev/null"}, event.LayerFile, event.LayerBlock)
	reads := find(s.events, byNative("io_uring/READ"), byPath(f))
	if len(reads) != 64 {
		t.Fatalf("%d io_uring/READ events, want 64", len(reads))
	}
	checkCauses(t, s, reads)
	byID := map[uint64]event.Event{}
	for _, r := range reads {
		byID[r.ID] = r
	}
	for _, e := range s.events {
		r, ok := byID[e.Cause]
		if e.Layer != event.LayerBlock || !ok {
			continue
		}
		if e.Tid != r.Tid || e.Comm != r.Comm || strings.HasPrefix(e.Comm, "iou-") {
			t.Errorf("bio %d of request %d: thread %d %q, want the submitter %d %q", e.ID, r.ID, e.Tid, e.Comm, r.Tid, r.Comm)
		}
	}
}
