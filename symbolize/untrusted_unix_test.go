//go:build unix

package symbolize

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestIdentityIsNotAPath: identities that would name files outside every
// symbol directory (issue 25, item 1) open nothing: the frame stays
// module+offset, counted as an identity not valid. Files planted where
// the escaped paths lead are FIFOs, which would also hang an open.
func TestIdentityIsNotAPath(t *testing.T) {
	root := testenv.TempDir(t)
	syms := filepath.Join(root, "a", "b", "c", "syms")
	if err := os.MkdirAll(syms, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"x.debug", "x", "y"} {
		if err := syscall.Mkfifo(filepath.Join(root, n), 0o600); err != nil {
			t.Skipf("skipped: mkfifo: %v", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "y"+"dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Dirs: []string{syms}, DebugDirs: []string{}})
	for _, id := range []string{
		"gnu:../../../../x",
		"gnu:../../../../../" + strings.TrimPrefix(root, "/") + "/x",
		"pdb:evil.pdb/../../../../../y",
		"go:../../../../x",
	} {
		m := &Module{Path: "/opt/app/lib.so", ID: id, Start: 0x1000, End: 0x2000}
		done := make(chan Frame, 1)
		go func() { done <- s.Symbolize(m, 0x1100) }()
		select {
		case f := <-done:
			if f.Reason != BadID || f.String() != "lib.so+0x100" {
				t.Errorf("%s: %+v (%s), want %q counted as %q", id, f, f.Reason, "lib.so+0x100", BadID)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: a path built from the identity was opened (a FIFO there hangs)", id)
		}
	}
	if got := strings.Join(s.Problems(), "\n"); !strings.Contains(got, "module identity not valid") {
		t.Errorf("problems: %s", got)
	}
}

// TestModulePathFIFO: a module path that is a FIFO (issue 25, item 2)
// is not waited on: the open does not block, the file is not regular,
// and the frame counts as unreadable.
func TestModulePathFIFO(t *testing.T) {
	dir := testenv.TempDir(t)
	fifo := filepath.Join(dir, "libfifo.so")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("skipped: mkfifo: %v", err)
	}
	s := New(Options{DebugDirs: []string{}})
	m := &Module{Path: fifo, ID: "gnu:0123456789abcdef0123456789abcdef01234567", Start: 0x1000, End: 0x2000}
	done := make(chan Frame, 1)
	go func() { done <- s.Symbolize(m, 0x1100) }()
	select {
	case f := <-done:
		if f.Reason != BadFile {
			t.Errorf("frame %+v: reason %q, want %q", f, f.Reason, BadFile)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the FIFO named as a module path blocked the open")
	}
	// A symbolic link at the module path is not followed.
	link := filepath.Join(dir, "liblink.so")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	if _, err := s.open(link, true); err == nil {
		t.Error("a symbolic link named by a trace was followed")
	}
}
