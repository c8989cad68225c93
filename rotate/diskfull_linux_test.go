package rotate

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestSeriesDiskFull: a disk that fills in the middle of a file: the error
// names the file, its part and how far it got; every earlier file is
// complete and reads on its own.
func TestSeriesDiskFull(t *testing.T) {
	testenv.RequirePrivileged(t, "mounts a small tmpfs to fill")
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=320k,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	tr := synth.Trace(synth.Options{Seed: 8, Events: 60000})
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: time.Microsecond}
	s, err := New(Options{Dir: dir, MaxBytes: 96 << 10, Now: clk.now, Writer: tracefileOpts()})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Replay(s)
	s.Close()
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v, want no space left", err)
	}
	files, _ := Files(dir, "", tr.Header.Hostname)
	if len(files) < 2 {
		t.Fatalf("%d files", len(files))
	}
	last := files[len(files)-1]
	for _, want := range []string{last, "part ", " events", " bytes written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for _, f := range files[:len(files)-1] {
		if p := readFile(t, f); !p.Ended || len(p.Events) == 0 {
			t.Errorf("%s: earlier file incomplete (%d events, trailer %v)", f, len(p.Events), p.Ended)
		}
	}
	if _, err := os.Stat(last); err != nil {
		t.Error(err)
	}
}
