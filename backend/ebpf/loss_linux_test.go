package ebpf

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestLossAccounting overruns a one-page ring buffer: every pread the
// workload makes is either delivered or counted as lost, never silently
// dropped.
func TestLossAccounting(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	const n = 20000
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, make([]byte, 16*4096), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, in, out := startWorkload(t, "preads", "WL_FILE="+file, "WL_N="+strconv.Itoa(n))
	wpid := uint32(cmd.Process.Pid)
	var warned int
	sink, ready, stop := runTrace(t, backend.Options{
		Pids:       []uint32{wpid},
		Layers:     []event.Layer{event.LayerFile},
		BufferSize: 4096,
		Warn:       func(string) { warned++ },
	}, wpid)
	if line := goWorkload(t, ready, in, out); line != "done\n" {
		t.Fatalf("workload: %q", line)
	}
	time.Sleep(50 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// The workload is this Go test binary re-executed: besides its preads
	// and the "done" write to stdout, its runtime may make a few syscalls
	// of its own (netpoll wake-ups write an eventfd). Those are traced
	// too, and may be among the lost records, so they are counted apart.
	const runtimeSlack = 4
	var preads, writes, runtimeCalls uint64
	for _, e := range sink.events {
		if e.Pid != wpid || e.Flags&event.FlagNoCompletion != 0 {
			continue
		}
		switch {
		case e.Native == "pread64":
			preads++
		case e.Native == "write" && e.FD == 1:
			writes++
		case e.Native == "write" || e.Native == "read":
			runtimeCalls++
		default:
			t.Errorf("unexpected event %s fd %d", e.Native, e.FD)
		}
	}
	if runtimeCalls > runtimeSlack {
		t.Errorf("%d runtime reads/writes delivered, expected at most %d", runtimeCalls, runtimeSlack)
	}
	st := sink.trailer.Stats
	var lost uint64
	for _, c := range st.Counters {
		if c.Kind == event.CountLost && len(c.Name) >= 18 && c.Name[:18] == "syscall events los" {
			lost += c.Value
		}
	}
	t.Logf("delivered %d preads + %d writes, lost %d; problems %+v", preads, writes, lost, st.Problems())
	if lost == 0 {
		t.Fatal("a one-page ring buffer lost nothing: the test did not overrun it")
	}
	// Nothing may vanish: every one of the n+1 syscalls made is either
	// delivered or counted as lost; the few runtime syscalls can only add.
	if total := preads + writes + lost; total < n+1 || total > n+1+runtimeSlack-runtimeCalls {
		t.Errorf("delivered %d + lost %d = %d, want the %d syscalls made (plus at most %d runtime syscalls)", preads+writes, lost, total, n+1, runtimeSlack-runtimeCalls)
	}
	if warned == 0 {
		t.Error("no warning while losing records")
	}
}
