package output

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/tracefile"
)

// TestJSONLRoundTripsFixtures writes the .iot fixtures as jsonl and reads
// them back, by the fast reader and the generic one: every value, the
// boundary fixture's out-of-range sources, layers, ops, statuses, clocks,
// counter and fact kinds and ids of 2^64-1 (written as strings) included,
// comes back.
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
		// The boundary fixture gives each of its ids to three events:
		// they are three lines, not a line repeated.
		tr := want.Trace()
		var buf bytes.Buffer
		if err := tr.Replay(NewJSONL(&buf)); err != nil {
			t.Fatal(err)
		}
		// ids and causes from 2^53 on are strings: JSON readers that
		// hold numbers as doubles would round them.
		for _, m := range regexp.MustCompile(`"(id|cause)":("?)(\d+)`).FindAllSubmatch(buf.Bytes(), -1) {
			if v, err := strconv.ParseUint(string(m[3]), 10, 64); err != nil || (v >= 1<<53) != (len(m[2]) == 1) {
				t.Errorf("%s: %s", filepath.Base(path), m[0])
			}
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

// TestTextLongIDs: an id or cause longer than the id column (13 digits and
// more, as in traces from before ids were kept below 2^53) shows as "#…"
// and its last 10 digits, and the columns after it stay where they are.
func TestTextLongIDs(t *testing.T) {
	var buf bytes.Buffer
	tx := NewText(&buf, Options{})
	if err := tx.Begin(&event.Header{OS: "linux"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{5, 999_999_999_999, 1_000_000_000_000, 1<<64 - 1} {
		e := event.New()
		e.ID, e.Layer, e.Op, e.Comm, e.Pid, e.Tid = id, event.LayerBlock, event.OpBlockRead, "cc", 1, 1
		e.Cause = id
		if err := tx.Event(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.End(&event.Trailer{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	col := -1
	for _, l := range lines {
		if !strings.Contains(l, " cc[1/1]") {
			continue
		}
		at := utf8.RuneCountInString(l[:strings.Index(l, " cc[1/1]")])
		if col < 0 {
			col = at
		} else if at != col {
			t.Errorf("process column at %d, not %d:\n%s", at, col, buf.String())
		}
	}
	for _, want := range []string{"   #5 ", "#999999999999 ", " #…0000000000 ", " #…3709551615 ", "← #…3709551615"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no %q in\n%s", want, buf.String())
		}
	}
}
