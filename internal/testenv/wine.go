package testenv

import (
	"os"
	"testing"
)

// UnderWine reports whether the test binary runs under wine (a Windows
// binary on Linux), where some Windows functions are missing or stubbed.
// It is false on real Windows and on every other OS.
func UnderWine() bool { return underWine() }

// SkipUnderWine skips t under wine only, saying why (what wine cannot
// do); on real Windows and elsewhere it does nothing.
func SkipUnderWine(t testing.TB, why string) {
	t.Helper()
	if underWine() {
		t.Skip("skipped under wine: " + why)
	}
}

// TempDir is t.TempDir, except under wine: wine 8 cannot delete files
// the way Go's os.RemoveAll does (POSIX semantics through
// FileDispositionInformationEx), which fails the cleanup of t.TempDir;
// there the directory is made with os.MkdirTemp and removed with plain
// DeleteFile/RemoveDirectory calls, and a removal that still fails is
// logged, not failed.
func TempDir(t testing.TB) string {
	t.Helper()
	if !underWine() {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "iotrace-test-*")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() {
		if err := removeTree(dir); err != nil {
			t.Logf("TempDir cleanup under wine: %v", err)
		}
	})
	return dir
}
