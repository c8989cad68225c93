package etw

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// eachOnly hides EachKept: the first pass then sees every record.
type eachOnly struct{ Records }

// TestRunSameOutput checks that the speed-ups of the file pipeline do not
// change its output: with and without the reader's buffer cache (also
// with budgets smaller than the file, so that part of the file is read
// again), and with or without the first pass's filter before the merge,
// every fixture gives the same header, events, facts and trailer.
func TestRunSameOutput(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.ETLDir(t), "*.etl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ETL fixtures: %v", err)
	}
	run := func(t *testing.T, path string, opts etl.Options, kept, whole bool, runs int) (*sink, etl.CacheStats) {
		t.Helper()
		r, err := etl.Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		src := FileRecords(r)
		if whole {
			r.Compact(nil) // the cache keeps whole buffers
		}
		if !kept {
			src = eachOnly{src}
		}
		var out *sink
		for i := 0; i < runs; i++ {
			out = &sink{}
			if err := Run(context.Background(), src, Options{UndecodedDetail: true}, out); err != nil {
				t.Fatal(err)
			}
		}
		return out, r.CacheStats()
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, _ := run(t, f, etl.Options{CacheBudget: -1}, false, false, 1)
			var total int64
			r, err := etl.Open(f, etl.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range r.Buffers() {
				total += int64(b.Used())
			}
			r.Close()
			// Unless whole is set, the cache keeps the buffers compacted
			// to the records the second pass decodes (FileRecords).
			for _, c := range []struct {
				name   string
				budget int64
				kept   bool
				whole  bool
				runs   int
			}{
				{"cache", 0, false, false, 1},
				{"kept", -1, true, false, 1},
				{"cache+kept", 0, true, false, 1},
				{"whole buffers cached", 0, true, true, 1},
				{"third of the file", total / 3, true, false, 1},
				{"third of the file, whole", total / 3, true, true, 1},
				{"smaller than a buffer", 100, true, false, 1},
				{"second run on the reader", 0, true, false, 2},
			} {
				got, cs := run(t, f, etl.Options{CacheBudget: c.budget}, c.kept, c.whole, c.runs)
				if c.budget > 0 && cs.Allocated > c.budget {
					t.Errorf("%s: cache allocated %d bytes, budget %d", c.name, cs.Allocated, c.budget)
				}
				if c.budget == 0 && cs.Bytes != total {
					t.Errorf("%s: cache holds %d bytes of %d", c.name, cs.Bytes, total)
				}
				if c.budget == 0 && !c.whole && cs.Compacted == 0 {
					t.Errorf("%s: no buffer compacted: %+v", c.name, cs)
				}
				sameOutput(t, c.name, want, got)
			}
		})
	}
}

func sameOutput(t *testing.T, name string, want, got *sink) {
	t.Helper()
	if !reflect.DeepEqual(want.hdr, got.hdr) {
		t.Errorf("%s: header %+v, want %+v", name, got.hdr, want.hdr)
	}
	if len(want.events) != len(got.events) || len(want.facts) != len(got.facts) {
		t.Fatalf("%s: %d events and %d facts, want %d and %d", name, len(got.events), len(got.facts), len(want.events), len(want.facts))
	}
	for i := range want.events {
		if !reflect.DeepEqual(want.events[i], got.events[i]) {
			t.Fatalf("%s: event %d = %+v, want %+v", name, i, got.events[i], want.events[i])
		}
	}
	for i := range want.facts {
		if !reflect.DeepEqual(want.facts[i], got.facts[i]) {
			t.Fatalf("%s: fact %d = %+v, want %+v", name, i, got.facts[i], want.facts[i])
		}
	}
	if !reflect.DeepEqual(want.trailer.Stats.Sorted(), got.trailer.Stats.Sorted()) || want.trailer.End != got.trailer.End {
		t.Errorf("%s: trailer %+v, want %+v", name, got.trailer, want.trailer)
	}
}

