package output

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/tracefile"
)

// TestJSONLRoundTripsFixtures writes the .iot fixtures as jsonl and reads
// them back, by the fast reader and the generic one: every value, the
// boundary fixture's out-of-range sources, layers, ops, statuses, clocks,
// counter and fact kinds and ids of 2^64-1 included, comes back.
func TestJSONLRoundTripsFixtures(t *testing.T) {
	paths, err := filepath.Glob("../tracefile/testdata/v1/*.iot")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range paths {
		r, err := tracefile.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		want := synth.NewRecorder()
		err = r.Run(context.Background(), want)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// The boundary fixture gives each of its ids to three events;
		// jsonl readers skip an id seen again as a repeated line, so the
		// later ones get ids of their own.
		tr := want.Trace()
		seen := map[uint64]bool{}
		next := uint64(1000)
		for i := range tr.Events {
			for seen[tr.Events[i].ID] {
				tr.Events[i].ID = next
				next++
			}
			seen[tr.Events[i].ID] = true
		}
		var buf bytes.Buffer
		if err := tr.Replay(NewJSONL(&buf)); err != nil {
			t.Fatal(err)
		}
		for name, read := range map[string]func(context.Context, *bytes.Reader, *synth.Recorder) error{
			"fast": func(ctx context.Context, b *bytes.Reader, rec *synth.Recorder) error {
				return ReadJSONL(ctx, b, path, rec)
			},
			"generic": func(ctx context.Context, b *bytes.Reader, rec *synth.Recorder) error {
				return ReadJSONLGeneric(ctx, b, path, rec)
			},
		} {
			got := synth.NewRecorder()
			if err := read(context.Background(), bytes.NewReader(buf.Bytes()), got); err != nil {
				t.Errorf("%s, %s reader: %v", filepath.Base(path), name, err)
				continue
			}
			if err := synth.Compare(tr, got.Trace()); err != nil {
				t.Errorf("%s, %s reader: jsonl round trip differs:\n%v", filepath.Base(path), name, err)
			}
		}
	}
}
