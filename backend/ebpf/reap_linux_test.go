package ebpf

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend/ebpf/fdtable"
	"github.com/iotrace/iotrace/backend/ebpf/procfs"
	"github.com/iotrace/iotrace/event"
)

// TestReapLostExits: processes and threads whose exit record never came
// (lost under load) are forgotten once gone from /proc at two passes of
// the reaper in a row, their descriptors' names ended; live ones, and
// ones gone at one pass only (an exit not read yet), are kept. Their
// tables grew for as long as the trace ran (a 30-minute soak under heavy
// loss: resident memory up 80 MB).
func TestReapLostExits(t *testing.T) {
	root := t.TempDir()
	sink := &memSink{}
	r := &run{tr: newTracker(sink, 0, nil), fs: &procfs.FS{Root: root}}
	for _, pid := range []uint32{100, 200, 300} {
		r.tr.table.Rundown(fdtable.ProcInfo{Pid: pid, Comm: "p" + strconv.Itoa(int(pid))}, "/", map[int32]fdtable.FD{3: {Path: "/data/f"}}, 0, false)
		r.tr.comms[pid] = &commEntry{s: "p"}
		r.tr.pending[pid+1] = &pendingPaths{}
	}
	alive := func(ids ...uint32) {
		for _, id := range ids {
			os.MkdirAll(filepath.Join(root, strconv.Itoa(int(id))), 0o755)
		}
	}
	alive(100, 101, 300, 301) // 200 and its thread 201 are gone
	t0 := time.Now()
	r.reap(t0)
	if r.tr.table.Lookup(200) == nil || r.tr.pending[201] == nil {
		t.Fatal("forgotten at the first pass it was found gone")
	}
	os.RemoveAll(filepath.Join(root, "300")) // gone since the first pass only
	r.reap(t0.Add(time.Second))
	if r.tr.table.Lookup(200) == nil {
		t.Fatal("a pass before reapEvery ran")
	}
	r.reap(t0.Add(reapEvery))
	if r.tr.table.Lookup(200) != nil || r.tr.comms[200] != nil || r.tr.pending[201] != nil {
		t.Error("process 200 and its thread still kept after two passes gone")
	}
	if r.tr.table.Lookup(100) == nil || r.tr.table.Lookup(300) == nil || r.tr.pending[101] == nil {
		t.Error("a live process, or one gone at one pass only, was forgotten")
	}
	ended := 0
	for _, f := range sink.facts {
		if f.End && f.Pid == 200 {
			ended++
		}
	}
	if ended < 2 { // its descriptor and the process
		t.Errorf("%d end facts for process 200, want its descriptor's and its own", ended)
	}
	var s event.Stats
	r.reaper.stats(&s)
	if s.Get(event.CountInfo, statReaped) != 1 {
		t.Errorf("reaped counter %+v", s.Counters)
	}
	r.reap(t0.Add(2 * reapEvery))
	if r.tr.table.Lookup(300) != nil {
		t.Error("process 300 kept after two passes gone")
	}
}
