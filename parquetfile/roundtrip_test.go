package parquetfile

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// TestRoundTripEveryRow writes generated Linux and Windows traces (process
// and device facts interleaved with events, several row groups, the last
// one partial), reads the file back with parquet-go's reader, and checks
// every column of every row against the source events. The expected row is
// built here from the events and the facts seen so far, independently of
// the writer's code, so that a faster writer can be checked against it.
func TestRoundTripEveryRow(t *testing.T) {
	for _, osName := range []string{"linux", "windows"} {
		t.Run(osName, func(t *testing.T) {
			rec := synth.NewRecorder()
			if err := synth.Generate(synth.Options{Seed: 3, Events: 30_000, OS: osName}, rec); err != nil {
				t.Fatal(err)
			}
			tr := rec.Trace()
			for i := range tr.Events {
				e := &tr.Events[i]
				e.Stack = uint64(i % 5)
				if e.Op == event.OpRead && e.Bytes > 3 && i%3 == 0 {
					// page-cache provenance, one part possibly 0
					b := uint64(e.Bytes)
					e.ReadCached, e.ReadAhead, e.ReadDisk = b/4, b/4, uint64(i%2)*b/4
					e.ReadWaited, e.ReadAheadFrom = b-e.ReadCached-e.ReadAhead-e.ReadDisk, e.ID-1
				}
			}
			var buf bytes.Buffer
			if err := tr.Replay(New(&buf, Options{RowGroupRows: 7_000, Stack: testStack})); err != nil {
				t.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.RowGroups()); n != 5 {
				t.Errorf("%d row groups for %d rows of 7,000 a group, want 5", n, len(tr.Events))
			}
			r := parquet.NewGenericReader[row](bytes.NewReader(buf.Bytes()))
			defer r.Close()
			got := make([]row, r.NumRows())
			if n, err := r.Read(got); n != len(got) {
				t.Fatalf("read %d of %d rows: %v", n, len(got), err)
			}
			want := expectedRows(tr)
			if len(got) != len(want) {
				t.Fatalf("%d rows for %d events", len(got), len(want))
			}
			bad := 0
			for i := range want {
				if d := diffRow(&got[i], &want[i]); d != "" {
					bad++
					if bad <= 10 {
						t.Errorf("row %d (event %d, %s): %s", i, tr.Events[i].ID, tr.Events[i].Op, d)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d rows differ", bad, len(want))
			}
		})
	}
}

// expectedRows is the test's own model of the schema (docs/parquet.md):
// one row per event, the "none" values null, cmdline and image from the
// last process fact of the event's process, dev_name from device facts.
func expectedRows(tr *synth.Recorded) []row {
	h := &tr.Header
	type pinfo struct{ image, cmdline string }
	procs := map[event.ProcessKey]pinfo{}
	devs := map[event.Device]string{}
	var out []row
	for _, it := range tr.Order {
		if it.Kind == synth.ItemFact {
			f := &tr.Facts[it.Index]
			switch {
			case f.Kind == event.FactProcess && !f.End:
				k := event.ProcessKey{Pid: f.Pid, Start: f.ProcStart}
				p := procs[k]
				if f.Image != "" {
					p.image = f.Image
				}
				if f.Detail != "" {
					p.cmdline = f.Detail
				}
				procs[k] = p
			case f.Kind == event.FactDevice && !f.End && f.Name != "":
				devs[f.Dev] = f.Name
			}
			continue
		}
		e := &tr.Events[it.Index]
		p := procs[event.ProcessKey{Pid: e.Pid, Start: e.ProcStart}]
		r := row{
			Host: h.Hostname, OS: h.OS, OSVersion: h.OSVersion, TraceID: TraceID(h),
			TraceStart: floorDiv(h.StartWall, 1000), TraceStartNS: h.StartWall, Source: h.Source.String(),
			ID: int64(e.ID), TimeNS: e.Time, TS: floorDiv(h.StartWall+e.Time, 1000),
			DurationNS: e.Duration, WaitNS: e.Wait,
			Layer: e.Layer.String(), Op: e.Op.String(), Native: e.Native, Status: e.Status.String(),
			Code: int64(e.Code), Failed: e.Failed(),
			CPU: int64(e.CPU), Pid: int64(e.Pid), Tid: int64(e.Tid), ProcStartNS: e.ProcStart,
			Comm: e.Comm, Image: p.image, Cmdline: p.cmdline,
			Path: e.Path, Path2: e.Path2,
			FileObject: e.FileObject, FileKey: e.FileKey, Inode: e.Inode, Size: e.Size,
			OpenFlags: int64(e.OpenFlags), Mode: int64(e.Mode), IOFlags: int64(e.IOFlags), Info: int64(e.Info),
			Disposition: int32(e.Disposition), Priority: int32(e.Priority),
			Request: e.Request, Cause: int64(e.Cause), CausedIOs: int64(e.CausedIOs), CausedBytes: int64(e.CausedBytes),
			Note: e.Note, Stack: expectedStack(e),
		}
		if e.ReadKnown() != 0 {
			v := [4]int64{int64(e.ReadCached), int64(e.ReadAhead), int64(e.ReadDisk), int64(e.ReadWaited)}
			r.ReadCached, r.ReadAhead, r.ReadDisk, r.ReadWaited = &v[0], &v[1], &v[2], &v[3]
		}
		r.ReadAheadFrom = int64(e.ReadAheadFrom)
		if e.Flags != 0 {
			r.Flags = e.Flags.String()
		}
		if e.FD >= 0 {
			fd := e.FD
			r.FD = &fd
		}
		if e.Offset >= 0 {
			o := e.Offset
			r.Offset = &o
		}
		if e.Bytes >= 0 {
			b := e.Bytes
			r.Bytes = &b
		}
		if !e.Dev.IsZero() {
			r.Dev = e.Dev.String() // "8:0" on Linux, "disk1" on Windows
			r.DevName = devs[e.Dev]
		}
		if e.Layer == event.LayerBlock {
			s := e.Sector
			r.Sector = &s
		}
		out = append(out, r)
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// diffRow names the columns where got and want differ ("" when none),
// comparing nullable columns by null-ness and value.
func diffRow(got, want *row) string {
	g, w := *got, *want
	var d string
	ptr := func(name, gs, ws string) {
		if gs != ws {
			d += fmt.Sprintf(" %s=%s want %s;", name, gs, ws)
		}
	}
	ptr("fd", show(g.FD), show(w.FD))
	ptr("offset", show(g.Offset), show(w.Offset))
	ptr("bytes", show(g.Bytes), show(w.Bytes))
	ptr("sector", show(g.Sector), show(w.Sector))
	ptr("read_cached", show(g.ReadCached), show(w.ReadCached))
	ptr("read_ahead", show(g.ReadAhead), show(w.ReadAhead))
	ptr("read_disk", show(g.ReadDisk), show(w.ReadDisk))
	ptr("read_waited", show(g.ReadWaited), show(w.ReadWaited))
	g.ReadCached, w.ReadCached, g.ReadAhead, w.ReadAhead, g.ReadDisk, w.ReadDisk, g.ReadWaited, w.ReadWaited = nil, nil, nil, nil, nil, nil, nil, nil
	if !reflect.DeepEqual(g.Stack, w.Stack) {
		d += fmt.Sprintf(" stack=%q (nil %v) want %q (nil %v);", g.Stack, g.Stack == nil, w.Stack, w.Stack == nil)
	}
	g.FD, w.FD, g.Offset, w.Offset, g.Bytes, w.Bytes, g.Sector, w.Sector = nil, nil, nil, nil, nil, nil, nil, nil
	g.Stack, w.Stack = nil, nil
	gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
	for i := 0; i < gv.NumField(); i++ {
		if gv.Type().Field(i).Name == "Stack" {
			continue
		}
		if a, b := gv.Field(i).Interface(), wv.Field(i).Interface(); a != b {
			d += fmt.Sprintf(" %s=%v want %v;", gv.Type().Field(i).Name, a, b)
		}
	}
	return d
}

// testStack names stacks for the round trip: none for stack 0 (no
// stack), a null list for 1 (a stack the namer does not know), an empty
// list for 2, and frames that repeat across events (the dictionary) or
// not (the id) for the others.
func testStack(e *event.Event) []string {
	switch e.Stack {
	case 1:
		return nil
	case 2:
		return []string{}
	case 3:
		return []string{"[k] vfs_read", "read", "main (a.c:7)"}
	}
	return []string{fmt.Sprintf("f%d", e.ID), "[k] vfs_write"}
}

// expectedStack is the stack column testStack gives e.
func expectedStack(e *event.Event) []string {
	if e.Stack == 0 {
		return nil
	}
	return testStack(e)
}

func show[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}
