package parquetfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// readBack writes tr as Parquet and reads every row and the metadata back.
func readBack(t *testing.T, tr *synth.Recorded, opts Options) ([]row, *parquet.File) {
	t.Helper()
	var buf bytes.Buffer
	if err := tr.Replay(New(&buf, opts)); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatalf("open the written file: %v", err)
	}
	r := parquet.NewGenericReader[row](bytes.NewReader(buf.Bytes()))
	defer r.Close()
	rows := make([]row, r.NumRows())
	n, err := r.Read(rows)
	if err != nil && n != len(rows) {
		t.Fatalf("read rows: %d of %d: %v", n, len(rows), err)
	}
	return rows, f
}

func TestEveryField(t *testing.T) {
	tr := synth.AllFieldsTrace()
	rows, f := readBack(t, tr, Options{})
	if len(rows) != len(tr.Events) {
		t.Fatalf("%d rows for %d events", len(rows), len(tr.Events))
	}
	h := &tr.Header
	for i, r := range rows {
		e := &tr.Events[i]
		if r.Host != h.Hostname || r.OS != h.OS || r.TraceID != TraceID(h) || r.TraceStartNS != h.StartWall || r.TraceStart != h.StartWall/1000 {
			t.Errorf("row %d: identity %q %q %q %d", i, r.Host, r.OS, r.TraceID, r.TraceStartNS)
		}
		if r.ID != int64(e.ID) || r.TimeNS != e.Time || r.TS != (h.StartWall+e.Time)/1000 || r.DurationNS != e.Duration || r.WaitNS != e.Wait {
			t.Errorf("row %d: id/times %d %d %d %d", i, r.ID, r.TimeNS, r.DurationNS, r.WaitNS)
		}
		if r.Op != e.Op.String() || r.Layer != e.Layer.String() || r.Native != e.Native || r.Status != e.Status.String() ||
			r.Code != int64(e.Code) || r.Failed != e.Failed() || r.Flags != e.Flags.String() {
			t.Errorf("row %d: op %s/%s %q %s %d %v %q", i, r.Layer, r.Op, r.Native, r.Status, r.Code, r.Failed, r.Flags)
		}
		if r.CPU != int64(e.CPU) || r.Pid != int64(e.Pid) || r.Tid != int64(e.Tid) || r.ProcStartNS != e.ProcStart || r.Comm != e.Comm {
			t.Errorf("row %d: who %d %d %d %d %q", i, r.CPU, r.Pid, r.Tid, r.ProcStartNS, r.Comm)
		}
		if r.Path != e.Path || r.Path2 != e.Path2 || r.FD == nil || *r.FD != e.FD || r.FileObject != e.FileObject ||
			r.FileKey != e.FileKey || r.Inode != e.Inode {
			t.Errorf("row %d: file %q %q %v %x %x %d", i, r.Path, r.Path2, r.FD, r.FileObject, r.FileKey, r.Inode)
		}
		if r.Offset == nil || *r.Offset != e.Offset || r.Size != e.Size || r.Bytes == nil || *r.Bytes != e.Bytes {
			t.Errorf("row %d: io %v %d %v", i, r.Offset, r.Size, r.Bytes)
		}
		if r.OpenFlags != int64(e.OpenFlags) || r.Mode != int64(e.Mode) || r.IOFlags != int64(e.IOFlags) || r.Info != int64(e.Info) ||
			r.Disposition != int32(e.Disposition) || r.Priority != int32(e.Priority) {
			t.Errorf("row %d: raw %d %d %d %d %d %d", i, r.OpenFlags, r.Mode, r.IOFlags, r.Info, r.Disposition, r.Priority)
		}
		if r.Dev != e.Dev.String() || r.Request != e.Request || r.Cause != int64(e.Cause) ||
			r.CausedIOs != int64(e.CausedIOs) || r.CausedBytes != int64(e.CausedBytes) || r.Note != e.Note {
			t.Errorf("row %d: block %q %x %d %d %d %q", i, r.Dev, r.Request, r.Cause, r.CausedIOs, r.CausedBytes, r.Note)
		}
		if (r.Sector != nil) != (e.Layer == event.LayerBlock) || (r.Sector != nil && *r.Sector != e.Sector) {
			t.Errorf("row %d (%s): sector %v, want %d", i, e.Layer, r.Sector, e.Sector)
		}
	}

	if v, _ := f.Lookup(MetaSchema); v != strconv.Itoa(SchemaVersion) {
		t.Errorf("schema version metadata %q", v)
	}
	if v, _ := f.Lookup(MetaEnd); v != strconv.FormatInt(tr.Trailer.End, 10) {
		t.Errorf("end metadata %q, want %d", v, tr.Trailer.End)
	}
	if v, _ := f.Lookup(MetaLayers); v != event.TracedLayers(&tr.Header, &tr.Trailer).String() || v == "" {
		t.Errorf("layers metadata %q, want %q", v, event.TracedLayers(&tr.Header, &tr.Trailer))
	}
	v, _ := f.Lookup(MetaStats)
	var cs []counter
	if err := json.Unmarshal([]byte(v), &cs); err != nil || len(cs) != len(tr.Trailer.Stats.Counters) {
		t.Fatalf("stats metadata %q: %v", v, err)
	}
	for _, c := range cs {
		found := false
		for _, w := range tr.Trailer.Stats.Counters {
			found = found || (w.Kind.String() == c.Kind && w.Name == c.Name && w.Value == c.Value)
		}
		if !found {
			t.Errorf("stats metadata has %+v, not in the trailer", c)
		}
	}
}

