package cli

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend/ebpf/marker"
	"github.com/iotrace/iotrace/internal/interrupt"
	"github.com/iotrace/iotrace/internal/testenv"
)

// stressEnv sets the iterations of the interrupt stress test (a few by
// default, hundreds by hand: IOTRACE_STRESS=300).
const stressEnv = "IOTRACE_STRESS"

func stressIterations(def int) int {
	if n, err := strconv.Atoi(os.Getenv(stressEnv)); err == nil && n > 0 {
		return n
	}
	return def
}

// childRecord is one run of iotrace (this test binary as the CLI) that a
// signal may stop.
type childRecord struct {
	code     int  // exit status; -1 when a signal killed it
	signaled bool // killed by the signal (sent before the handler was installed)
	stderr   string
	took     time.Duration
}

// runSignaled runs argv (the CLI child, directly or under a wrapper such
// as timeout) and sends SIGINT to it after delay (never when delay < 0).
func runSignaled(t *testing.T, argv []string, delay time.Duration) childRecord {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if delay >= 0 {
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGINT)
	}
	err := cmd.Wait()
	r := childRecord{stderr: errb.String(), took: time.Since(t0)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signaled = true
		}
	default:
		t.Fatal(err)
	}
	return r
}

// checkStopped checks a recording stopped by one signal: a clean stop
// (exit want, the file complete, no temporary file left, no "quitting"),
// or, for a signal that came before iotrace could receive it, nothing
// written at all.
func checkStopped(t *testing.T, what string, r childRecord, path string, want ...int) {
	t.Helper()
	dir := filepath.Dir(path)
	tmps, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if r.signaled {
		// Killed by the default action: only before main installed the
		// handler, when nothing was created yet.
		if _, err := os.Stat(path); err == nil || len(tmps) != 0 {
			t.Errorf("%s: killed by the signal after creating files (%v)\n%s", what, tmps, r.stderr)
		}
		return
	}
	if !slices.Contains(want, r.code) || strings.Contains(r.stderr, "quitting") {
		t.Errorf("%s: exit %d (want %v) after one SIGINT\n%s", what, r.code, want, r.stderr)
	}
	if !complete(path) {
		t.Errorf("%s: %s is not a complete trace after one SIGINT\n%s", what, path, r.stderr)
	}
	if len(tmps) != 0 {
		t.Errorf("%s: temporary files left: %v", what, tmps)
	}
}

// TestInterruptStress: one SIGINT at a random moment of a recording's
// start-up, recording or stop is always a clean stop: the file is renamed
// into place with its trailer, for a single-file recording and a flight
// recorder (one SIGINT once quit without a clean stop in 2 of 21 tries:
// two receivers counted it twice). IOTRACE_STRESS=N runs N iterations of
// each.
func TestInterruptStress(t *testing.T) {
	testenv.RequirePrivileged(t, "records with eBPF")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 34))
	n := stressIterations(3)
	modes := []struct {
		name  string
		extra []string
	}{{"record", nil}, {"record --ring", []string{"--ring", "4M"}}}
	for _, m := range modes {
		dir := t.TempDir()
		argv := func(path string) []string {
			return append([]string{self, "record", "-o", path, "--duration", "1s"}, m.extra...)
		}
		// An unsignalled run measures how long start-up, recording and
		// stop take here; the signals fall anywhere in that span.
		path := filepath.Join(dir, "base.iot")
		base := runSignaled(t, argv(path), -1)
		checkStopped(t, m.name+" (no signal)", base, path, 0)
		span := base.took + base.took/5
		failed := 0
		for i := 0; i < n && failed < 5; i++ {
			delay := time.Duration(rng.Int64N(int64(span)))
			path := filepath.Join(dir, "r"+strconv.Itoa(i)+".iot")
			r := runSignaled(t, argv(path), delay)
			before := t.Failed()
			checkStopped(t, m.name+" SIGINT after "+delay.Round(time.Millisecond).String(), r, path, 0)
			if t.Failed() && !before {
				failed++
			}
			os.Remove(path)
		}
		t.Logf("%s: %d runs, SIGINT in 0..%v", m.name, n, span.Round(time.Millisecond))
	}
}

