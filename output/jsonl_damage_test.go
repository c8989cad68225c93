package output

import (
	"bytes"
	"context"
	"errors"
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
	// The cut line may have held an event: lost. The repeated one holds
	// nothing that was not read: counted, not as lost.
	if n := got.Trailer.Stats.Get(event.CountLost, StatJSONLDamaged); n != 1 {
		t.Errorf("trailer counts %d damaged lines lost, want 1", n)
	}
	if n := got.Trailer.Stats.Get(event.CountInfo, StatJSONLRepeated); n != 1 {
		t.Errorf("trailer counts %d repeated lines, want 1", n)
	}
	var de *JSONLDamageError
	if !errors.As(err, &de) || de.Stop != nil || de.Count != 2 || de.Lost != 1 || len(de.Skipped) != 2 || !de.Skipped[0].Lossless ||
		de.Skipped[0].Line != a+2 || de.Skipped[1].Line != b+3 || de.Bytes != int64(len(lines[a])+len(out[b+2])) {
		t.Errorf("error %#v: want the two lines read past, the first a repeat", err)
	}
}

// TestJSONLStrayTrailer: a trailer line in the middle of a trace (lines
// spliced) does not end it: the lines after it are read, the stray
// trailer is damage that cost nothing, the last trailer's counts are
// kept; a second header after a trailer still stops the reading.
func TestJSONLStrayTrailer(t *testing.T) {
	tr := synth.Trace(synth.Options{Seed: 9, Events: 1200})
	var buf bytes.Buffer
	if err := tr.Replay(NewJSONL(&buf)); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
	trailer := lines[len(lines)-1]
	at := len(lines) * 2 / 5
	var out []string
	out = append(out, lines[:at]...)
	out = append(out, trailer+"\n")
	out = append(out, lines[at:]...)
	data := strings.Join(out, "")
	rec := synth.NewRecorder()
	err := ReadJSONL(context.Background(), strings.NewReader(data), "t.jsonl", rec)
	var de *JSONLDamageError
	if !errors.As(err, &de) || de.Stop != nil || de.Count != 1 || de.Lost != 0 || de.Skipped[0].Line != at+1 ||
		de.Skipped[0].Offset != int64(len(strings.Join(lines[:at], ""))) || !strings.Contains(err.Error(), "a trailer before the end of the trace") {
		t.Fatalf("err %v, want the stray trailer on line %d read past", err, at+1)
	}
	got := rec.Trace()
	if len(got.Events) != len(tr.Events) || !got.Ended {
		t.Errorf("%d events read of %d (ended %v)", len(got.Events), len(tr.Events), got.Ended)
	}
	if got.Trailer.End != tr.Trailer.End || got.Trailer.Stats.Total(event.CountLost) != tr.Trailer.Stats.Total(event.CountLost) {
		t.Errorf("trailer %+v, want the source's %+v", got.Trailer, tr.Trailer)
	}
	if n := got.Trailer.Stats.Get(event.CountInfo, StatJSONLStrayTrailers); n != 1 {
		t.Errorf("%d stray trailers counted, want 1", n)
	}
	// Another trace's header after the trailer stops reading.
	rec = synth.NewRecorder()
	err = ReadJSONL(context.Background(), strings.NewReader(buf.String()+lines[0]), "t.jsonl", rec)
	if !errors.As(err, &de) || de.Stop == nil || !strings.Contains(err.Error(), errAfterTrailer) {
		t.Errorf("a second header after the trailer: %v", err)
	}
}

// TestJSONLInvalidUTF8RoundTrip: names that are not valid UTF-8 come back
// byte for byte (KEY_b64 beside the U+FFFD rendering).
func TestJSONLInvalidUTF8RoundTrip(t *testing.T) {
	bad := "/tmp/caf\xe9-\xff\xfe.log"
	var buf bytes.Buffer
	w := NewJSONL(&buf)
	h := event.Header{OS: "linux", Command: "cat \xe9", Hostname: "h\xff"}
	w.Begin(&h)
	w.Fact(&event.Fact{Kind: event.FactName, Space: event.SpaceFD, Pid: 1, Handle: 3, Name: bad})
	w.Fact(&event.Fact{Kind: event.FactProcess, Pid: 1, Name: "c\xe9t", Image: "/bin/\xff", Detail: "a\xfeb"})
	e := event.New()
	e.ID, e.Layer, e.Op, e.Pid, e.Comm, e.Path, e.Path2, e.Note, e.Native = 1, event.LayerFile, event.OpRename, 1, "c\xe9t", bad, bad+"2", "n\xff", "renameat"
	w.Event(&e)
	w.End(&event.Trailer{})
	if !strings.Contains(buf.String(), `"path_b64":`) || !(strings.Contains(buf.String(), "\ufffd") || strings.Contains(buf.String(), `\ufffd`)) {
		t.Fatalf("no b64 field or no U+FFFD:\n%s", buf.String())
	}
	rec := synth.NewRecorder()
	if err := ReadJSONL(context.Background(), &buf, "t", rec); err != nil {
		t.Fatal(err)
	}
	got := rec.Trace()
	ge := got.Events[0]
	if ge.Path != bad || ge.Path2 != bad+"2" || ge.Comm != "c\xe9t" || ge.Note != "n\xff" {
		t.Errorf("event %q %q %q %q", ge.Path, ge.Path2, ge.Comm, ge.Note)
	}
	if got.Facts[0].Name != bad || got.Facts[1].Image != "/bin/\xff" || got.Facts[1].Detail != "a\xfeb" || got.Facts[1].Name != "c\xe9t" {
		t.Errorf("facts %+v", got.Facts)
	}
	if got.Header.Command != "cat \xe9" || got.Header.Hostname != "h\xff" {
		t.Errorf("header %q %q", got.Header.Command, got.Header.Hostname)
	}
}
