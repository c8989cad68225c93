package ebpf

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestIOUring: fio's io_uring engine reads a file in 4 KiB requests; each
// request is one event (submission to completion), with its opcode, fd,
// the file's path, length, offset and result.
func TestIOUring(t *testing.T) {
	f, sink := runFioUring(t, false, event.LayerFile)
	const n = 64
	for _, s := range sink.trailer.Stats.Counters {
		if strings.Contains(s.Name, "io_uring") && s.Kind != event.CountInfo && s.Value > 0 {
			t.Errorf("%s: %d", s.Name, s.Value)
		}
	}
	reads := find(sink.events, byNative("io_uring/READ"), byPath(f))
	if len(reads) != n {
		t.Fatalf("%d io_uring/READ events on %s, want %d (fio reads 256 KiB in 4 KiB requests)", len(reads), f, n)
	}
	seen := map[int64]bool{}
	for _, e := range reads {
		if e.Op != event.OpRead || e.Size != 4096 || e.Bytes != 4096 || e.Status != event.StatusOK || e.FD < 0 || e.Duration <= 0 || e.Request == 0 {
			t.Errorf("read: op %v size %d bytes %d status %v fd %d duration %d request %#x", e.Op, e.Size, e.Bytes, e.Status, e.FD, e.Duration, e.Request)
		}
		seen[e.Offset] = true
	}
	for off := int64(0); off < n*4096; off += 4096 {
		if !seen[off] {
			t.Errorf("no read at offset %d", off)
		}
	}
}

// runFioUring runs fio's io_uring engine over 256 KiB of a new file in 4
// KiB reads (64 requests, 4 in flight), O_DIRECT when direct, traced for
// the layers given; it returns the file and what was traced.
func runFioUring(t *testing.T, direct bool, layers ...event.Layer) (string, *memSink) {
	t.Helper()
	testenv.RequirePrivileged(t, "loads BPF programs")
	if _, err := exec.LookPath("fio"); err != nil {
		if testenv.Required() {
			t.Fatal("fio not installed (scripts/setup installs it)")
		}
		t.Skip("fio not installed (scripts/setup installs it)")
	}
	f := filepath.Join(t.TempDir(), "data")
	args := []string{"fio", "--name=uring", "--ioengine=io_uring", "--rw=read", "--bs=4k",
		"--size=256k", "--filename=" + f, "--iodepth=4", "--output=/dev/null"}
	if direct {
		args = append(args, "--direct=1")
	}
	sink := &memSink{}
	opts := backend.Options{Command: args, Layers: layers, Warn: func(m string) { t.Logf("warn: %s", m) }}
	if err := New(Config{MarkerDir: "-"}).Run(context.Background(), opts, sink); err != nil {
		t.Fatal(err)
	}
	return f, sink
}

// TestIOUringRegisteredFiles: requests on registered (fixed) files carry a
// ring file index, not a descriptor: they are never named after whatever
// descriptor has that number, and are counted as unnamed.
func TestIOUringRegisteredFiles(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "fio")
	f := filepath.Join(t.TempDir(), "data")
	s := traceCmd(t, []string{"fio", "--name=uring", "--ioengine=io_uring", "--rw=read", "--bs=4k", "--size=256k",
		"--filename=" + f, "--iodepth=4", "--registerfiles=1", "--output=/dev/null"}, event.LayerFile)
	reads := find(s.events, byNative("io_uring/READ"))
	if len(reads) != 64 {
		t.Fatalf("%d io_uring/READ events, want 64", len(reads))
	}
	for _, r := range reads {
		if r.Path != "" || r.FD != -1 || !strings.Contains(r.Note, "registered file") {
			t.Errorf("read on a registered file: path %q fd %d note %q", r.Path, r.FD, r.Note)
			break
		}
	}
	const name = "io_uring requests on registered (fixed) files: not named (the trace does not record the ring's file table)"
	if got := s.trailer.Stats.Get(event.CountUnresolved, name); got != 64 {
		t.Errorf("%q = %d, want 64", name, got)
	}
}
