package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/status/statustest"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/tracefile"
)

// stderrOnTerminal runs iotrace with its standard error on a
// pseudo-terminal and returns what the terminal received, stdout, and the
// exit code.
func stderrOnTerminal(t *testing.T, args ...string) (tty []byte, stdout string, code int) {
	t.Helper()
	m, s := openPty(t)
	defer m.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(m) // ends with EIO once the slave is closed
		got <- b
	}()
	var out bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, s)
	s.Close()
	return <-got, out.String(), code
}

// termScreen plays what a terminal received and returns its lines.
func termScreen(b []byte) []string {
	lines, _ := statustest.Screen(b)
	return lines
}

// statusDraw is one drawing of the live status line.
var statusDraw = regexp.MustCompile(`\r([0-9,]+) events, (?:[0-9.]+ [KMGT]?i?B(?: of [0-9.]+ [KMGT]?iB)?, )?[0-9,]+ lost, [0-9]+:[0-9]{2}`)

// TestLiveStatusLine: on a terminal, trace -o, record (a file, --ring,
// --rotate) and run show the status line, redrawn in place about once a
// second, and clear it at the end: the screen then holds only the
// commands' own lines. With -q, or with stderr not a terminal, there is no
// status line.
func TestLiveStatusLine(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	dir := testenv.TempDir(t)
	script := filepath.Join(dir, "count.star")
	if err := os.WriteFile(script, []byte("def on_event(e):\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "series"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		bytes string // what the bytes part looks like: "" none, "B" a size, "of" of a budget
	}{
		{"record", []string{"record", "-o", filepath.Join(dir, "t.iot")}, "B"},
		{"record --ring", []string{"record", "--ring", "8M", "-o", filepath.Join(dir, "r.iot")}, "of"},
		{"record --rotate", []string{"record", "--rotate", "1GiB", "-o", filepath.Join(dir, "series")}, "B"},
		{"trace -o", []string{"trace", "-f", "jsonl", "-o", filepath.Join(dir, "t.jsonl")}, "B"},
		{"run", []string{"run", script, "-o", filepath.Join(dir, "run.out")}, "B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			filter := []string{"--layer", "file"}
			if tc.args[0] == "run" {
				filter = []string{"--where", "layer == 'file'"}
			}
			tty, _, code := stderrOnTerminal(t, append(append(tc.args, filter...), "--duration", "3500ms")...)
			if code != 0 {
				t.Fatalf("exit %d: %q", code, tty)
			}
			draws := statusDraw.FindAllSubmatch(tty, -1)
			if len(draws) < 2 {
				t.Fatalf("%d status lines drawn in 3.5 s, want 2 or more:\n%q", len(draws), tty)
			}
			for _, d := range draws {
				has := strings.Contains(string(d[0]), "B, ")
				if has != (tc.bytes != "") || strings.Contains(string(d[0]), " of ") != (tc.bytes == "of") {
					t.Errorf("status %q: want bytes %q", d[0], tc.bytes)
				}
			}
			screen := termScreen(tty)
			if last := screen[len(screen)-1]; last != "" {
				t.Errorf("the screen ends with %q, not an empty line", last)
			}
			for _, l := range screen {
				if statusDraw.MatchString("\r"+l) || strings.Contains(l, " lost, ") {
					t.Errorf("status left on the screen: %q (screen %q)", l, screen)
				}
				if l != "" && !strings.HasPrefix(l, "iotrace") {
					t.Errorf("garbage on the screen: %q (screen %q)", l, screen)
				}
			}
			if strings.Contains(string(tty), "\x1b") {
				t.Errorf("escape codes written: %q", tty)
			}

			// -q: nothing but the commands' own lines.
			tty, _, code = stderrOnTerminal(t, append(append(append(tc.args, "-q"), filter...), "--duration", "2500ms")...)
			if code != 0 || bytes.Contains(tty, []byte(" lost, ")) {
				t.Errorf("-q: exit %d, %q", code, tty)
			}
		})
	}
	// Not a terminal: no status line.
	_, stderr, code := runCLI(t, "record", "-o", filepath.Join(dir, "p.iot"), "--layer", "file", "--duration", "2500ms")
	if code != 0 || strings.Contains(stderr, "\r") || strings.Contains(stderr, " lost, ") {
		t.Errorf("stderr not a terminal: exit %d, %q", code, stderr)
	}
	// A traced command shares the terminal: no status line.
	tty, _, code := stderrOnTerminal(t, "record", "-o", filepath.Join(dir, "c.iot"), "--layer", "file", "--", "sleep", "2.5")
	if code != 0 || bytes.Contains(tty, []byte(" lost, ")) {
		t.Errorf("with a command: exit %d, %q", code, tty)
	}
}