// TestNulls: the "none" values of event fields become nulls, and process
// and device facts fill cmdline, image and dev_name.
func TestNulls(t *testing.T) {
	var tr synth.Recorded
	tr.Header = event.Header{OS: "linux", Hostname: "h", StartWall: 1_700_000_000_123_456_789}
	tr.Facts = []event.Fact{
		{Kind: event.FactProcess, Pid: 7, ProcStart: -5, Name: "cc", Image: "/usr/bin/cc", Detail: "cc -c a.c"},
		{Kind: event.FactDevice, Dev: event.Device{Major: 8}, Name: "sda"},
	}
	e := event.New()
	e.ID, e.Layer, e.Op, e.Pid, e.ProcStart, e.Time = 1, event.LayerFile, event.OpStat, 7, -5, 10
	b := event.New()
	b.ID, b.Layer, b.Op, b.Dev, b.Sector, b.Time = 2, event.LayerBlock, event.OpBlockRead, event.Device{Major: 8}, 0, 20
	tr.Events = []event.Event{e, b}
	tr.Order = []synth.Item{{Kind: synth.ItemFact, Index: 0}, {Kind: synth.ItemFact, Index: 1}, {Kind: synth.ItemEvent, Index: 0}, {Kind: synth.ItemEvent, Index: 1}}
	tr.Began, tr.Ended = true, true
	rows, _ := readBack(t, &tr, Options{})
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[0]
	if r.FD != nil || r.Offset != nil || r.Bytes != nil || r.Sector != nil || r.Path != "" || r.Dev != "" {
		t.Errorf("none values not null: fd %v offset %v bytes %v sector %v path %q dev %q", r.FD, r.Offset, r.Bytes, r.Sector, r.Path, r.Dev)
	}
	if r.Cmdline != "cc -c a.c" || r.Image != "/usr/bin/cc" {
		t.Errorf("process columns %q %q", r.Cmdline, r.Image)
	}
	if r.TS != 1_700_000_000_123_456 {
		t.Errorf("ts %d", r.TS)
	}
	if b := rows[1]; b.Sector == nil || *b.Sector != 0 || b.Dev != "8:0" || b.DevName != "sda" {
		t.Errorf("block row: sector %v dev %q name %q", b.Sector, b.Dev, b.DevName)
	}
}

// TestRowGroupsStream: rows go out in row groups as they fill, not at the
// end: memory stays bounded by a row group.
func TestRowGroupsStream(t *testing.T) {
	tr := generate(t, 5000)
	var buf countingWriter
	w := New(&buf, Options{RowGroupRows: 1000})
	if err := w.Begin(&tr.Header); err != nil {
		t.Fatal(err)
	}
	for i := range tr.Events[:3500] {
		if err := w.Event(&tr.Events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if buf.n < 1000 {
		t.Errorf("after 3,500 rows with 1,000-row groups only %d bytes were written", buf.n)
	}
	if err := w.End(&tr.Trailer); err != nil {
		t.Fatal(err)
	}
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// TestWriteError: a failing writer's error is returned, with the row count.
func TestWriteError(t *testing.T) {
	tr := generate(t, 5000)
	err := tr.Replay(New(failingWriter{}, Options{RowGroupRows: 1000}))
	if err == nil || !errors.Is(err, errFull) {
		t.Fatalf("err = %v, want the writer's error", err)
	}
}

var errFull = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errFull }

func TestTraceIDStable(t *testing.T) {
	h := event.Header{Hostname: "a", OS: "linux", StartWall: 1}
	h2 := h
	if TraceID(&h) != TraceID(&h2) || len(TraceID(&h)) != 16 {
		t.Fatal("trace id not stable")
	}
	h2.StartWall = 2
	if TraceID(&h) == TraceID(&h2) {
		t.Error("two traces with different starts share an id")
	}
}

func generate(t *testing.T, events int) *synth.Recorded {
	t.Helper()
	rec := synth.NewRecorder()
	if err := synth.Generate(synth.Options{Seed: 1, Events: events}, rec); err != nil {
		t.Fatal(err)
	}
	return rec.Trace()
}

// TestSchemaMatchesModel: the schema the writer declares is the one the
// tests' row model describes (names, order, types, optionality).
func TestSchemaMatchesModel(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, Options{})
	if err := w.Begin(&event.Header{Hostname: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := w.End(&event.Trailer{}); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	strip := func(s string) string { return s[strings.Index(s, "{"):] }
	got, want := strip(f.Schema().String()), strip(parquet.SchemaOf(row{}).String())
	if got != want {
		t.Errorf("schema written:\n%s\nmodel:\n%s", got, want)
	}
}
