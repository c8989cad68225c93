package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// failAfter is a writer that fails after n bytes (a full disk, a closed
// pipe).
type failAfter struct{ n int }

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		n := f.n
		f.n = 0
		return n, errors.New("no space left on device")
	}
	f.n -= len(b)
	return len(b), nil
}

// TestPrintWriteErrorIsNotDamage: a failed write is exit 1 saying the
// output is incomplete, not exit 2 blaming the input.
func TestPrintWriteErrorIsNotDamage(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	var errb bytes.Buffer
	code := Main(context.Background(), []string{"print", in}, strings.NewReader(""), &failAfter{n: 5000}, &errb)
	if code != 1 || !strings.Contains(errb.String(), "writing standard output failed") || strings.Contains(errb.String(), "every event before") {
		t.Errorf("print to a failing stdout: exit %d, stderr %q; want 1 and the write error", code, errb.String())
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		_, errOut, code := runCLI(t, "print", in, "-o", "/dev/full")
		if code != 1 || !strings.Contains(errOut, "writing /dev/full failed") {
			t.Errorf("print -o /dev/full: exit %d, stderr %q", code, errOut)
		}
	}
}

// failingSink fails from its n-th event on.
type failingSink struct {
	event.Sink
	n int
}

func (f *failingSink) Event(e *event.Event) error {
	if f.n--; f.n < 0 {
		return errors.New("write: broken pipe")
	}
	return f.Sink.Event(e)
}

// TestSummaryAfterWriteError: the end summary of a live trace whose
// output failed says so and counts only the events written, instead of
// "0 events lost".
func TestSummaryAfterWriteError(t *testing.T) {
	var errb bytes.Buffer
	s := &summary{Sink: &failingSink{Sink: synth.NewRecorder(), n: 10}, w: &errb, verb: "traced"}
	tr := synth.Trace(synth.Options{OS: "linux", Events: 50, Seed: 1, Resolved: true})
	s.Begin(&tr.Header)
	for i := range tr.Events {
		s.Event(&tr.Events[i])
	}
	s.End(&tr.Trailer)
	got := errb.String()
	if !strings.Contains(got, "traced 10 events") || !strings.Contains(got, "writing the output failed: write: broken pipe") || strings.Contains(got, "0 events lost") {
		t.Errorf("summary after a write error: %q", got)
	}
}

// TestPrintStdin: "print -" (and report -) read the trace from standard
// input, .iot (read in two passes) included.
func TestPrintStdin(t *testing.T) {
	src := resolvedTrace("linux")
	in := writeJSONL(t, src)
	iot := in + ".iot"
	if _, errOut, code := runCLI(t, "convert", in, "-o", iot); code != 0 {
		t.Fatalf("convert: %s", errOut)
	}
	for _, f := range []string{in, iot} {
		data, _ := os.ReadFile(f)
		for _, args := range [][]string{{"print", "-", "-f", "jsonl"}, {"report", "-"}} {
			var out, errb bytes.Buffer
			code := Main(context.Background(), args, bytes.NewReader(data), &out, &errb)
			if code != 0 {
				t.Fatalf("%v < %s: exit %d: %s", args, f, code, errb.String())
			}
			if args[0] == "print" {
				if got := readJSONL(t, out.String()); len(got.Events) != len(src.Events) {
					t.Errorf("print - < %s: %d events, want %d", f, len(got.Events), len(src.Events))
				}
			}
		}
	}
}
