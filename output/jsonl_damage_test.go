package output

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// TestJSONLDamagedLinesSkipped: a repeated line and a corrupt line in the
// middle of a jsonl trace are skipped and counted, every other line is
// read, and the error names the first damaged line.
func TestJSONLDamagedLinesSkipped(t *testing.T) {
	tr := synth.Trace(synth.Options{Seed: 9, Events: 2000})
	var buf bytes.Buffer
	if err := tr.Replay(NewJSONL(&buf)); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	var ev []int // indexes of event lines
	for i, l := range lines {
		if strings.HasPrefix(l, `{"type":"event"`) {
			ev = append(ev, i)
		}
	}
	a, b := ev[100], ev[900]
	var out []string
	for i, l := range lines {
		out = append(out, l)
		if i == a {
			out = append(out, l) // repeated line
		}
		if i == b {
			out = append(out, `{"type":"event","id":5,"op":`+"\n") // cut line
		}
	}
	rec := synth.NewRecorder()
	err := ReadJSONL(context.Background(), strings.NewReader(strings.Join(out, "")), "t.jsonl", rec)
	if err == nil || !strings.Contains(err.Error(), "repeated line") || !strings.Contains(err.Error(), "1 more damaged lines") {
		t.Fatalf("err %v", err)
	}
	got := rec.Trace()
	if len(got.Events) != len(tr.Events) || !got.Ended {
		t.Errorf("%d events read of %d (ended %v)", len(got.Events), len(tr.Events), got.Ended)
	}
	if n := got.Trailer.Stats.Get(event.CountLost, "jsonl lines damaged or repeated (skipped)"); n != 2 {
		t.Errorf("trailer counts %d damaged lines, want 2", n)
	}
}
