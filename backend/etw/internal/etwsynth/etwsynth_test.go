package etwsynth

import (
	"bytes"
	"context"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
)

// TestETLRoundTrip: the .etl reader gives back every record, in time
// order, with its kind, class, opcode, version, context and payload.
func TestETLRoundTrip(t *testing.T) {
	var s Recs
	s.Process(2000, 3, 900, 4, "app.exe", "app")
	s.CPU = 1
	s.Thread(2100, 3, 900, 901)
	s.Image(2200, 10, 900, 0x140000000, 0x5000, 7, `\Device\HarddiskVolume3\app\app.exe`)
	s.CPU = 0
	s.Create(3000, 901, 900, 0xa, 0xb, 0, `\Device\HarddiskVolume3\x`)
	s.Stack(3000, 3000, 900, 901, 0xfffff80000001000, 0x140001000)
	s.Own(2500, ownprovider.OpcodeMarker, 900, 901, ownprovider.Marker("m"))
	// Enough records for a second buffer on processor 0.
	for i := 0; i < 2000; i++ {
		s.OpEnd(4000+int64(i), 901, 900, 0xa, 0, 0)
	}
	data := ETL(1000, s.Recs)
	r, err := etl.NewReader(bytes.NewReader(data), int64(len(data)), etl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Header(); h.PointerSize != 8 || h.PerfFreq != 10_000_000 || h.ClockType != etl.ClockTypeQPC {
		t.Fatalf("header %+v", h)
	}
	var got []record.Record
	st, err := r.Read(context.Background(), func(rec *record.Record) error {
		got = append(got, rec.Clone())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(s.Recs)+1 || got[0].Group != 0 || got[0].Timestamp != 1000 {
		t.Fatalf("%d records (first %+v), want %d; stats %v", len(got), got[0], len(s.Recs)+1, st.Sorted())
	}
	byTS := map[int64]record.Record{}
	for _, g := range got[1:] {
		byTS[g.Timestamp] = g
	}
	for i := range s.Recs {
		w := &s.Recs[i]
		g, ok := byTS[w.Timestamp]
		if w.Timestamp == 3000 { // two records: checked by kind
			continue
		}
		if !ok || g.Kind != w.Kind || g.Provider != w.Provider || g.Group != w.Group || g.Opcode != w.Opcode ||
			g.Version != w.Version || g.CPU != w.CPU || g.PointerSize != 8 || !bytes.Equal(g.UserData, w.UserData) ||
			w.Kind != record.KindPerfInfo && (g.ThreadID != w.ThreadID || g.ProcessID != w.ProcessID) {
			t.Fatalf("record %d: %+v\nwant %+v", i, g, *w)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Timestamp < got[i-1].Timestamp {
			t.Fatalf("out of order at %d", i)
		}
	}
}
