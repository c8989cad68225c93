package live

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/backend/etw/internal/etwsynth"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize"
)

// TestRecordETLReadBack: what `record -o t.etl --stacks both` writes
// into its file through the fake (the volume map at the start, each
// image's identity once its file is read) goes into an .etl with the
// kernel's records of the same run (a process, the Image Load, file
// requests on \Device\HarddiskVolumeN paths and their StackWalk records,
// frames inside the image), the identities at the time they were written,
// after their image, as EventWrite writes them (EVENT_HEADER records of
// iotrace's provider: the kernel session refused TraceEvent). Read back
// by the .etl reader (two passes): the paths
// read as drive letters, the module carries the PDB identity the
// recording wrote, and the events carry stacks whose user frames fall in
// that module.
func TestRecordETLReadBack(t *testing.T) {
	pe, id := testPE(t)
	size := uint64(id.SizeOfImage)
	const (
		pid, tid  = 900, 901
		base      = 0x140000000
		kframe    = 0xfffff80000101000
		irp1      = 0xffffc00000001000
		irp2      = 0xffffc00000002000
		fo, foD   = 0xffffc00000a00000, 0xffffc00000b00000
		headerTS  = 1_000_000
		loadTS    = 2_000_000
		writtenTS = 9_000_000 // when the recording wrote the identities
	)
	img := `\Device\HarddiskVolume3\app\mod.exe`
	f := newFakeAPI()
	f.vols = map[string]string{`\Device\HarddiskVolume3`: "C:", `\Device\HarddiskVolume1`: "D:"}
	f.imageFiles = map[string][]byte{`C:\app\mod.exe`: pe}
	var load etwsynth.Recs
	load.Image(loadTS, 10, pid, base, size, id.TimeDateStamp, img)
	f.imageEvents = load.Recs // the companion session sees the load
	opts := backend.Options{Stacks: backend.StacksBoth, Duration: time.Millisecond, Warn: func(string) {}}
	if _, err := New(Config{API: f}).RecordETL(context.Background(), opts, `C:\t\r.etl`); err != nil {
		t.Fatal(err)
	}

	// The file: the kernel's records and the TraceEvent calls.
	var s etwsynth.Recs
	nVol, nImg := 0, 0
	for i, e := range f.traced {
		ts := headerTS + 10 + int64(i)
		switch e.opcode {
		case ownprovider.OpcodeVolume:
			nVol++
		case ownprovider.OpcodeImage:
			ts = writtenTS + int64(i)
			nImg++
		}
		if e.via != "EventWrite" { // the session refused TraceEvent
			t.Fatalf("own event %d written by %s", i, e.via)
		}
		s.OwnEvent(ts, e.opcode, 4242, 77, e.data)
	}
	if nVol != 2 || nImg != 1 {
		t.Fatalf("the recording wrote %d volumes, %d identities: %+v", nVol, nImg, f.traced)
	}
	s.Process(headerTS+100, 3, pid, 4, "mod.exe", `C:\app\mod.exe`)
	s.Thread(headerTS+100, 3, pid, tid)
	s.Image(loadTS, 10, pid, base, size, id.TimeDateStamp, img)
	u1, u2 := uint64(base+0x1010), uint64(base+0x2020)
	s.CPU = 1
	s.Create(3_000_000, tid, pid, irp1, fo, 0, `\Device\HarddiskVolume3\app\data.bin`)
	s.Stack(3_000_000, 3_000_000, pid, tid, kframe, u1, u2)
	s.OpEnd(3_000_100, tid, pid, irp1, 0, 0)
	s.ReadWrite(3_100_000, 67, tid, pid, irp2, fo, fo, 0, 4096)
	s.Stack(3_100_000, 3_100_000, pid, tid, kframe, u2)
	s.OpEnd(3_100_100, tid, pid, irp2, 4096, 0)
	s.Create(3_200_000, tid, pid, irp1, foD, 0, `\Device\HarddiskVolume1\logs\d.log`)
	s.Stack(3_200_000, 3_200_000, pid, tid, kframe, u1)
	s.OpEnd(3_200_100, tid, pid, irp1, 0, 0)
	path := filepath.Join(testenv.TempDir(t), "r.etl")
	if err := os.WriteFile(path, etwsynth.ETL(headerTS, s.Recs), 0o600); err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := etw.ReadFile(context.Background(), path, etw.Options{}, sink); err != nil {
		t.Fatal(err)
	}

	var mod *event.Fact
	stacksByID := map[uint64]*event.Fact{}
	for i := range sink.facts {
		x := &sink.facts[i]
		switch {
		case x.Kind == event.FactModule && x.Pid == pid && x.Handle == base:
			mod = x
		case x.Kind == event.FactStack:
			stacksByID[x.Handle] = x
		}
	}
	want := symbolize.PDBID(id.PDBName, id.PDBGUID, id.PDBAge)
	if mod == nil || mod.Image != want || mod.Name != `C:\app\mod.exe` || mod.Size != size {
		t.Fatalf("module %+v, want image %s", mod, want)
	}
	paths := map[string]int{}
	for i := range sink.events {
		e := &sink.events[i]
		paths[e.Path]++
		if e.Pid != pid {
			continue
		}
		st := stacksByID[e.Stack]
		if st == nil || len(st.Kernel) != 1 || st.Kernel[0] != kframe || len(st.User) == 0 {
			t.Errorf("%s %s: stack %d %+v", e.Native, e.Path, e.Stack, st)
			continue
		}
		for _, a := range st.User {
			if a < mod.Handle || a >= mod.Handle+mod.Size {
				t.Errorf("%s %s: user frame %#x outside %s", e.Native, e.Path, a, mod.Name)
			}
		}
	}
	if paths[`C:\app\data.bin`] != 2 || paths[`D:\logs\d.log`] != 1 {
		t.Errorf("paths %v", paths)
	}
	st := &sink.trailer.Stats
	if st.Get(event.CountUnresolved, etw.StatIdentityNoImage) != 0 || st.Get(event.CountInfo, etw.StatModulesPDB) != 1 ||
		st.Get(event.CountInfo, etw.StatStackRecords) != 3 {
		t.Errorf("stats %v", st.Sorted())
	}
}
