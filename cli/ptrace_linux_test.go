//go:build linux && (amd64 || arm64)

package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/ptrace"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestPtraceBackendCLI: record --backend ptrace writes a trace that report
// reads (the file layer of a command, no block I/O said in the header);
// an unknown backend and the ptrace backend without a command are refused
// with a message saying why.
func TestPtraceBackendCLI(t *testing.T) {
	if err := ptrace.New(ptrace.Config{}).Available(); err != nil {
		t.Skip(err)
	}
	dir := testenv.TempDir(t)
	f := filepath.Join(dir, "t.iot")
	if _, errs, code := runCLI(t, "record", "--backend", "ptrace", "-o", f, "--", "sh", "-c", "cat /etc/hostname > /dev/null"); code != 0 {
		t.Fatalf("record: %d\n%s", code, errs)
	}
	out, errs, code := runCLI(t, "report", f)
	if code != 0 || !strings.Contains(out, "/etc/hostname") {
		t.Errorf("report: %d\n%s\n%s", code, out, errs)
	}
	out, _, _ = runCLI(t, "print", f)
	if !strings.Contains(out, "no block I/O") && !strings.Contains(out, "block I/O: not traced") {
		t.Errorf("print does not say there is no block I/O:\n%s", out)
	}
	if _, errs, code := runCLI(t, "trace", "--backend", "nosuch", "--", "true"); code == 0 || !strings.Contains(errs, `--backend "nosuch": no such backend`) {
		t.Errorf("--backend nosuch: %d %s", code, errs)
	}
	if _, errs, code := runCLI(t, "trace", "--backend", "ptrace", "--duration", "1s"); code == 0 || !strings.Contains(errs, "give the command after --") {
		t.Errorf("--backend ptrace without a command: %d %s", code, errs)
	}
}
