package ebpf

import (
	"os/exec"
	"testing"

	"github.com/iotrace/iotrace/backend"
)

// TestExitStatus: a command that exits gives its code; one a signal
// killed gives 128 plus the signal's number and the signal's name (so
// that "killed by SIGTERM" is told from "exit 143").
func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		script string
		want   backend.CommandExit
	}{
		{"exit 0", backend.CommandExit{}},
		{"exit 143", backend.CommandExit{Status: 143}},
		{"kill -TERM $$", backend.CommandExit{Status: 143, Signal: "SIGTERM"}},
		{"kill -KILL $$", backend.CommandExit{Status: 137, Signal: "SIGKILL"}},
	} {
		got, ok := exitStatus(exec.Command("sh", "-c", c.script).Run())
		if !ok || got != c.want {
			t.Errorf("sh -c %q: %+v (ok %v), want %+v", c.script, got, ok, c.want)
		}
	}
}
