package etw

import (
	"context"
	"fmt"
	"testing"

	"github.com/iotrace/iotrace/event"
)

const (
	ms     = 10_000 // QPC ticks (10 MHz) per millisecond
	irpA   = 0xfffffa8303b20b80
	irpB   = 0xfffffa83017ffb80
	foA    = 0xfffffa8301604800
	fkA    = 0xfffff8a001300c50
	fkDisk = 0xfffff8a0028e0140
	pidSvc = 144
	tidSvc = 1716
)

// scenario is one trace exercising decoding, pairing and name lifetime.
func scenario(ptr int, version uint16) *synth {
	s := &synth{ptr: ptr, version: version}
	s.header(1000)
	s.volume(1000, `\Device\HarddiskVolume2\`, `C:\`)
	s.process(1000+1*ms, 3, pidSvc, 4, "svchost.exe", `C:\Windows\system32\svchost.exe -k netsvcs`)
	s.thread(1000+1*ms, 3, pidSvc, tidSvc)
	// The image rundown lists a DLL first, then the executable.
	s.image(1000+1*ms, 3, pidSvc, 0x7ff800000000, `\Device\HarddiskVolume2\Windows\System32\ntdll.dll`)
	s.image(1000+1*ms, 3, pidSvc, 0x7ff700000000, `\Device\HarddiskVolume2\Windows\System32\svchost.exe`)
	// Create a.txt on FileObject A, which creates it.
	s.create(1000+10*ms, tidSvc, pidSvc, irpA, foA, 0x02000060, `\Device\HarddiskVolume2\a.txt`)
	s.opEnd(1000+11*ms, irpA, 2, 0)
	// Read on A, then Close on A before the Read's OpEnd: the Read must
	// keep its name.
	s.rw(1000+20*ms, 67, tidSvc, pidSvc, irpA, foA, fkA, 4096, 8704)
	s.simple(1000+21*ms, 66, tidSvc, pidSvc, irpB, foA, fkA)
	s.opEnd(1000+22*ms, irpB, 0, 0)
	s.opEnd(1000+25*ms, irpA, 8704, 0)
	// A request on the closed FileObject resolves to nothing.
	s.info(1000+30*ms, 74, tidSvc, pidSvc, irpB, foA, 0, 0, 5)
	s.opEnd(1000+31*ms, irpB, 0, 0xC0000008)
	// IRP reuse: a Write on irpA replaced by a Flush on irpA before its OpEnd.
	s.rw(1000+40*ms, 68, tidSvc, pidSvc, irpA, foA, fkA, 0, 10)
	s.simple(1000+41*ms, 73, tidSvc, pidSvc, irpA, foA, fkA)
	s.opEnd(1000+42*ms, irpA, 0, 0)
	// An OpEnd nobody asked for.
	s.opEnd(1000+43*ms, 0x1234, 0, 0)
	// Disk I/O issued by svchost, completed in the idle context, on a
	// FileKey named only by the end-of-trace rundown.
	s.diskInit(1000+50*ms, 12, tidSvc, pidSvc, irpB)
	s.diskDone(1000+53*ms, 10, 0, irpB, fkDisk, 5412451328, 8704, 31941, tidSvc)
	// A completion without Init, attributed by IssuingThreadId.
	s.diskDone(1000+60*ms, 11, 0, 0xabc, 0, 4096, 4096, 10000, tidSvc)
	// An Init that never completes.
	s.diskInit(1000+70*ms, 13, tidSvc, pidSvc, 0xdef)
	// A request in flight at the end.
	s.rw(1000+80*ms, 67, tidSvc, pidSvc, 0x777, foA, fkA, 0, 1)
	// The rundown at the end names the disk I/O's FileKey.
	s.name(1000+90*ms, 36, fkDisk, `\Device\HarddiskVolume2\Users\x\big.bin`)
	return s
}

func TestPipelineFileIo(t *testing.T) {
	for _, c := range []struct {
		ptr     int
		version uint16
	}{{8, 3}, {4, 3}, {8, 2}, {4, 2}} {
		t.Run(fmt.Sprintf("v%d-ptr%d", c.version, c.ptr), func(t *testing.T) {
			s := scenario(c.ptr, c.version)
			var out sink
			if err := Run(context.Background(), &SliceRecords{Recs: s.recs}, Options{}, &out); err != nil {
				t.Fatal(err)
			}
			checkScenario(t, &out, true)
		})
	}
}

func checkScenario(t *testing.T, out *sink, twoPass bool) {
	t.Helper()
	if out.begins != 1 || out.hdr == nil || out.trailer == nil {
		t.Fatalf("begins %d header %v trailer %v", out.begins, out.hdr, out.trailer)
	}
	if out.hdr.OS != "windows" || out.hdr.OSVersion != "6.2.9200" || out.hdr.Clock.Freq != 10_000_000 || out.hdr.Clock.Origin != 1000 {
		t.Errorf("header %+v", out.hdr)
	}
	open := out.byNative("FileIo/Create")
	if len(open) != 1 || open[0].Path != `C:\a.txt` || open[0].Flags&event.FlagCreated == 0 ||
		open[0].Disposition != 2 || open[0].OpenFlags != 0x60 || open[0].Mode != 7 || open[0].Duration != 1_000_000 ||
		open[0].Pid != pidSvc || open[0].Tid != tidSvc || open[0].Comm != "svchost" || open[0].Status != event.StatusOK {
		t.Errorf("create: %+v", open)
	}
	reads := out.byNative("FileIo/Read")
	if len(reads) != 2 {
		t.Fatalf("reads: %+v", reads)
	}
	r := reads[0]
	if r.Path != `C:\a.txt` || r.Time != 20_000_000 || r.Duration != 5_000_000 || r.Bytes != 8704 || r.Size != 8704 ||
		r.Offset != 4096 || r.Status != event.StatusOK || r.Code != 0 || r.Request&0xffffffff != irpA&0xffffffff ||
		r.Flags&event.FlagDirect == 0 || r.Comm != "svchost" || r.Layer != event.LayerFile || r.Op != event.OpRead {
		t.Errorf("read across a close lost its name or pairing: %+v", r)
	}
	if inflight := reads[1]; inflight.Flags&event.FlagNoCompletion == 0 || inflight.Duration != 0 || inflight.Path != "" {
		// FileObject A was closed at 21 ms: the last read names nothing.
		t.Errorf("in-flight read: %+v", inflight)
	}
	cl := out.byNative("FileIo/Close")
	if len(cl) != 1 || cl[0].Path != `C:\a.txt` || cl[0].Op != event.OpClose {
		t.Errorf("close: %+v", cl)
	}
	q := out.byNative("FileIo/QueryInfo")
	if len(q) != 1 || q[0].Path != "" || q[0].Status != event.StatusInvalid || q[0].Code != 0xC0000008 || q[0].Info != 5 {
		t.Errorf("query after close: %+v", q)
	}
	w := out.byNative("FileIo/Write")
	if len(w) != 1 || w[0].Flags&event.FlagNoCompletion == 0 {
		t.Errorf("write replaced on its IRP: %+v", w)
	}
	fl := out.byNative("FileIo/Flush")
	if len(fl) != 1 || fl[0].Flags&event.FlagNoCompletion != 0 || fl[0].Duration != 1_000_000 {
		t.Errorf("flush: %+v", fl)
	}
	dr := out.byNative("DiskIo/Read")
	if len(dr) != 1 {
		t.Fatalf("disk reads: %+v", dr)
	}
	d := dr[0]
	wantPath := `C:\Users\x\big.bin`
	if !twoPass {
		wantPath = "" // a single pass cannot know the end-of-trace rundown
	}
	if d.Pid != pidSvc || d.Tid != tidSvc || d.Comm != "svchost" || d.Time != 50_000_000 || d.Duration != 3_000_000 ||
		d.Duration-d.Wait != 3_194_100 && d.Wait != 0 || d.Size != 8704 || d.Offset != 5412451328 || d.Sector != 5412451328/512 ||
		d.Dev != (event.Device{Major: 0, IsDisk: true}) || d.Path != wantPath || d.Layer != event.LayerBlock || d.Op != event.OpBlockRead {
		t.Errorf("disk read: %+v", d)
	}
	dw := out.byNative("DiskIo/Write")
	if len(dw) != 1 || dw[0].Flags&event.FlagNoStart == 0 || dw[0].Time != 59_000_000 || dw[0].Duration != 1_000_000 ||
		dw[0].Pid != pidSvc || dw[0].Tid != tidSvc {
		t.Errorf("disk write without init: %+v", dw)
	}
	st := &out.trailer.Stats
	for name, want := range map[string]uint64{
		StatFileReplaced:       1,
		StatFileOpEndNoRequest: 1,
		StatFileNoOpEnd:        1,
		StatDiskInitPending:    1,
		StatDiskNoInit:         1,
		StatDiskIOs:            2,
		StatDiskNoFile:         1,
	} {
		if got := st.Get(kindOf(st, name), name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if twoPass {
		if st.Get(event.CountInfo, StatDiskResolved) != 1 || st.Get(event.CountUnresolved, StatDiskUnresolved) != 0 {
			t.Errorf("disk resolution stats: %+v", st.Sorted())
		}
	} else if st.Get(event.CountUnresolved, StatDiskUnresolved) != 1 {
		t.Errorf("single pass must count the unresolved disk read: %+v", st.Sorted())
	}
	// Facts make the output self-contained.
	var names, procs, threads, vols int
	for _, f := range out.facts {
		switch f.Kind {
		case event.FactName:
			names++
		case event.FactProcess:
			procs++
			// Two passes know the executable when the process fact goes
			// out; one pass adds it with a second fact at the image.
			wantImage := `C:\Windows\System32\svchost.exe`
			if !twoPass && procs == 1 {
				wantImage = ""
			}
			if f.Name != "svchost" || f.Image != wantImage || f.Pid != pidSvc || !f.Rundown || f.PPid != 4 ||
				f.Detail != `C:\Windows\system32\svchost.exe -k netsvcs` {
				t.Errorf("process fact %d: %+v", procs, f)
			}
		case event.FactThread:
			threads++
		case event.FactVolume:
			vols++
		}
	}
	wantProcs := 1
	if !twoPass {
		wantProcs = 2
	}
	if names < 3 || procs != wantProcs || threads != 1 || vols != 1 {
		t.Errorf("facts: %d names %d procs %d threads %d vols", names, procs, threads, vols)
	}
}

func kindOf(s *event.Stats, name string) event.CounterKind {
	for _, c := range s.Counters {
		if c.Name == name {
			return c.Kind
		}
	}
	return 0
}

// TestPipelineLive feeds the same records in one pass, as a live session
// does: everything pairs the same way, but the rundown comes too late.
func TestPipelineLive(t *testing.T) {
	s := scenario(8, 3)
	var out sink
	p := NewPipeline(&out, Options{ExpectOpEnd: true, Source: event.SourceETWLive})
	for i := range s.recs {
		if err := p.Push(&s.recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(nil); err != nil {
		t.Fatal(err)
	}
	checkScenario(t, &out, false)
	if out.events[0].Source != event.SourceETWLive {
		t.Errorf("source %v", out.events[0].Source)
	}
}
