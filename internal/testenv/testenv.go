// Package testenv decides, in one place, when a test may skip: privileged
// tests skip with a clear message when run unprivileged, but fail when
// IOTRACE_REQUIRE_PRIVILEGED=1 (as in CI); tests that need the shared
// real-world fixtures skip when they are missing, but fail in CI.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// RequirePrivileged skips t unless the process runs as root on Linux. When
// IOTRACE_REQUIRE_PRIVILEGED=1 the skip becomes a failure. why says what
// the test needs the privilege for.
func RequirePrivileged(t testing.TB, why string) {
	t.Helper()
	if runtime.GOOS == "linux" && os.Geteuid() == 0 {
		return
	}
	msg := "needs root on Linux (" + why + "); run the tests with sudo"
	if os.Getenv("IOTRACE_REQUIRE_PRIVILEGED") == "1" {
		t.Fatalf("IOTRACE_REQUIRE_PRIVILEGED=1 but this test %s", msg)
	}
	t.Skip("skipped: this test " + msg)
}

// Required reports whether privileged tests must run (IOTRACE_REQUIRE_PRIVILEGED=1).
func Required() bool { return os.Getenv("IOTRACE_REQUIRE_PRIVILEGED") == "1" }

// RepoRoot returns the directory holding the module's go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// SharedDir returns the shared fixtures directory: $IOTRACE_SHARED, or
// ../shared beside the repository root. When it is missing the test is
// skipped, except in CI (CI=true) or with IOTRACE_REQUIRE_PRIVILEGED=1,
// where it fails.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("IOTRACE_SHARED")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "testdata")); err != nil {
		msg := "shared fixtures not found at " + dir + " (set IOTRACE_SHARED)"
		if os.Getenv("CI") == "true" || Required() {
			t.Fatal(msg)
		}
		t.Skip("skipped: " + msg)
	}
	return dir
}

// ETLDir returns the directory of the shared real ETL traces.
func ETLDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(SharedDir(t), "testdata", "etl")
}
