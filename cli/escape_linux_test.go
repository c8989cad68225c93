package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/tracefile"
)

// openPty returns the two ends of a new pseudo-terminal: what the command
// writes to slave is read from master.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// runOnTerminal runs iotrace with its stdout on a pseudo-terminal and
// returns what the terminal received.
func runOnTerminal(t *testing.T, args ...string) (string, int) {
	t.Helper()
	m, s := openPty(t)
	defer m.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(m) // ends with EIO once the slave is closed
		got <- b
	}()
	var errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), s, &errb)
	s.Close()
	select {
	case b := <-got:
		if code != 0 {
			t.Logf("%v: stderr %s", args, errb.String())
		}
		return string(b), code
	case <-time.After(10 * time.Second):
		t.Fatal("reading the terminal timed out")
	}
	return "", 0
}

// hostileTrace is a .iot trace whose process names, paths, notes, header
// (host, kernel, command), counter names and device names hold ESC
// sequences, BEL, newlines, C1 controls, bidi overrides and invalid UTF-8.
func hostileTrace(t *testing.T) string {
	t.Helper()
	tr := resolvedTrace("linux")
	names := []string{
		"/tmp/a\x1b]0;owned\x07b", "/tmp/x\x1b[2J\ny", "/tmp/bad\xff\xfe", "/tmp/c1\u009b31m", "/tmp/\u202egnp.exe",
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Path != "" {
			e.Path = names[i%len(names)]
		}
		e.Comm = "ev\x1bil\x07"
	}
	// What the header, the counters and the device names say comes from
	// the trace file too.
	tr.Header.Hostname = "host\x1b]0;PWN\x07\xff"
	tr.Header.OSVersion = "6.1\x1b[2J\xfe"
	tr.Header.Command = "make\x1b]0;PWN\x07 \xff\u009b"
	tr.Trailer.Stats.Add(event.CountLost, "ctr\x1b]0;PWN\x07\xff", 14)
	tr.Trailer.Stats.Add(event.CountInfo, "info\x1b[2J\xfe", 3)
	devices := 0
	for i := range tr.Facts {
		if f := &tr.Facts[i]; f.Kind == event.FactDevice {
			f.Name = "sd\x1b[31ma\xff"
			devices++
		}
	}
	if devices == 0 {
		t.Fatal("the trace names no device")
	}
	path := filepath.Join(t.TempDir(), "hostile.iot")
	w, err := tracefile.Create(path, tracefile.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTerminalEscapes: on a terminal, no output lets a name from the
// traced system write ESC, BEL, C1 controls or invalid UTF-8: text, csv,
// report, compare and script output all show them by one rule.
func TestTerminalEscapes(t *testing.T) {
	t.Setenv("NO_COLOR", "1") // colours are the only escapes allowed
	iot := hostileTrace(t)
	script := filepath.Join(t.TempDir(), "s.star")
	os.WriteFile(script, []byte(`
files = sum("path", unit="bytes")
procs = count("comm")
def on_event(e):
    if e.path:
        print(e.comm, e.path)
        files.add(e.path, 1)
        procs.add(e.comm)
def on_end():
    files.print()
    procs.print()
`), 0o600)
	for _, args := range [][]string{
		{"print", iot},
		{"print", iot, "-f", "csv"},
		{"report", iot},
		{"compare", iot, iot},
		{"run", script, "--input", iot},
		{"print", iot, "-f", "jsonl"},
		{"report", iot, "--format", "json"},
		{"compare", iot, iot, "--format", "json"},
	} {
		out, code := runOnTerminal(t, args...)
		if code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		for _, bad := range []string{"\x1b", "\x07", "\xff", "\u009b", "\u202e"} {
			if strings.Contains(out, bad) {
				t.Errorf("%v wrote %q to the terminal", args, bad)
			}
		}
		// What the header and the trailer say shows by the rule, not
		// dropped.
		shown := map[string][]string{
			"print":   {"host␛]0;PWN␇<0xFF>", "6.1␛[2J<0xFE>", "make␛]0;PWN␇ <0xFF><U+009B>", "ctr␛]0;PWN␇<0xFF>", "info␛[2J<0xFE>"},
			"report":  {"host␛]0;PWN␇<0xFF>", "6.1␛[2J<0xFE>", "make␛]0;PWN␇ <0xFF><U+009B>", "ctr␛]0;PWN␇<0xFF>", "sd␛[31ma<0xFF>"},
			"compare": {"host␛]0;PWN␇<0xFF>", "6.1␛[2J<0xFE>", "ctr␛]0;PWN␇<0xFF>"},
		}[args[0]]
		if len(args) == 2 || args[0] == "compare" && len(args) == 3 {
			for _, want := range shown {
				if !strings.Contains(out, want) {
					t.Errorf("%v does not show %q", args, want)
				}
			}
		}
		json := strings.Contains(strings.Join(args, " "), "json")
		if !json && !strings.Contains(out, "␛") || !strings.Contains(out, "<U+009B>") && args[0] != "compare" {
			t.Errorf("%v: names not shown by the rule:\n%.2000s", args, out)
		}
	}
}
