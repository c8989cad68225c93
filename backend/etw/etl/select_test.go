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

// readSelected reads a pass selected with sel: the records delivered,
// copied, and the records reported as left out, by kind.
func readSelected(t *testing.T, r *Reader, sel *Selection) ([]flatRecord, map[dropKey]uint64, event.Stats, error) {
	t.Helper()
	var out []flatRecord
	drops := map[dropKey]uint64{}
	st, err := r.ReadSelected(context.Background(), sel, func(rec *record.Record, n uint64) {
		if rec.UserData != nil || rec.FileOffset != -1 {
			t.Errorf("left-out record with a payload or offset: %+v", rec)
		}
		drops[dropKeyOf(rec)] += n
	}, func(rec *record.Record) error {
		out = append(out, flatten(rec))
		return nil
	})
	return out, drops, st, err
}

// checkSelected checks a selected pass against a full one: the records
// delivered are those of the full pass, in the same order, including
// every record keep accepts; those it left out are reported with their
// kinds; the stats are the full pass's.
func checkSelected(t *testing.T, what string, all []flatRecord, allStats event.Stats, keep func(*record.Record) bool,
	got []flatRecord, drops map[dropKey]uint64, st event.Stats) {
	t.Helper()
	missing := map[dropKey]uint64{}
	j := 0
	for i := range got {
		for j < len(all) && !reflect.DeepEqual(all[j], got[i]) {
			if keep(&all[j].rec) {
				t.Fatalf("%s: record %d (%+v) left out, though kept", what, j, all[j].rec)
			}
			missing[dropKeyOf(&all[j].rec)]++
			j++
		}
		if j == len(all) {
			t.Fatalf("%s: record %d delivered (%+v) is not in the full pass, or out of order", what, i, got[i].rec)
		}
		j++
	}
	for ; j < len(all); j++ {
		if keep(&all[j].rec) {
			t.Fatalf("%s: record %d (%+v) left out, though kept", what, j, all[j].rec)
		}
		missing[dropKeyOf(&all[j].rec)]++
	}
	if len(missing) == 0 {
		missing = map[dropKey]uint64{}
	}
	if !reflect.DeepEqual(drops, missing) {
		t.Fatalf("%s: reported left out %v, missing %v", what, drops, missing)
	}
	if !reflect.DeepEqual(st.Sorted(), allStats.Sorted()) {
		t.Fatalf("%s: stats %v, want %v", what, st.Sorted(), allStats.Sorted())
	}
}

// TestCompactedSelection reads the largest fixture with its buffers
// compacted to a selection, with budgets from more than the file to less
// than a buffer: a selected pass delivers the records of a full pass it
// keeps, in order, and reports the others; passes that are not selected
// still get every record, before and after.
func TestCompactedSelection(t *testing.T) {
	base := openFixture(t, largestFixture, Options{CacheBudget: -1})
	all, allStats := readFlat(t, base, nil)
	var total int64
	for _, b := range base.Buffers() {
		total += int64(b.Used())
	}
	keep := func(rec *record.Record) bool {
		return rec.Group == record.GroupFileIo || rec.Group == record.GroupDiskIo || (rec.Kind == record.KindEvent && rec.ID == 10)
	}
	sel := NewSelection(keep)
	other := NewSelection(keep)
	nkept := 0
	for i := range all {
		if keep(&all[i].rec) {
			nkept++
		}
	}
	if nkept == 0 || nkept > len(all)/2 {
		t.Fatalf("the selection keeps %d of %d records", nkept, len(all))
	}
	for _, budget := range []int64{0, total / 3, 100} {
		what := "budget " + strconv.FormatInt(budget, 10)
		r := openFixture(t, largestFixture, Options{CacheBudget: budget})
		r.Compact(sel)
		// The first pass fills the cache; it delivers every record.
		got, st := readFlat(t, r, nil)
		sameRecords(t, what+" first pass", all, got)
		if !reflect.DeepEqual(st.Sorted(), allStats.Sorted()) {
			t.Fatalf("%s: first pass stats %v, want %v", what, st.Sorted(), allStats.Sorted())
		}
		cs := r.CacheStats()
		if cs.Allocated > cs.Budget {
			t.Fatalf("%s: cache allocated %d bytes, budget %d", what, cs.Allocated, cs.Budget)
		}
		if budget == 0 {
			if cs.Compacted != len(r.Buffers()) || cs.Bytes != total || cs.Stored >= total/2 {
				t.Fatalf("%s: cache %+v for %d bytes", what, cs, total)
			}
		}
		passes := 1
		if budget == 0 {
			passes = 2 // the compacted buffers serve any number of passes
		}
		for pass := 0; pass < passes; pass++ {
			sgot, drops, sst, err := readSelected(t, r, sel)
			if err != nil {
				t.Fatal(err)
			}
			checkSelected(t, what, all, allStats, keep, sgot, drops, sst)
			// With the whole file compacted, a pass delivers the records
			// kept and at most the last record of each buffer besides.
			if budget == 0 && len(sgot) > nkept+len(r.Buffers()) {
				t.Fatalf("%s: selected pass delivered %d of %d records, %d kept", what, len(sgot), len(all), nkept)
			}
		}
		// Another selection (even with the same rule) and plain passes
		// do not use the compacted buffers.
		ogot, drops, ost, err := readSelected(t, r, other)
		if err != nil {
			t.Fatal(err)
		}
		if len(drops) != 0 {
			t.Fatalf("%s: a pass with another selection was told of %d left-out kinds", what, len(drops))
		}
		sameRecords(t, what+" other selection", all, ogot)
		if !reflect.DeepEqual(ost.Sorted(), allStats.Sorted()) {
			t.Fatalf("%s: other selection stats %v", what, ost.Sorted())
		}
		got, _ = readFlat(t, r, nil)
		sameRecords(t, what+" plain pass after", all, got)
		if cs := r.CacheStats(); cs.Allocated > cs.Budget {
			t.Fatalf("%s: cache allocated %d bytes, budget %d", what, cs.Allocated, cs.Budget)
		}
		r.Close()
	}
}

