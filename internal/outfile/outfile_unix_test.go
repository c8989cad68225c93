//go:build unix

package outfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOtherUsersFiles: another user's FIFO is refused, and replacing
// another user's world-readable file gives a 0600 file.
func TestOtherUsersFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of another user")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "trap.iot")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Skip(err)
	}
	os.Lchown(fifo, 65534, 65534)
	if _, err := Create(fifo); err == nil || !strings.Contains(err.Error(), "another user") {
		t.Errorf("another user's FIFO: %v, want refused", err)
	}
	theirs := filepath.Join(dir, "theirs.iot")
	os.WriteFile(theirs, []byte("x"), 0o666)
	os.Chmod(theirs, 0o666)
	os.Chown(theirs, 65534, 65534)
	if err := write(t, theirs, "trace"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(theirs); st.Mode().Perm() != 0o600 {
		t.Errorf("replacing another user's 0666 file gave mode %v, want 0600", st.Mode().Perm())
	}
}
