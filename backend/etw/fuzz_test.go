package etw

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// fuzzRecords cuts data into records: each starts with a 8-byte
// descriptor (group, opcode, version, pointer size, header kind, payload
// length, timestamp step) followed by its payload.
func fuzzRecords(data []byte) []record.Record {
	var recs []record.Record
	ts := int64(1000)
	groups := []uint8{record.GroupEventTrace, record.GroupDiskIo, record.GroupProcess, record.GroupFileIo,
		record.GroupThread, record.GroupSystemConfig, record.GroupImage, record.GroupStackWalk}
	for len(data) >= 8 && len(recs) < 256 {
		d := data[:8]
		data = data[8:]
		n := min(int(binary.LittleEndian.Uint16(d[5:])), len(data))
		r := record.Record{
			Group: groups[int(d[0])%len(groups)], Opcode: d[1], Version: uint16(d[2] % 5),
			PointerSize: 4 << (d[3] & 1), ThreadID: uint32(d[7]), ProcessID: uint32(d[7]) * 4,
			CPU: uint16(d[4] >> 4), UserData: data[:n],
		}
		switch d[4] & 7 {
		case 0, 5:
			r.Kind = record.KindSystem
		case 6:
			r.Kind = record.KindSystem
			if d[4]&8 != 0 {
				// iotrace's own provider.
				r.Kind, r.Provider, r.Opcode = record.KindClassic, ownprovider.GUID, d[1]%4
			}
		case 1:
			r.Kind, r.ThreadID, r.ProcessID = record.KindPerfInfo, record.NoID, record.NoID
		case 2:
			r.Kind, r.Provider, r.ID = record.KindEvent, kernel.GUIDKernelFile, uint16(d[1]%32)
		case 3:
			r.Kind, r.Provider = record.KindClassic, kernel.GUIDSysConfig
			if d[4]&8 != 0 {
				// KernelTraceControl image identities.
				r.Provider = kernel.GUIDImageID
			}
		case 4, 7:
			r.Kind, r.Provider, r.ID, r.Version = record.KindEvent, kernel.GUIDKernelProc, uint16(d[1]%16), uint16(d[2]%4)
		}
		ts += int64(d[7])
		r.Timestamp = ts
		recs = append(recs, r)
		data = data[n:]
	}
	return recs
}

// fuzzSeed encodes the kernel-header records of a synthetic trace in
// fuzzRecords' format.
func fuzzSeed(recs []record.Record) []byte {
	var seed []byte
	for _, r := range recs {
		if r.Kind != record.KindSystem && r.Kind != record.KindPerfInfo {
			continue
		}
		d := make([]byte, 8)
		d[0] = map[uint8]byte{0: 0, 1: 1, 3: 2, 4: 3, 5: 4, 0x0B: 5, 0x14: 6, 0x18: 7}[r.Group]
		d[1], d[2], d[3] = r.Opcode, byte(r.Version), byte(r.PointerSize>>3)
		if r.Kind == record.KindPerfInfo {
			d[4] = 1
		}
		binary.LittleEndian.PutUint16(d[5:], uint16(len(r.UserData)))
		d[7] = 10
		seed = append(append(seed, d...), r.UserData...)
	}
	return seed
}

// FuzzPipeline pushes arbitrary record sequences through both the
// two-pass reader and the live pipeline: no panic, one Begin, one End,
// unique event IDs, and every Cause names a file event of the stream.
func FuzzPipeline(f *testing.F) {
	f.Add(fuzzSeed(scenario(8, 3).recs[:12]))
	f.Add(fuzzSeed(stackScenario(8).recs))
	f.Add(fuzzSeed(stackScenario(4).recs))
	f.Add(fuzzSeed(linkScenario(8, 3).recs))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := fuzzRecords(data)
		var out sink
		if err := Run(t.Context(), &SliceRecords{Recs: recs}, Options{}, &out); err != nil {
			t.Fatal(err)
		}
		if out.begins != 1 || out.trailer == nil {
			t.Fatalf("begins %d trailer %v", out.begins, out.trailer)
		}
		checkIDs(t, out.events)
		checkStackFacts(t, &out)
		// A second pass that leaves out the records no decoder knows
		// and only counts them gives the same output.
		var dec sink
		if err := Run(t.Context(), &decodableSlice{SliceRecords{Recs: recs}}, Options{UndecodedDetail: true}, &dec); err != nil {
			t.Fatal(err)
		}
		var full sink
		if err := Run(t.Context(), &SliceRecords{Recs: recs}, Options{UndecodedDetail: true}, &full); err != nil {
			t.Fatal(err)
		}
		sameOutput(t, "undecodable records counted", &full, &dec)
		var live sink
		p := NewPipeline(&live, Options{ExpectOpEnd: true, DiskIOInit: true})
		for i := range recs {
			if err := p.Push(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(nil); err != nil || live.begins != 1 || live.trailer == nil {
			t.Fatalf("live: %v begins %d", err, live.begins)
		}
		checkIDs(t, live.events)
	})
}

// checkIDs: every event once, every Cause a file event.
func checkIDs(t *testing.T, evs []event.Event) {
	t.Helper()
	seen, file := map[uint64]bool{}, map[uint64]bool{}
	for _, e := range evs {
		if seen[e.ID] {
			t.Fatalf("event ID %d emitted twice", e.ID)
		}
		seen[e.ID] = true
		file[e.ID] = e.Layer == event.LayerFile
	}
	for _, e := range evs {
		if e.Cause != 0 && !file[e.Cause] {
			t.Fatalf("block event %d caused by %d, not a file event of the stream", e.ID, e.Cause)
		}
	}
}

// decodableSlice is a SliceRecords whose EachDecodable reports the records
// the second pass does not want (secondWants) instead of delivering them,
// as a compacted ETL reader does.
type decodableSlice struct{ SliceRecords }

func (s *decodableSlice) EachDecodable(ctx context.Context, fn func(*record.Record) error, undecodable func(*record.Record, uint64)) error {
	return s.Each(ctx, func(r *record.Record) error {
		if !secondWants(r) {
			undecodable(r, 1)
			return nil
		}
		return fn(r)
	})
}

// checkStackFacts checks that every stack an event refers to is a stack
// fact of the stream.
func checkStackFacts(t *testing.T, s *sink) {
	t.Helper()
	ids := map[uint64]bool{}
	for _, f := range s.facts {
		if f.Kind == event.FactStack {
			if f.Handle == 0 || ids[f.Handle] {
				t.Fatalf("stack fact %d: zero or written twice", f.Handle)
			}
			ids[f.Handle] = true
		}
	}
	for _, e := range s.events {
		if e.Stack != 0 && !ids[e.Stack] {
			t.Fatalf("event %d refers to stack %d, not in the trace", e.ID, e.Stack)
		}
	}
}
