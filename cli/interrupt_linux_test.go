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
