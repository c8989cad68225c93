package ebpf

import (
	"fmt"
	"os"
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
	// What was dirty when the call began is what its writeback writes
	// (the program writes the file again until all of it is: other
	// writeback, such as a sync by another process, can take pages first).
	var dirty, pages, page uint64
	if b, err := os.ReadFile(f + ".dirty"); err != nil {
		t.Fatal(err)
	} else if _, err := fmt.Sscan(string(b), &dirty, &pages, &page); err != nil {
		t.Fatalf("%s.dirty: %v", f, err)
	}
	if dirty == 0 {
		t.Fatalf("other writeback took the file's pages 20 times before syncfs could: nothing to check")
	}
	if dirty < pages {
		t.Logf("%d of %d pages still dirty when syncfs began (other writeback took the rest)", dirty, pages)
	}
	if written < dirty*page {
		t.Errorf("writeback of %s linked to syncfs: %d bytes, want the %d bytes dirty when it began", f, written, dirty*page)
	}
	if sc.CausedIOs != n || sc.CausedBytes != bytes {
		t.Errorf("syncfs says it caused %d I/Os, %d bytes; its bios: %d, %d bytes", sc.CausedIOs, sc.CausedBytes, n, bytes)
	}
}
