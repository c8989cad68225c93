package ebpf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestCommAfterRenameAndExec: the kernel sends a thread's name once, and
// again after PR_SET_NAME and after exec: each event carries the name the
// thread had when it made the call.
func TestCommAfterRenameAndExec(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	bin := buildC(t, "testdata/comm/rename.c")
	f := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := traceCmd(t, []string{bin, f, "renamed-thread"}, event.LayerFile)
	var comms []string
	for _, e := range find(s.events, byPath(f)) {
		if e.Op == event.OpOpen {
			comms = append(comms, e.Comm)
		}
	}
	want := []string{"rename", "renamed-thread", "cat"}
	if len(comms) != len(want) {
		t.Fatalf("opens of %s by %q, want %q", f, comms, want)
	}
	for i := range want {
		if comms[i] != want[i] {
			t.Errorf("open %d by %q, want %q", i, comms[i], want[i])
		}
	}
}