// TestCompactedUnordered checks that compacted buffers do not serve a
// file whose processor streams go back in time (leaving records out of
// such a merge could reorder the rest), and do serve it once ordered.
func TestCompactedUnordered(t *testing.T) {
	ev := func(ts int64, tid uint32, opcode uint8) []byte {
		return kernelRecord(HeaderSystem64, 2, record.GroupThread, opcode, tid, 1, ts, nil, []byte{1, 2, 3})
	}
	keep := func(rec *record.Record) bool { return rec.Opcode != 9 }
	h := defaultSynthHeader()
	for _, c := range []struct {
		name    string
		ordered bool
		data    []byte
	}{
		{"ordered", true, synthFile(h, nil,
			synthBuffer(0, 2, 0, 0, 0, true, ev(1_000_010, 1, 1), ev(1_000_020, 2, 9), ev(1_000_040, 3, 1), ev(1_000_045, 4, 9)),
			synthBuffer(1, 3, 0, 0, 0, false, ev(1_000_015, 5, 9), ev(1_000_030, 6, 1), ev(1_000_050, 7, 9), ev(1_000_060, 8, 1)),
		)},
		{"back in time", false, synthFile(h, nil,
			synthBuffer(0, 2, 0, 0, 0, true, ev(1_000_010, 1, 1), ev(1_000_050, 2, 9), ev(1_000_020, 3, 1), ev(1_000_045, 4, 9)),
			synthBuffer(1, 3, 0, 0, 0, false, ev(1_000_015, 5, 9), ev(1_000_030, 6, 1), ev(1_000_050, 7, 9), ev(1_000_060, 8, 1)),
		)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(c.data), int64(len(c.data)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			all, allStats := readFlat(t, r, nil)
			sel := NewSelection(keep)
			r.Compact(sel)
			got, _ := readFlat(t, r, nil) // the header buffer was cached whole by the first pass
			sameRecords(t, "plain", all, got)
			r2, err := NewReader(bytes.NewReader(c.data), int64(len(c.data)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			r2.Compact(sel)
			got, _ = readFlat(t, r2, nil)
			sameRecords(t, "plain", all, got)
			if cs := r2.CacheStats(); cs.Compacted == 0 {
				t.Fatalf("nothing compacted: %+v", cs)
			}
			sgot, drops, sst, err := readSelected(t, r2, sel)
			if err != nil {
				t.Fatal(err)
			}
			checkSelected(t, c.name, all, allStats, keep, sgot, drops, sst)
			if c.ordered && len(sgot) == len(all) {
				t.Fatal("an ordered file: nothing left out")
			}
			if !c.ordered && len(sgot) != len(all) {
				t.Fatalf("a file that goes back in time: %d of %d records delivered", len(sgot), len(all))
			}
		})
	}
}
