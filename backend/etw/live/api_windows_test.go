//go:build windows && (amd64 || arm64)

package live

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// cmdPath finds cmd.exe as `iotrace trace -- cmd` does.
func cmdPath(t *testing.T) string {
	p, err := findProgram("cmd", winAPI{}.ProgramSearch(), winAPI{}.IsFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFindProgramCurrentDir: a program in the current directory is found
// by the real search (CreateProcess's order), where Go's exec.LookPath
// refuses it with exec.ErrDot. It runs under wine.
func TestFindProgramCurrentDir(t *testing.T) {
	dir := testenv.TempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "iotrace-probe-app.exe"), []byte("MZ"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if _, err := exec.LookPath("iotrace-probe-app.exe"); !errors.Is(err, exec.ErrDot) {
		t.Logf("exec.LookPath: %v (Go's ErrDot not seen)", err)
	}
	s := winAPI{}.ProgramSearch()
	got, err := findProgram("iotrace-probe-app", s, winAPI{}.IsFile)
	if err != nil || !strings.EqualFold(got, filepath.Join(dir, "iotrace-probe-app.exe")) {
		t.Fatalf("findProgram: %q, %v (search %+v)", got, err, s)
	}
}

// stdioHelperEnv makes TestStartSuspendedStdio the process whose stdout
// is watched.
const stdioHelperEnv = "IOTRACE_TEST_STDIO_HELPER"

// TestStartSuspendedStdio starts a real command (cmd /c echo) with its
// standard output on a pipe: what it prints comes out of the pipe, and
// nothing of it lands in this process's own stdout (the test runs itself
// again, with that stdout captured, to see it). It runs under wine.
func TestStartSuspendedStdio(t *testing.T) {
	// cmd expands the variable: the marker is in no command line.
	const marker, echo = "printed-by-the-command-stdio", "printed-by-the-%IOTRACE_TEST_WORD%-stdio"
	if os.Getenv(stdioHelperEnv) == "1" {
		startAndRead(t, marker, echo)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartSuspendedStdio$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), stdioHelperEnv+"=1", "IOTRACE_TEST_WORD=command")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	if !strings.Contains(stdout.String(), "--- PASS: TestStartSuspendedStdio") {
		t.Fatalf("the helper did not pass:\n%s", &stdout)
	}
	if strings.Contains(stdout.String(), marker) {
		t.Errorf("the command's output landed in its parent's stdout:\n%s", &stdout)
	}
}

// startAndRead starts cmd /c echo with its stdout on a pipe and checks
// that marker comes out of the pipe.
func startAndRead(t *testing.T, marker, echo string) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	child, err := winAPI{}.StartSuspended(cmdPath(t), []string{"cmd", "/c", "echo", echo}, Stdio{Stdin: os.Stdin, Stdout: pw, Stderr: os.Stderr})
	pw.Close() // the child holds its own copy
	if err != nil {
		t.Fatalf("StartSuspended: %v", err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(pr) // until the child closes its copy
		got <- b
	}()
	if err := child.Resume(); err != nil {
		child.Kill()
		t.Fatalf("Resume: %v", err)
	}
	code, err := child.Wait()
	if err != nil || code != 0 {
		t.Fatalf("Wait: exit code %d, %v", code, err)
	}
	if b := <-got; !strings.Contains(string(b), marker) {
		t.Errorf("the pipe given as the command's stdout holds %q, want %q", b, marker)
	}
}
