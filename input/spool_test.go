package input

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/tracefile"
)

// iotBytes is a small .iot trace (the format read in two passes).
func iotBytes(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := tracefile.NewWriter(&buf, tracefile.WriterOptions{})
	if err := synth.Trace(synth.Options{OS: "linux", Events: 300, Seed: 3, Resolved: true}).Replay(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func count(t *testing.T, r Reader) int {
	t.Helper()
	rec := synth.NewRecorder()
	if err := r.Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return len(rec.Trace().Events)
}

// TestOpenFromStdin: "-" reads standard input and a FIFO is read
// once (spooled), with every event; the spool file is removed on Close.
func TestOpenFromStdin(t *testing.T) {
	data := iotBytes(t)
	r, err := OpenFrom("-", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, r); n != 300 {
		t.Errorf("stdin: %d events, want 300", n)
	}
	spool := r.(*spooled).spool
	if st, err := os.Stat(spool); err != nil || (runtime.GOOS != "windows" && st.Mode().Perm() != 0o600) {
		t.Errorf("spool %s: %v, mode %v; want 0600", spool, err, st.Mode().Perm())
	}
	r.Close()
	if _, err := os.Stat(spool); err == nil {
		t.Errorf("spool %s left after Close", spool)
	}

}

func TestOpenFromEmptyStdin(t *testing.T) {
	_, err := OpenFrom("-", strings.NewReader(""))
	if err == nil || !strings.Contains(err.Error(), "standard input") || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty stdin: %v", err)
	}
}
