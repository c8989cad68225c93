//go:build unix

package input

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenFromFIFO: a FIFO is read once (spooled), with every event.
func TestOpenFromFIFO(t *testing.T) {
	data := iotBytes(t)

	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.Write(data)
			f.Close()
		}
	}()
	r, err := OpenFrom(fifo, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := count(t, r); n != 300 {
		t.Errorf("FIFO: %d events, want 300", n)
	}
}
