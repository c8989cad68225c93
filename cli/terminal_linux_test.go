package cli

import (
	"bytes"
	"os"
	"testing"
)

// TestConvertProgress: convert (and print -o) show report's progress line
// on stderr when it is a terminal the output does not share.
func TestConvertProgress(t *testing.T) {
	m, tty := openPty(t)
	defer m.Close()
	defer tty.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var buf bytes.Buffer
	if withProgress(nil, tty, "out.jsonl", tty) == nil {
		t.Errorf("no progress on a terminal while writing a file")
	}
	if withProgress(nil, tty, "-", tty) != nil || withProgress(nil, tty, "", tty) != nil || withProgress(nil, tty, "/dev/stdout", tty) != nil {
		t.Errorf("progress on the terminal the output goes to")
	}
	if withProgress(nil, tty, "-", &buf) == nil {
		t.Errorf("no progress on a terminal while stdout is piped")
	}
	if withProgress(nil, tty, "-", null) == nil {
		t.Errorf("no progress on a terminal while stdout is %s", os.DevNull)
	}
	if withProgress(nil, &buf, "out.jsonl", tty) != nil {
		t.Errorf("progress on a stderr that is not a terminal")
	}
}
