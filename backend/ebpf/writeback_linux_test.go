package ebpf

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestWaitWriteback: a buffered dd of 64 MiB exits with its data still
// dirty; with Options.WaitWriteback the trace goes on until the flusher
// has written it back, and at least 64 MiB of block writes of dd's file
// (its inode, kept by the pid filter as a file dd dirtied) are in the
// trace. Without it, the trace counts the pages dd left dirty (#27).
func TestWaitWriteback(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "dd")
	dir := t.TempDir()
	run := func(name string, wait time.Duration) (*memSink, uint64) {
		f := filepath.Join(dir, name)
		sink := &memSink{}
		opts := backend.Options{Command: []string{"dd", "if=/dev/zero", "of=" + f, "bs=1M", "count=64", "status=none"},
			WaitWriteback: wait, Warn: func(m string) { t.Logf("warn: %s", m) }}
		if err := New(Config{MarkerDir: "-"}).Run(context.Background(), opts, sink); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(f, &st); err != nil {
			t.Fatal(err)
		}
		var written uint64
		for _, e := range sink.events {
			if e.Layer == event.LayerBlock && e.Op == event.OpBlockWrite && e.Inode == st.Ino && e.Flags&event.FlagNoCompletion == 0 {
				written += e.Size
			}
		}
		return sink, written
	}

	sink, written := run("nowait", 0)
	dirty := sink.trailer.Stats.Get(event.CountInfo, "pages the command left dirty or under writeback when it exited (in the files it wrote)")
	t.Logf("without waiting: %d bytes of dd's file written back in the trace, %d pages left dirty", written, dirty)
	if dirty == 0 || written+dirty*uint64(os.Getpagesize()) < 64<<20 {
		t.Errorf("without waiting: %d pages left dirty and %d bytes written back, want them to cover 64 MiB", dirty, written)
	}
	unix.Sync()

	sink, written = run("wait", 90*time.Second)
	st := sink.trailer.Stats
	t.Logf("waiting: %d bytes of dd's file written back in the trace, %d ms after dd exited", written,
		st.Get(event.CountInfo, "ms traced after the command exited, waiting for its writeback (--wait-writeback)"))
	if written < 64<<20 {
		t.Errorf("with --wait-writeback: %d bytes of dd's file written in the trace, want at least 64 MiB", written)
	}
	for _, c := range st.Sorted() {
		if c.Kind == event.CountUnresolved && c.Value != 0 && len(c.Name) > 16 && c.Name[:16] == "--wait-writeback" {
			t.Errorf("%s: %d", c.Name, c.Value)
		}
	}
}
