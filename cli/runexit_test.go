package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/script"
)

// TestRunInputErrorsExit1: run follows the exit-code rule of every
// reading command: a missing or unrecognized --input is an error (1,
// with the open error, not "reading stopped"), as for print; damage inside
// a recognized trace is 2 (TestDamagedInputExit2).
func TestRunInputErrorsExit1(t *testing.T) {
	dir := testenv.TempDir(t)
	script := filepath.Join(dir, "s.star")
	os.WriteFile(script, []byte("def on_event(e):\n    pass\n"), 0o600)
	out := filepath.Join(dir, "out.txt")
	for _, in := range []string{filepath.Join(dir, "missing.iot"), script} {
		_, printErr, printCode := runCLI(t, "print", in)
		_, errOut, code := runCLI(t, "run", script, "--input", in, "-o", out)
		if code != 1 || printCode != 1 || strings.Contains(errOut, "reading stopped") {
			t.Errorf("run --input %s: exit %d, stderr %q; print: exit %d, stderr %q; want both 1", filepath.Base(in), code, errOut, printCode, printErr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("run --input %s created its output before failing", filepath.Base(in))
		}
	}
}

// TestRunMaxMemory: a script stopped by --max-memory is a script error
// (exit 1) that says so, not damaged input, and what it printed before is
// kept in its output.
func TestRunMaxMemory(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	dir := testenv.TempDir(t)
	script := filepath.Join(dir, "grow.star")
	os.WriteFile(script, []byte("data = []\ndef on_event(e):\n    print(e.id)\n    data.append(\"x\" * 200000 + str(e.id))\n"), 0o600)
	out := filepath.Join(dir, "out.txt")
	_, errOut, code := runCLI(t, "run", script, "--input", in, "--max-memory", "48M", "-o", out)
	if code != 1 {
		t.Errorf("exit %d, want 1 (a script error)", code)
	}
	for _, want := range []string{"script stopped: memory limit exceeded", "past its limit of 48.0 MiB", "--max-memory", "went to " + out} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %q", want, errOut)
		}
	}
	if strings.Contains(errOut, "reading stopped") || strings.Contains(errOut, "damaged") {
		t.Errorf("the memory limit reported as damaged input: %q", errOut)
	}
	if b, err := os.ReadFile(out); err != nil || len(b) == 0 {
		t.Errorf("the output printed before the stop was not kept: %d bytes, %v", len(b), err)
	}
}

// TestRunOutcomeLive: a live run's script stopped by the memory limit
// ends as an offline one does (the same limit and the same error reach
// runOutcome from both paths).
func TestRunOutcomeLive(t *testing.T) {
	me := &script.MemoryLimitError{Limit: 50 << 20, Grown: 51 << 20}
	for _, live := range []bool{true, false} {
		err := runOutcome(context.Background(), context.Canceled, me, live, "")
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 1 || !strings.Contains(err.Error(), "memory limit exceeded") || !strings.Contains(err.Error(), "went to standard output") {
			t.Errorf("live %v: %v, want exit 1 naming the limit", live, err)
		}
	}
	// The user's Ctrl-C is no error; a live backend's failure is 1.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runOutcome(ctx, context.Canceled, nil, true, ""); err != nil {
		t.Errorf("Ctrl-C: %v", err)
	}
	var ee *ExitError
	if err := runOutcome(context.Background(), errors.New("backend failed"), nil, true, ""); err == nil || errors.As(err, &ee) {
		t.Errorf("live failure: %v, want a plain error (exit 1)", err)
	}
}

// TestExitMessage: the traced command's end is said as a shell would:
// its status, or the signal that killed it with the status iotrace
// exits with.
func TestExitMessage(t *testing.T) {
	for _, c := range []struct {
		exit backend.CommandExit
		want string
	}{
		{backend.CommandExit{Status: 3}, "make exited with status 3"},
		{backend.CommandExit{Status: 143}, "make exited with status 143"},
		{backend.CommandExit{Status: 143, Signal: "SIGTERM"}, "make was killed by SIGTERM (exit status 143)"},
	} {
		if got := exitMessage("make", c.exit); got != c.want {
			t.Errorf("%+v: %q, want %q", c.exit, got, c.want)
		}
	}
}

// TestCommandNotFoundBeforeOutput: a command that cannot be started is an
// error before anything is traced or written: no trace on stdout, no
// file left by record.
func TestCommandNotFoundBeforeOutput(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the ETW backend finds the program as CreateProcess does")
	}
	dir := testenv.TempDir(t)
	iot := filepath.Join(dir, "t.iot")
	for _, args := range [][]string{
		{"trace", "--", "/nonexistent/prog"},
		{"trace", "--", "no-such-program-iotrace"},
		{"record", "-o", iot, "--", "/nonexistent/prog"},
		{"report", "--live", "--", "/nonexistent/prog"},
	} {
		out, errOut, code := runCLI(t, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "cannot start ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, nothing written, 'cannot start'", args, code, out, errOut)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("record of a missing command left %v", ents)
	}
}
