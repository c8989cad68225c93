package output

import (
	"bytes"
	"context"
	"encoding/csv"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
)

// TestJSONLRoundTripsSynth writes whole synthetic traces (and the trace
// with every field set) as jsonl and reads them back: every header, event,
// fact and trailer field, in order.
func TestJSONLRoundTripsSynth(t *testing.T) {
	traces := map[string]*synth.Recorded{
		"all fields": synth.AllFieldsTrace(),
		"stacks":     synth.StacksTrace(),
		"linux":      synth.Trace(synth.Options{Events: 3000, Seed: 1}),
		"windows":    synth.Trace(synth.Options{OS: "windows", Events: 3000, Seed: 2}),
	}
	for name, want := range traces {
		var buf bytes.Buffer
		if err := want.Replay(NewJSONL(&buf)); err != nil {
			t.Fatal(err)
		}
		rec := synth.NewRecorder()
		if err := ReadJSONL(context.Background(), &buf, name, rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := synth.Compare(want, rec.Trace()); err != nil {
			t.Errorf("%s: jsonl round trip differs:\n%v", name, err)
		}
	}
}

// TestTextAndCSVOneLinePerEvent renders every synthetic trace as text and
// csv: exactly one text line and one csv record per event, whatever the
// paths, names and notes hold (newlines, quotes, commas, unicode).
func TestTextAndCSVOneLinePerEvent(t *testing.T) {
	for name, tr := range map[string]*synth.Recorded{
		"all fields": synth.AllFieldsTrace(),
		"stacks":     synth.StacksTrace(),
		"windows":    synth.Trace(synth.Options{OS: "windows", Events: 2000, Seed: 5}),
		"linux":      synth.Trace(synth.Options{Events: 2000, Seed: 5}),
	} {
		var text, csvOut bytes.Buffer
		if err := tr.Replay(NewText(&text, Options{Facts: true})); err != nil {
			t.Fatal(err)
		}
		if err := tr.Replay(NewCSV(&csvOut, Options{})); err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, l := range bytes.Split(text.Bytes(), []byte("\n")) {
			if len(l) > 0 && l[0] != '#' {
				lines++
			}
		}
		if lines != len(tr.Events) {
			t.Errorf("%s: %d text event lines for %d events", name, lines, len(tr.Events))
		}
		rows, err := csv.NewReader(&csvOut).ReadAll()
		if err != nil {
			t.Fatalf("%s: csv: %v", name, err)
		}
		if len(rows) != len(tr.Events)+1 {
			t.Errorf("%s: %d csv rows for %d events", name, len(rows)-1, len(tr.Events))
		}
		for i, e := range tr.Events {
			if i+1 < len(rows) && (rows[i+1][10] != e.Path || rows[i+1][3] != e.Comm || rows[i+1][0] != itoa(e.ID)) {
				t.Errorf("%s: csv row %d = %q, want path %q comm %q", name, i, rows[i+1], e.Path, e.Comm)
				break
			}
		}
	}
}
