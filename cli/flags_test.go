package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestLiveFlagChecks: a negative --duration and a --pid of no process are
// errors in every live command, before anything is traced.
func TestLiveFlagChecks(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(self, "-test.run=^$") // a process that exits at once, on any OS
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	gone := strconv.Itoa(c.Process.Pid) // exited and reaped
	iot := filepath.Join(testenv.TempDir(t), "x.iot")
	for _, args := range [][]string{
		{"trace", "--duration", "-1s"},
		{"record", "-o", iot, "--duration=-5m"},
		{"report", "--live", "--duration", "-1ms"},
	} {
		if _, errOut, code := runCLI(t, args...); code != 1 || !strings.Contains(errOut, "--duration") {
			t.Errorf("%v: exit %d, stderr %q; want a --duration error", args, code, errOut)
		}
	}
	for _, args := range [][]string{
		{"trace", "--pid", gone},
		{"record", "-o", iot, "--pid", gone},
		{"report", "--live", "--pid", "1," + gone},
	} {
		if _, errOut, code := runCLI(t, args...); code != 1 || !strings.Contains(errOut, "no such process") {
			t.Errorf("%v: exit %d, stderr %q; want no such process", args, code, errOut)
		}
	}
}

// TestPathGlobChecked: a malformed --path or --comm glob is an error.
func TestPathGlobChecked(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	for _, args := range [][]string{
		{"print", in, "--path", "/a/[!]"},
		{"print", in, "--path", "*.{c,h"},
		{"report", in, "--comm", "{cc,ld"},
	} {
		if _, errOut, code := runCLI(t, args...); code != 1 || !strings.Contains(errOut, "syntax error") {
			t.Errorf("%v: exit %d, stderr %q; want a glob syntax error", args, code, errOut)
		}
	}
}

// TestOpHelp: --op help lists every op, in every command with filters,
// and exits 0.
func TestOpHelp(t *testing.T) {
	for _, args := range [][]string{
		{"print", "--op", "help"},
		{"report", "x.iot", "--op=help"},
		{"trace", "--op", "help"},
		{"compare", "--op", "help"},
	} {
		out, errOut, code := runCLI(t, args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
		for _, op := range []string{"open", "read", "rename", "bwrite", "marker"} {
			if !strings.Contains(out, " "+op) {
				t.Errorf("%v: %q missing from\n%s", args, op, out)
			}
		}
	}
}

// TestVersion: "iotrace version" and "iotrace --version" print the same
// line: the version, the VCS revision (or that there is none) and the Go
// version.
func TestVersion(t *testing.T) {
	a, _, code1 := runCLI(t, "version")
	b, _, code2 := runCLI(t, "--version")
	if code1 != 0 || code2 != 0 || a != b || !strings.HasPrefix(a, "iotrace ") || !strings.Contains(a, runtime.Version()) {
		t.Errorf("version %q (exit %d), --version %q (exit %d)", a, code1, b, code2)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"},
		{Key: "vcs.time", Value: "2026-11-25T05:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	if got, want := formatVersion("dev", bi), "v1.2.3 (revision 0123456789ab of 2026-11-25T05:00:00Z, modified, go1.26.0)"; got != want {
		t.Errorf("formatVersion = %q, want %q", got, want)
	}
	if got := formatVersion("v9", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}); got != "v9 (no VCS revision, go1.26.0)" {
		t.Errorf("formatVersion without VCS = %q", got)
	}
}
