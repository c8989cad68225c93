package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/rotate"
)

// writesWorkload opens out once (fd 3, before any rotation), then writes n
// blocks of 4 KiB through it, one every interval.
func writesWorkload(out string, n int, interval string) []string {
	script := fmt.Sprintf(`exec 3>%s; i=0; while [ $i -lt %d ]; do head -c 4096 /dev/zero >&3; i=$((i+1)); sleep %s; done`, out, n, interval)
	return []string{"sh", "-c", script}
}

// seriesWrites reads every file of a series on its own and counts the
// 4 KiB writes to path, and the events of all files by id.
func seriesWrites(t *testing.T, files []string, path string) (writes, unnamed int, ids map[uint64]int) {
	t.Helper()
	ids = map[uint64]int{}
	for _, f := range files {
		r, err := input.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		rec := synth.NewRecorder()
		r.Run(context.Background(), rec) // a killed file has no trailer: what it holds still reads
		r.Close()
		for _, e := range rec.Trace().Events {
			ids[e.ID]++
			if e.Op != event.OpWrite || e.Size != 4096 || e.Comm != "head" || e.FD != 1 {
				continue
			}
			if e.Path == path {
				writes++
			} else {
				unnamed++
			}
		}
	}
	return writes, unnamed, ids
}

// TestRecordRotateLive: a recording rotated every 2 s under a steady
// workload holds every write exactly once across its files, each file
// names the written file on its own (the descriptor was opened in the
// first file), and a SIGKILL mid-file loses at most the flush interval.
func TestRecordRotateLive(t *testing.T) {
	testenv.RequirePrivileged(t, "records with eBPF")
	dir := t.TempDir()
	series := filepath.Join(dir, "series")
	if err := os.Mkdir(series, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	const n = 120 // 120 writes, 50 ms apart: about 6 s, 3 or 4 files
	args := append([]string{"record", "-o", series + "/", "--rotate", "2s", "--layer", "file", "--"}, writesWorkload(out, n, "0.05")...)
	if _, errs, code := runIotrace(t, args...); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	host, _ := os.Hostname()
	files, err := rotate.Files(series, "", host)
	if err != nil || len(files) < 3 {
		t.Fatalf("%d files (%v), want at least 3", len(files), err)
	}
	// head writes its 4 KiB to its stdout, the file sh opened as fd 3:
	// count head's writes to fd 1 named as out.
	writes, unnamed, ids := seriesWrites(t, files, out)
	t.Logf("%d files hold %d writes named %s, %d not", len(files), writes, out, unnamed)
	if writes != n || unnamed != 0 {
		t.Errorf("%d writes named %s across %d files, %d not named so; want %d, 0", writes, out, len(files), unnamed, n)
	}
	for id, c := range ids {
		if c != 1 {
			t.Errorf("event %d in %d files", id, c)
		}
	}

	// SIGKILL in the middle of a file.
	killed := filepath.Join(dir, "killed")
	if err := os.Mkdir(killed, 0o700); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(dir, "out2")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"record", "-o", killed + "/", "--rotate", "2s", "--layer", "file", "--"}, writesWorkload(out2, 400, "0.02")...)...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond) // into the second file
	st, _ := os.Stat(out2)
	cmd.Process.Kill()
	cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the workload too
	if st == nil {
		t.Fatal("the workload wrote nothing in 3.5 s")
	}
	done := int(st.Size() / 4096)
	files, _ = rotate.Files(killed, "", host)
	got, _, _ := seriesWrites(t, files, out2)
	t.Logf("SIGKILL after 3.5 s: %d files hold %d writes of the %d done", len(files), got, done)
	// Flushed every second; allow the ring buffer's delivery and the
	// write that was in flight: 1.5 s of writes at 20 ms (plus sleep's
	// own time) is under 75.
	if len(files) < 2 || got > done+1 || done-got > 75 {
		t.Errorf("after SIGKILL: %d files hold %d writes; the workload had done %d (at most 1 s of writes may be lost)", len(files), got, done)
	}
}
