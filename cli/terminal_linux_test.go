package cli

import (
	"bytes"
	"os"
	"testing"
)

// TestConvertProgress: convert (and print -o) show a read's progress on
// stderr when it is a terminal the output does not share.
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
	if !progressShown(tty, "out.jsonl", tty) {
		t.Errorf("no progress on a terminal while writing a file")
	}
	if progressShown(tty, "-", tty) || progressShown(tty, "", tty) || progressShown(tty, "/dev/stdout", tty) {
		t.Errorf("progress on the terminal the output goes to")
	}
	if !progressShown(tty, "-", &buf) {
		t.Errorf("no progress on a terminal while stdout is piped")
	}
	if !progressShown(tty, "-", null) {
		t.Errorf("no progress on a terminal while stdout is %s", os.DevNull)
	}
	if progressShown(&buf, "out.jsonl", tty) {
		t.Errorf("progress on a stderr that is not a terminal")
	}
}
