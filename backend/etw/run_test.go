package etw

import (
	"context"
	"path/filepath"
	"reflect"
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
	run := func(t *testing.T, path string, opts etl.Options, kept bool) (*sink, etl.CacheStats) {
		t.Helper()
		r, err := etl.Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		src := FileRecords(r)
		if !kept {
			src = eachOnly{src}
		}
		var out sink
		if err := Run(context.Background(), src, Options{}, &out); err != nil {
			t.Fatal(err)
		}
		return &out, r.CacheStats()
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, _ := run(t, f, etl.Options{CacheBudget: -1}, false)
			var total int64
			r, err := etl.Open(f, etl.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range r.Buffers() {
				total += int64(b.Used())
			}
			r.Close()
			for _, c := range []struct {
				name   string
				budget int64
				kept   bool
			}{
				{"cache", 0, false},
				{"kept", -1, true},
				{"cache+kept", 0, true},
				{"third of the file", total / 3, true},
				{"smaller than a buffer", 100, true},
			} {
				got, cs := run(t, f, etl.Options{CacheBudget: c.budget}, c.kept)
				if c.budget > 0 && cs.Allocated > c.budget {
					t.Errorf("%s: cache allocated %d bytes, budget %d", c.name, cs.Allocated, c.budget)
				}
				if c.budget == 0 && cs.Bytes != total {
					t.Errorf("%s: cache holds %d bytes of %d", c.name, cs.Bytes, total)
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
// with or without the filter.
func TestEachKeptFirstRecord(t *testing.T) {
	r, err := etl.Open(filepath.Join(testenv.ETLDir(t), fixtureFiltrace), etl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t0 := r.Header().HeaderTimestamp
	var first []int64
	err = FileRecords(r).(keptRecords).EachKept(context.Background(), func(*record.Record) bool { return false },
		func(rec *record.Record) error { first = append(first, rec.Timestamp); return nil })
	if err != nil {
		t.Fatal(err)
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