// TestEachKeptFirstRecord checks that records before the header record
// reach the first pass whatever the filter says: a stream whose first
// record in time order is not the EventTrace header is counted as such
// with or without the filter. The filter sees them too, as every record.
func TestEachKeptFirstRecord(t *testing.T) {
	r, err := etl.Open(filepath.Join(testenv.ETLDir(t), fixtureFiltrace), etl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t0 := r.Header().HeaderTimestamp
	var first []int64
	seen := 0
	err = FileRecords(r).(keptRecords).EachKept(context.Background(), func(*record.Record) bool { seen++; return false },
		func(rec *record.Record) error { first = append(first, rec.Timestamp); return nil })
	if err != nil {
		t.Fatal(err)
	}
	// keep sees every record, those passed on whatever it says too.
	all := 0
	if err := FileRecords(r).Each(context.Background(), func(*record.Record) error { all++; return nil }); err != nil {
		t.Fatal(err)
	}
	if seen != all {
		t.Errorf("keep saw %d records of %d", seen, all)
	}
	if len(first) == 0 {
		t.Fatal("the header record was not delivered")
	}
	for _, ts := range first {
		if ts > t0 {
			t.Fatalf("record at %d after time 0 (%d) delivered though keep rejects everything", ts, t0)
		}
	}
	var d sink
	if err := Run(context.Background(), FileRecords(r), Options{}, &d); err != nil {
		t.Fatal(err)
	}
	if d.trailer.Stats.Get(event.CountDropped, StatNoHeader) != 0 {
		t.Fatal("header not found first")
	}
}

// TestRunSameOutputDamaged is TestRunSameOutput on damaged copies of two
// fixtures (corrupt compressed data in some buffers of a compressed file,
// damaged records in an uncompressed one, both cut short): the events,
// the trailer and the error are the same whether the cache keeps buffers
// compacted, whole or not at all.
func TestRunSameOutputDamaged(t *testing.T) {
	for _, c := range []struct {
		file, damage string
	}{
		{fixtureWin8, "compressed data"},
		{"airbus_win10_shutdown_perfdiag_systemlogger_kernel.etl", "the rest of the buffer"},
	} {
		t.Run(c.file, func(t *testing.T) { runSameOutputDamaged(t, c.file, c.damage) })
	}
}

func runSameOutputDamaged(t *testing.T, file, damage string) {
	orig, err := os.ReadFile(filepath.Join(testenv.ETLDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	r0, err := etl.NewReader(bytes.NewReader(orig), int64(len(orig)), etl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bufs := r0.Buffers()
	// The records of each buffer, to damage one in the middle.
	recs := make([][]int64, len(bufs))
	if _, err := r0.Read(context.Background(), func(rec *record.Record) error {
		recs[rec.Buffer] = append(recs[rec.Buffer], rec.FileOffset)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Clone(orig)
	for i := 7; i < len(bufs); i += 13 {
		b := bufs[i]
		if !b.Compressed() && len(recs[i]) > 0 {
			// Clear the header flag of a record: the rest of the buffer
			// is skipped.
			data[recs[i][len(recs[i])/2]+3] &^= 0x80
			continue
		}
		// Damage compressed data: it fails to decompress.
		at := b.FileOffset + etl.BufferHeaderSize + int64(i*977)%(int64(b.BufferSize)-etl.BufferHeaderSize)
		data[at] ^= 0x5A
		data[at+1] ^= 0xFF
	}
	data = data[:len(data)-int(bufs[len(bufs)-1].BufferSize)/2]
	run := func(budget int64, whole bool) (*sink, string) {
		r, err := etl.NewReader(bytes.NewReader(data), int64(len(data)), etl.Options{CacheBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		src := FileRecords(r)
		if whole {
			r.Compact(nil)
		}
		var out sink
		err = Run(context.Background(), src, Options{UndecodedDetail: true}, &out)
		if err == nil {
			t.Fatal("no error from a damaged file")
		}
		return &out, err.Error()
	}
	want, wantErr := run(-1, false)
	if len(want.events)+len(want.facts) == 0 {
		t.Fatal("nothing from the damaged file")
	}
	if !strings.Contains(wantErr, damage) {
		t.Fatalf("the damage is not of the kind wanted (%s): %s", damage, wantErr)
	}
	for _, c := range []struct {
		name   string
		budget int64
		whole  bool
	}{
		{"compacted", 0, false},
		{"whole", 0, true},
		{"a fifth of the file, compacted", int64(len(data)) / 5, false},
	} {
		got, gotErr := run(c.budget, c.whole)
		if gotErr != wantErr {
			t.Errorf("%s: error %q, want %q", c.name, gotErr, wantErr)
		}
		sameOutput(t, c.name, want, got)
	}
}
