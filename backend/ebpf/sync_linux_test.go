package ebpf

import (
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestSyncfsLinksItsWriteback: a program dirties 1 MiB and calls
// syncfs(2): the flusher writes it back for the call, which waits; those
// block writes (a kernel thread's, flagged writeback) link to the syncfs
// event, which counts them, and carry the file's inode (#19).
func TestSyncfsLinksItsWriteback(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	bin := buildC(t, "testdata/sync/syncfs.c")
	f := filepath.Join(t.TempDir(), "dirty")
	s := traceCmd(t, []string{bin, f, "syncfs"}, event.LayerFile, event.LayerBlock)
	calls := find(s.events, byNative("syncfs"))
	if len(calls) != 1 {
		t.Fatalf("%d syncfs events, want 1", len(calls))
	}
	sc := calls[0]
	var n uint32
	var bytes, written uint64
	for _, e := range s.events {
		if e.Layer != event.LayerBlock || e.Cause != sc.ID {
			continue
		}
		n++
		bytes += e.Size
		// The file's data, and the metadata writing it back needs
		// (allocation bitmaps read, the journal written).
		if e.Op == event.OpBlockWrite && e.Flags&event.FlagWriteback != 0 && e.Path == f {
			written += e.Size
		}
	}
	if written < 1<<20 {
		t.Errorf("writeback of %s linked to syncfs: %d bytes, want the 1 MiB written", f, written)
	}
	if sc.CausedIOs != n || sc.CausedBytes != bytes {
		t.Errorf("syncfs says it caused %d I/Os, %d bytes; its bios: %d, %d bytes", sc.CausedIOs, sc.CausedBytes, n, bytes)
	}
}
