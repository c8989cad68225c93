package ebpf

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestBlockEventsShareTheProcessKey traces a command doing O_DIRECT I/O:
// each block event caused by a syscall must carry the same process key
// (pid and start time) as that syscall event, so a report does not split
// one process in two.
func TestBlockEventsShareTheProcessKey(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	f := filepath.Join(t.TempDir(), "w")
	sink := &memSink{}
	opts := backend.Options{
		Command: []string{"sh", "-c", "dd if=/dev/zero of=" + f + " bs=4k count=32 oflag=direct status=none && " +
			"dd if=" + f + " of=/dev/null bs=4k iflag=direct status=none"},
		Warn: func(m string) { t.Logf("warn: %s", m) },
	}
	if err := New(Config{MarkerDir: "-"}).Run(context.Background(), opts, sink); err != nil {
		t.Fatal(err)
	}
	sink.logUnseen(t)
	sys := map[uint64]event.Event{}
	for _, e := range sink.events {
		if e.Layer == event.LayerFile {
			sys[e.ID] = e
		}
	}
	var linked int
	for _, e := range sink.events {
		if e.Layer != event.LayerBlock || e.Cause == 0 {
			continue
		}
		s, ok := sys[e.Cause]
		if !ok {
			continue
		}
		linked++
		if e.Process() != s.Process() {
			t.Errorf("block event %d (%s %s) has process %+v; its syscall %d (%s, %s) has %+v",
				e.ID, e.Native, e.Comm, e.Process(), s.ID, s.Native, s.Comm, s.Process())
		}
		if e.ProcStart == 0 {
			t.Errorf("block event %d of pid %d has no process start", e.ID, e.Pid)
		}
	}
	if linked < 64 {
		for _, e := range sink.events {
			if e.Layer == event.LayerBlock {
				_, known := sys[e.Cause]
				t.Logf("block event %#x: %s pid %d cause %#x (a file event: %v) sector %d size %d flags %s", e.ID, e.Op, e.Pid, e.Cause, known, e.Sector, e.Size, e.Flags)
			}
		}
		if sink.trailer != nil {
			t.Logf("stats: %+v", sink.trailer.Stats.Sorted())
		}
		t.Fatalf("%d block events linked to a syscall event, want >= 64 (32 direct writes and 32 direct reads)", linked)
	}
}
