package etw

import (
	"slices"
	"testing"
)

// A disk I/O pending while a later event takes its own stack keeps the
// stack of its Init.
func TestStackDiskKeepsItsOwn(t *testing.T) {
	s := &synth{ptr: 8, version: 3}
	s.header(1000)
	s.process(1000, 3, pidSvc, 4, "svchost.exe", "svchost")
	s.thread(1000, 3, pidSvc, tidSvc)
	s.thread(1000, 3, pidSvc, tidSvc+4)
	s.name(1000, 36, fkA, `\Device\HarddiskVolume2\a.txt`)
	at := func(msec float64) int64 { return 1000 + int64(msec*ms) }
	s.diskInit(at(10), 12, tidSvc, pidSvc, irpB)
	s.stack(at(10), at(10), pidSvc, tidSvc, kA, uA)
	s.rw(at(11), 67, tidSvc+4, pidSvc, irpA, foA, fkA, 0, 4096)
	s.stack(at(11), at(11), pidSvc, tidSvc+4, kB, uB)
	s.opEnd(at(12), irpA, 4096, 0)
	s.diskDone(at(13), 10, 0, irpB, fkA, 0, 4096, 10000, tidSvc)
	out := runSynth(t, s)
	d := out.byNative("DiskIo/Read")
	if len(d) != 1 {
		t.Fatalf("%d disk reads, want 1", len(d))
	}
	f := out.stackOf(t, &d[0])
	if !slices.Equal(f.Kernel, []uint64{kA}) || !slices.Equal(f.User, []uint64{uA}) {
		t.Errorf("disk stack = kernel %x user %x, want kernel %x user %x", f.Kernel, f.User, uint64(kA), uint64(uA))
	}
	r := out.byNative("FileIo/Read")
	if len(r) != 1 {
		t.Fatalf("%d file reads, want 1", len(r))
	}
	if f := out.stackOf(t, &r[0]); !slices.Equal(f.Kernel, []uint64{kB}) || !slices.Equal(f.User, []uint64{uB}) {
		t.Errorf("read stack = kernel %x user %x, want kernel %x user %x", f.Kernel, f.User, uint64(kB), uint64(uB))
	}
}