// bigTrace writes a synthetic trace of n events to dir/big.iot.
func bigTrace(t *testing.T, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, "big.iot")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := tracefile.NewWriter(f, tracefile.WriterOptions{})
	if err := synth.Generate(synth.Options{Events: n}, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// nopSink takes everything and keeps nothing.
type nopSink struct{}

func (nopSink) Begin(*event.Header) error { return nil }
func (nopSink) Event(*event.Event) error  { return nil }
func (nopSink) Fact(*event.Fact) error    { return nil }
func (nopSink) End(*event.Trailer) error  { return nil }

// slowSink takes 10 ms every 1000 events.
type slowSink struct {
	event.Sink
	n int
}

func (s *slowSink) Event(e *event.Event) error {
	if s.n++; s.n%1000 == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	return s.Sink.Event(e)
}

// barDraw is one drawing of a read's progress bar.
var barDraw = regexp.MustCompile(`\r(big\.iot|big\.jsonl) +([0-9]+)% \|[^|]*\| \([0-9.]+/[0-9.]+ [KMG]?i?B`)

// TestReadProgressBar: a read that takes seconds shows a bar of the bytes
// read on a terminal (a .iot, a jsonl file: both passes, the facts' and
// the events'), rising, and clears it at the end.
func TestReadProgressBar(t *testing.T) {
	dir := testenv.TempDir(t)
	iot := bigTrace(t, dir, 200_000)
	jsonl := filepath.Join(dir, "big.jsonl")
	if _, stderr, code := runCLI(t, "convert", iot, "-o", jsonl); code != 0 {
		t.Fatalf("convert: %s", stderr)
	}
	for _, path := range []string{iot, jsonl} {
		in, err := input.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, tty := openPty(t)
		got := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(m)
			got <- b
		}()
		sink, stop := readProgress(tty, in, path, &slowSink{Sink: nopSink{}}, false, false)
		err = in.Run(context.Background(), sink)
		stop()
		in.Close()
		tty.Close()
		b := <-got
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		draws := barDraw.FindAllSubmatch(b, -1)
		if len(draws) < 1 {
			t.Fatalf("%s: no progress bar drawn: %q", path, b)
		}
		last := 0
		for _, d := range draws {
			p, _ := strconv.Atoi(string(d[2]))
			if p < last || p > 100 {
				t.Errorf("%s: the bar went from %d%% to %d%%: %q", path, last, p, b)
			}
			last = p
		}
		if screen := termScreen(b); len(screen) != 1 || screen[0] != "" {
			t.Errorf("%s: left on the screen: %q", path, screen)
		}
		if bytes.Contains(b, []byte("\x1b")) {
			t.Errorf("%s: escape codes written: %q", path, b)
		}
	}
}

// TestConvertReportProgress: convert and report of a large trace, stderr
// on a terminal, draw their progress bar (once the read takes over a
// second) and leave only their own lines on the screen; with -q, or stderr
// not a terminal, nothing.
func TestConvertReportProgress(t *testing.T) {
	dir := testenv.TempDir(t)
	iot := bigTrace(t, dir, 1_000_000)
	for _, args := range [][]string{
		{"convert", iot, "-o", filepath.Join(dir, "out.jsonl")},
		{"report", iot},
		{"print", iot, "-o", filepath.Join(dir, "out.txt")},
	} {
		start := time.Now()
		tty, _, code := stderrOnTerminal(t, args...)
		took := time.Since(start)
		if code != 0 {
			t.Fatalf("%s: exit %d: %q", args[0], code, tty)
		}
		if took > 2500*time.Millisecond && !barDraw.Match(tty) {
			t.Errorf("%s took %v and drew no progress bar: %q", args[0], took, tty)
		}
		for _, l := range termScreen(tty) {
			if l != "" && !strings.HasPrefix(l, "iotrace: ") {
				t.Errorf("%s: left on the screen: %q", args[0], l)
			}
		}
		tty, _, _ = stderrOnTerminal(t, append(args, "-q")...)
		if bytes.Contains(tty, []byte("\r")) && !bytes.Contains(tty, []byte("\r\n")) || barDraw.Match(tty) {
			t.Errorf("%s -q: %q", args[0], tty)
		}
		if _, stderr, _ := runCLI(t, args...); strings.Contains(stderr, "\r") {
			t.Errorf("%s, stderr not a terminal: %q", args[0], stderr)
		}
	}
}
