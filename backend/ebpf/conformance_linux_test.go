package ebpf

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend/backendtest"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestConformance runs the shared backend conformance suite (contract,
// cancel, sink error, layers, pid) with a workload that makes file
// syscalls and O_DIRECT block I/O in a child process (the backend never
// traces its own process).
func TestConformance(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	f := filepath.Join(dir, "w")
	// A long-lived process reading with shell builtins: the pid subtest
	// selects it.
	if err := os.WriteFile(filepath.Join(dir, "lines"), []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reader := exec.Command("sh", "-c", "while :; do while read l; do :; done < "+filepath.Join(dir, "lines")+"; done")
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reader.Process.Kill(); _ = reader.Wait() }()
	backendtest.Run(t, New(Config{MarkerDir: "-"}), backendtest.Config{
		// Repeated until the run ends: the harness starts it at Begin,
		// before the probes are attached, and one pass is over sooner.
		// Each pass runs to its end (about 100 ms), never killed half
		// way: a killed shell would orphan a dd that may still create
		// the file after the test has removed its directory.
		Workload: func(ctx context.Context) error {
			for ctx.Err() == nil {
				err := exec.Command("sh", "-c",
					"dd if=/dev/zero of="+f+" bs=4k count=64 oflag=direct status=none && "+
						"dd if="+f+" of=/dev/null bs=4k iflag=direct status=none && cat "+f+" > /dev/null").Run()
				if err != nil {
					return err
				}
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
			return nil
		},
		Layers:    []event.Layer{event.LayerFile, event.LayerBlock},
		MinEvents: 100,
		Pid:       uint32(reader.Process.Pid),
	})
}
