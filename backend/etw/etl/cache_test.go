package etl

import (
	"bytes"
	"context"
	"reflect"
	"strconv"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// flatRecord is a record with its payloads copied, to compare passes.
type flatRecord struct {
	rec  record.Record
	data []byte
	ext  []record.ExtItem
}

// flatten copies rec with its payloads.
func flatten(rec *record.Record) flatRecord {
	f := flatRecord{rec: *rec, data: bytes.Clone(rec.UserData)}
	for _, e := range rec.Ext {
		f.ext = append(f.ext, record.ExtItem{Type: e.Type, Data: bytes.Clone(e.Data)})
	}
	f.rec.UserData, f.rec.Ext = nil, nil
	return f
}

func readFlat(t *testing.T, r *Reader, keep func(*record.Record) bool) ([]flatRecord, event.Stats) {
	t.Helper()
	var out []flatRecord
	fn := func(rec *record.Record) error {
		out = append(out, flatten(rec))
		return nil
	}
	var st event.Stats
	var err error
	if keep == nil {
		st, err = r.Read(context.Background(), fn)
	} else {
		st, err = r.ReadKept(context.Background(), keep, fn)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

func sameRecords(t *testing.T, what string, want, got []flatRecord) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			t.Fatalf("%s: record %d = %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

// TestCacheBudget reads the largest fixture in several passes with
// budgets from none to more than the file: every pass delivers exactly
// the records and counters of a reader without cache, the cache never
// allocates more than its budget, and with room for the whole file the
// passes after the first read nothing.
func TestCacheBudget(t *testing.T) {
	base := openFixture(t, largestFixture, Options{CacheBudget: -1})
	want, wantStats := readFlat(t, base, nil)
	var total int64
	for _, b := range base.Buffers() {
		total += int64(b.Used())
	}
	if cs := base.CacheStats(); cs != (CacheStats{}) {
		t.Fatalf("cache off: %+v", cs)
	}
	for _, budget := range []int64{0, total / 3, 70000, 100} {
		r := openFixture(t, largestFixture, Options{CacheBudget: budget})
		for pass := 1; pass <= 2; pass++ {
			got, st := readFlat(t, r, nil)
			sameRecords(t, "budget "+strconv.FormatInt(budget, 10), want, got)
			if !reflect.DeepEqual(st.Sorted(), wantStats.Sorted()) {
				t.Fatalf("budget %d pass %d: stats %v, want %v", budget, pass, st.Sorted(), wantStats.Sorted())
			}
		}
		cs := r.CacheStats()
		limit := budget
		if budget == 0 {
			limit = DefaultCacheBudget
		}
		if cs.Allocated > limit || cs.Bytes > cs.Allocated || cs.Budget != limit {
			t.Fatalf("budget %d: %+v", budget, cs)
		}
		if limit >= total+slabSize && (cs.Bytes != total || cs.Buffers != len(r.Buffers())) {
			t.Fatalf("budget %d: %d of %d bytes cached (%+v)", budget, cs.Bytes, total, cs)
		}
		if budget == total/3 && (cs.Bytes == 0 || cs.Bytes >= total) {
			t.Fatalf("budget %d: %d of %d bytes cached, want part", budget, cs.Bytes, total)
		}
		if budget == 100 && cs.Buffers != 0 {
			t.Fatalf("budget 100: %d buffers cached", cs.Buffers)
		}
		r.Close()
		if cs := r.CacheStats(); cs.Bytes != 0 || cs.Allocated != 0 {
			t.Fatalf("after Close: %+v", cs)
		}
	}
}

// TestReadKept checks that a filtered pass delivers, in the same order,
// exactly the records of a full pass that the filter accepts, and counts
// every record read.
func TestReadKept(t *testing.T) {
	for _, opts := range []Options{{}, {CacheBudget: -1}, {Order: OrderFile}} {
		r := openFixture(t, largestFixture, opts)
		all, allStats := readFlat(t, r, nil)
		keep := func(rec *record.Record) bool { return rec.Group == record.GroupFileIo || rec.Kind == record.KindEvent }
		var want []flatRecord
		for _, f := range all {
			if keep(&f.rec) {
				want = append(want, f)
			}
		}
		if len(want) == 0 || len(want) == len(all) {
			t.Fatalf("filter keeps %d of %d records", len(want), len(all))
		}
		got, st := readFlat(t, r, keep)
		sameRecords(t, "kept", want, got)
		for _, name := range []string{"etl: records", "etl: buffers", "etl: bytes (decompressed)", "etl: records SYSTEM64"} {
			if a, b := st.Get(event.CountInfo, name), allStats.Get(event.CountInfo, name); a != b || a == 0 {
				t.Errorf("%s: %d in the filtered pass, %d in the full one", name, a, b)
			}
		}
	}
}