// TestInterruptTimeout: timeout -s INT signals the process group
// (iotrace and the command it traces): one clean stop, exit with the
// command's status (130: killed by SIGINT; 0 when the signal came before
// iotrace started it), the file complete.
func TestInterruptTimeout(t *testing.T) {
	testenv.RequirePrivileged(t, "records with eBPF")
	tm, err := exec.LookPath("timeout")
	if err != nil {
		t.Skip("no timeout(1)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, c := range []struct {
		after string
		cmd   []string
		want  []int
	}{
		{"3", nil, []int{0}},
		{"3", []string{"--", "sleep", "20"}, []int{130, 0}},
		{"0.3", nil, []int{0}}, // during start-up
	} {
		path := filepath.Join(dir, "t"+strconv.Itoa(i)+".iot")
		argv := append([]string{tm, "--preserve-status", "-s", "INT", c.after, self, "record", "-o", path}, c.cmd...)
		r := runSignaled(t, argv, -1)
		checkStopped(t, strings.Join(argv[4:], " "), r, path, c.want...)
	}
}

// frozenFS is a small ext4 file system on a loop device whose writes can
// be held (fsfreeze): a recording's stop then cannot end, so that a
// second signal comes during it for certain.
type frozenFS struct {
	dir, loop string
	frozen    bool
}

func newFrozenFS(t *testing.T) *frozenFS {
	t.Helper()
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup (util-linux, see scripts/setup): %v: %s", err, out)
	}
	fs := &frozenFS{dir: t.TempDir(), loop: strings.TrimSpace(string(out))}
	t.Cleanup(func() {
		fs.thaw(t)
		syscall.Unmount(fs.dir, 0)
		exec.Command("losetup", "-d", fs.loop).Run()
	})
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", fs.loop).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 (e2fsprogs, see scripts/setup): %v: %s", err, out)
	}
	if err := syscall.Mount(fs.loop, fs.dir, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s: %v", fs.loop, err)
	}
	return fs
}

func (fs *frozenFS) freeze(t *testing.T) {
	if out, err := exec.Command("fsfreeze", "-f", fs.dir).CombinedOutput(); err != nil {
		t.Fatalf("fsfreeze -f: %v: %s", err, out)
	}
	fs.frozen = true
}

func (fs *frozenFS) thaw(t *testing.T) {
	if fs.frozen {
		if out, err := exec.Command("fsfreeze", "-u", fs.dir).CombinedOutput(); err != nil {
			t.Errorf("fsfreeze -u: %v: %s", err, out)
		}
		fs.frozen = false
	}
}

// TestSecondInterruptKeepsFile: a second SIGINT while the stop cannot end
// (its disk is frozen) quits (exit 130), and the recording is still under
// its name once the disk moves again, readable as far as it was written;
// no temporary file is left.
func TestSecondInterruptKeepsFile(t *testing.T) {
	testenv.RequirePrivileged(t, "records with eBPF, mounts a loop device")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name  string
		extra []string
	}{{"record", nil}, {"record --ring", []string{"--ring", "4M"}}} {
		fs := newFrozenFS(t)
		path := filepath.Join(fs.dir, "q.iot")
		cmd := exec.Command(self, append([]string{"record", "-o", path}, m.extra...)...)
		cmd.Env = append(os.Environ(), cliChildEnv+"=1")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Once the trace began (the file has its header; a flight
		// recorder's backend listens for markers): the disk stops, one
		// signal starts the stop, which waits for the disk, and a second
		// quits.
		began := func() bool {
			if m.extra != nil {
				_, err := os.Stat(filepath.Join(marker.DefaultDir, strconv.Itoa(cmd.Process.Pid)+".sock"))
				return err == nil
			}
			tmps, _ := filepath.Glob(filepath.Join(fs.dir, ".q.iot*"))
			if len(tmps) == 0 {
				return false
			}
			st, err := os.Stat(tmps[0])
			return err == nil && st.Size() > 0
		}
		for deadline := time.Now().Add(60 * time.Second); !began(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("%s: the trace never began\n%s", m.name, errb.String())
			}
		}
		fs.freeze(t)
		cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(interrupt.Repeat + 200*time.Millisecond)
		cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(300 * time.Millisecond)
		fs.thaw(t)
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		stderr := errb.String()
		if code != 130 || !strings.Contains(stderr, "quitting without a clean stop") {
			t.Errorf("%s: exit %d after two SIGINTs, want 130 and the quit\n%s", m.name, code, stderr)
		}
		if tmps, _ := filepath.Glob(filepath.Join(fs.dir, ".*")); len(tmps) != 0 {
			t.Errorf("%s: temporary files left: %v", m.name, tmps)
		}
		_, perr, pcode := runCLI(t, "print", path)
		if pcode != 0 && (pcode != 2 || !strings.Contains(perr, "cut short")) {
			t.Errorf("%s: print of the kept file: exit %d\n%s", m.name, pcode, perr)
		}
		t.Logf("%s: %s\nprint: exit %d %s", m.name, stderr, pcode, perr)
	}
}
