package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestOutputLimitOnlyForTraceInputs: a command reading a trace may write
// outputPerInputByte bytes per byte of it plus outputSlack, and is
// stopped there; a live command (trace, serve, run without an input) has
// no trace to bound it: it writes past that, into a file or standard
// output, and its script is still not written over.
func TestOutputLimitOnlyForTraceInputs(t *testing.T) {
	dir := testenv.TempDir(t)
	in := filepath.Join(dir, "small.iot")
	if err := os.WriteFile(in, make([]byte, 10), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "s.star")
	if err := os.WriteFile(script, []byte("def on_event(e):\n    pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := outputLimit(nil, []string{in}), int64(outputPerInputByte*10+outputSlack); got != want {
		t.Errorf("limit for a 10-byte input: %d, want %d", got, want)
	}
	if got := outputLimit(nil, nil); got != 0 {
		t.Errorf("limit without an input: %d, want 0 (none)", got)
	}
	chunk := make([]byte, 1<<20)
	write := func(w interface{ Write([]byte) (int, error) }, n int) error {
		for range n {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	}
	past := outputSlack>>20 + 2 // MiB: past the limit a 10-byte trace allows

	w, finish, err := openOutput(filepath.Join(dir, "read.txt"), nil, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(w, past); !isOutputLimit(err) {
		t.Errorf("a command reading a 10-byte trace wrote %d MiB: %v", past, err)
	}
	_ = finish(true)

	for _, path := range []string{filepath.Join(dir, "live.txt"), "-"} {
		var stdout bytes.Buffer
		w, finish, err := openLiveOutput(path, nil, &stdout, script)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(w, past); err != nil {
			t.Errorf("live output %s: %v after less than %d MiB", path, err, past)
		}
		if err := finish(true); err != nil {
			t.Errorf("live output %s: finish: %v", path, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "live.txt")); err != nil || st.Size() != int64(past)<<20 {
		t.Errorf("live output file: %v, %v", st, err)
	}
	if _, _, err := openLiveOutput(script, nil, nil, script); err == nil {
		t.Error("a live command's output over its script was opened")
	}
}
