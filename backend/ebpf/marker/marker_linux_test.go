package marker

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSendReachesListeners(t *testing.T) {
	dir := t.TempDir()
	if n, err := Send(dir, "nobody"); n != 0 || err != nil {
		t.Fatalf("send with no listener: %d, %v", n, err)
	}
	l, err := Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A stale socket of a trace that is gone is removed.
	stale := filepath.Join(dir, "999999999.sock")
	l2, err := Listen(filepath.Join(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(l2.Path(), stale)
	l2.Close()

	n, err := Send(dir, "hello mark")
	if n != 1 || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	m, err := l.Read()
	if err != nil || m.Text != "hello mark" || m.Pid != uint32(os.Getpid()) || m.Time == 0 || m.Tid == 0 {
		t.Errorf("Read = %+v, %v", m, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale socket left: %v", err)
	}
}
