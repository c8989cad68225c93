package synth

import (
	"fmt"

	"github.com/iotrace/iotrace/event"
)

// AllFields returns one event per op (every op but OpUnknown, in Op
// order) with every field of event.Event set to a value that is neither
// zero nor the field's "none" value, distinct between events, including
// unicode and characters that need escaping in text, CSV and JSON. Dev is
// a Linux major:minor on events with an even op and a Windows disk
// (IsDisk, Minor 0) on the others. It is meant for encoder round-trip
// tests.
func AllFields() []event.Event {
	out := make([]event.Event, 0, event.NumOps-1)
	for op := event.Op(1); int(op) < event.NumOps; op++ {
		i := uint64(op)
		e := event.Event{
			ID:            1000 + i,
			Source:        event.SourceSynthetic,
			Layer:         op.Layer(),
			Op:            op,
			Native:        fmt.Sprintf("native/%s-ø", op),
			Time:          1_000_000*int64(i) + 7,
			Duration:      12_345 + int64(i),
			Wait:          678 + int64(i),
			CPU:           uint32(i % 7),
			Pid:           4000 + uint32(i),
			Tid:           5000 + uint32(i),
			ProcStart:     -3_600_000_000_000 + int64(i),
			Comm:          fmt.Sprintf("comm,%d \"q\"", i),
			Path:          fmt.Sprintf("/tmp/dir %d/ünï,cødé\t\"%s\".dat", i, op),
			Path2:         fmt.Sprintf(`C:\Users\dev\新しい %d.txt`, i),
			FD:            int32(3 + i),
			FileObject:    0xffffc08a_1b2c3000 + i*0x10,
			FileKey:       0xffffa08a_5d6e7000 + i*0x10,
			Inode:         1_048_576 + i,
			Offset:        1<<40 + int64(i),
			Size:          4096 * (i + 1),
			Bytes:         int64(4096*(i+1)) - 1,
			Status:        event.Status(1 + i%12),
			Code:          uint32(i),
			Flags:         event.Flags(1<<(i%16)) | event.FlagSync,
			OpenFlags:     0x80000 | uint32(i),
			Mode:          0o644 + uint32(i),
			Disposition:   uint8(1 + i%5),
			Priority:      uint8(1 + i%7),
			IOFlags:       0x60000 | uint32(i),
			Info:          100 + uint32(i),
			Dev:           event.Device{Major: 8 + uint32(i), Minor: 1 + uint32(i)},
			Sector:        1<<33 + i,
			Request:       0xffff8881_0a000000 + i*0x100,
			Cause:         999 - i,
			CausedIOs:     uint32(i),
			CausedBytes:   65536 * i,
			ReadCached:    4096*i + 1,
			ReadAhead:     8192*i + 2,
			ReadDisk:      16384*i + 3,
			ReadWaited:    512*i + 4,
			ReadAheadFrom: 2000 + i,
			Note:          fmt.Sprintf("note %d: ✓\nline two, \"quoted\"", i),
		}
		if op%2 == 1 {
			e.Dev = event.Device{Major: uint32(i), IsDisk: true}
		}
		if e.CPU == 0 {
			e.CPU = 11
		}
		out = append(out, e)
	}
	return out
}

// AllFieldsTrace returns a trace whose header, facts (one per fact kind
// and handle space) and trailer (one counter per kind) have every field
// set to a non-zero value, with the events of [AllFields] interleaved
// with the facts. Facts here are not meant to be consistent: they exist
// to test that every field survives an encoder.
func AllFieldsTrace() *Recorded {
	r := &Recorded{
		Began: true,
		Ended: true,
		Header: event.Header{
			Source:      event.SourceSynthetic,
			OS:          "linux",
			OSVersion:   "6.18.0-synth #1 SMP PREEMPT_DYNAMIC",
			Hostname:    "höst-ñame",
			CPUs:        64,
			PointerSize: 8,
			StartWall:   defaultStartWall + 123,
			Clock:       event.Clock{Kind: event.ClockQPC, Freq: 3_117_777, Origin: -42},
			Command:     `sh -c "make -j8 && ./run, ok"`,
			Tool:        "iotrace synth (all fields)",
			Layers:      event.LayersOf(event.LayerFile, event.LayerBlock),
		},
	}
	spaces := []event.HandleSpace{event.SpaceFD, event.SpaceCwd, event.SpaceFileObject, event.SpaceFileKey}
	var facts []event.Fact
	n := 0
	for k := event.FactName; k <= event.FactVolume; k++ {
		for _, sp := range spaces {
			if k != event.FactName && sp != event.SpaceFD {
				continue
			}
			n++
			i := uint64(n)
			facts = append(facts, event.Fact{
				Kind:      k,
				Time:      -500 + 1_000_000*int64(i),
				Rundown:   true,
				End:       true,
				Space:     sp,
				Pid:       4000 + uint32(i),
				ProcStart: -7_000_000 - int64(i),
				Tid:       5000 + uint32(i),
				PPid:      1 + uint32(i),
				Handle:    0xffffc08a_00000000 + i,
				Dev:       event.Device{Major: 259, Minor: uint32(i), IsDisk: i%2 == 0},
				Name:      fmt.Sprintf("/näme %d,\"x\"", i),
				Image:     fmt.Sprintf(`C:\Prögram Files\app %d.exe`, i),
				Detail:    fmt.Sprintf("app.exe --flag=%d \"arg with space\"\n", i),
			})
		}
	}
	r.Events = AllFields()
	r.Facts = facts
	// Interleave: fact i before event i, the rest at the end.
	for i := 0; i < len(r.Events) || i < len(r.Facts); i++ {
		if i < len(r.Facts) {
			r.Order = append(r.Order, Item{ItemFact, i})
		}
		if i < len(r.Events) {
			r.Order = append(r.Order, Item{ItemEvent, i})
		}
	}
	r.Trailer = event.Trailer{End: 1 << 42}
	for k := event.CountInfo; k <= event.CountDropped; k++ {
		r.Trailer.Stats.Add(k, fmt.Sprintf("counter %s (cpu %d) ✓", k, k), 1<<uint(10+k))
	}
	return r
}
