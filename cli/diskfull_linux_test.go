package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/tracefile"
)

// readCut reads a .iot file that may end early: its events and the
// reader's error.
func readCut(t *testing.T, path string) (events int, err error) {
	t.Helper()
	r, err := tracefile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var s countEvents
	err = r.Run(t.Context(), &s)
	return s.n, err
}

// TestRecordDiskFull: a single-file recording that fills its disk stops
// with exit 1, and the file is at its name, cut to its last whole chunk:
// it reads the number of events the message says it kept, then says it
// was cut short; the message also counts the events not written.
func TestRecordDiskFull(t *testing.T) {
	testenv.RequirePrivileged(t, "records with eBPF, mounts a small tmpfs")
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=384k,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	path := filepath.Join(dir, "full.iot")
	// 300,000 one-byte writes: megabytes of trace.
	_, stderr, code := runCLI(t, "record", "-o", path, "--layer", "file", "--", "dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000")
	m := regexp.MustCompile(`keeps the first (\d+) events .*, (\d+) recorded events were not written`).FindStringSubmatch(stderr)
	if code != 1 || m == nil || !strings.Contains(stderr, "no space left on device") {
		t.Fatalf("record into a full disk: exit %d, want 1 with the events kept and lost\n%s", code, stderr)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	kept, _ := strconv.Atoi(m[1])
	n, err := readCut(t, path)
	if n != kept || kept == 0 || err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("%s reads %d events (%v), the message says %d kept; want them all, then cut short", path, n, err, kept)
	}
	if strings.Count(stderr, "no space left") > 2 {
		t.Errorf("the write error said more than once (summary and error):\n%s", stderr)
	}
	t.Logf("%s", stderr)
}

// TestRecordOutputRemoved: a recording whose directory is removed stops
// within about a second (exit 1) and copies what it recorded to the
// temporary directory, naming the file; that file is a whole trace.
func TestRecordOutputRemoved(t *testing.T) {
	testenv.RequirePrivileged(t, "records with eBPF")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gone.iot")
	cmd := exec.Command(self, "record", "-o", path, "--layer", "file", "--duration", "60s")
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		tmps, _ := filepath.Glob(filepath.Join(dir, ".gone.iot*"))
		if len(tmps) > 0 {
			if st, err := os.Stat(tmps[0]); err == nil && st.Size() > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the recording never began\n%s", errb.String())
		}
	}
	// Some events of this process flushed to the file (every second).
	for i := 0; i < 15; i++ {
		os.ReadFile("/proc/self/stat")
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	err = cmd.Wait()
	took := time.Since(removed)
	var ee *exec.ExitError
	stderr := errb.String()
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || took > 10*time.Second {
		t.Fatalf("after its directory was removed: %v after %v, want exit 1 within seconds\n%s", err, took, stderr)
	}
	m := regexp.MustCompile(`was removed while recording: its (\d+) events are in (\S+) instead`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no message naming where the recording went:\n%s", stderr)
	}
	defer os.Remove(m[2])
	if !strings.HasPrefix(m[2], os.TempDir()) || !complete(m[2]) {
		t.Errorf("%s: not a whole trace in %s", m[2], os.TempDir())
	}
	if fi, err := os.Stat(m[2]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v (want 0600)", m[2], err, fi.Mode())
	}
	n, _ := readCut(t, m[2])
	if want, _ := strconv.Atoi(m[1]); n != want || n == 0 {
		t.Errorf("%s holds %d events, the message says %d", m[2], n, want)
	}
	t.Logf("stopped %v after the removal:\n%s", took.Round(time.Millisecond), stderr)
}

type countEvents struct{ n int }

func (c *countEvents) Begin(*event.Header) error { return nil }
func (c *countEvents) Event(*event.Event) error  { c.n++; return nil }
func (c *countEvents) Fact(*event.Fact) error    { return nil }
func (c *countEvents) End(*event.Trailer) error  { return nil }
