package ebpf

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestIOUringDirectReadCausesBios: fio's io_uring engine reads a file with
// O_DIRECT in 4 KiB requests, issued inline by io_uring_enter; every
// request's block I/O links to that request (the bio's Cause is the
// io_uring event's ID) with the same process, and covers its 4 KiB.
func TestIOUringDirectReadCausesBios(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	if _, err := exec.LookPath("fio"); err != nil {
		if testenv.Required() {
			t.Fatal("fio not installed (scripts/setup installs it)")
		}
		t.Skip("fio not installed (scripts/setup installs it)")
	}
	f := filepath.Join(t.TempDir(), "data")
	const n = 64
	sink := &memSink{}
	opts := backend.Options{
		Command: []string{"fio", "--name=uringdirect", "--ioengine=io_uring", "--direct=1", "--rw=read", "--bs=4k",
			"--size=256k", "--filename=" + f, "--iodepth=4", "--output=/dev/null"},
		Layers: []event.Layer{event.LayerFile, event.LayerBlock},
		Warn:   func(m string) { t.Logf("warn: %s", m) },
	}
	if err := New(Config{MarkerDir: "-"}).Run(context.Background(), opts, sink); err != nil {
		t.Fatal(err)
	}
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
}
