package live

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// Session start and stop as Windows does them (consumed.go, rundown.go,
// buffers.go, session.go), through the fake's model of it.

// TestRundownFromFile: the rundown session's FileRundown burst, logged
// when it stops, all reaches the trace although ProcessTrace would have
// connected to a real-time session only after the stop: the session
// writes a file (in a private directory, gone afterwards) that the .etl
// reader reads.
func TestRundownFromFile(t *testing.T) {
	f := fakeWithFixture(t)
	f.connectDelay = 50 * time.Millisecond
	sink := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{}, sink, time.Second); err != nil {
		t.Fatal(err)
	}
	st := sink.trailer.Stats
	if got := st.Get(event.CountInfo, StatRundownRecords); got != uint64(len(f.rundownEvents)) || got == 0 {
		t.Errorf("%d rundown records in the trace, the session logged %d", got, len(f.rundownEvents))
	}
	if n := st.Get(event.CountLost, StatRundownLost) + st.Get(event.CountLost, StatRundownUnfinished); n != 0 {
		t.Errorf("rundown lost %d", n)
	}
	rd := f.started[0]
	if rd.Name != RundownName(4242) || rd.LogFile == "" {
		t.Fatalf("rundown session %+v: not in file mode", rd)
	}
	if _, err := os.Stat(filepath.Dir(rd.LogFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the rundown's directory %s is left behind: %v", filepath.Dir(rd.LogFile), err)
	}
}

// TestCommandExitsAtOnce: a traced command that exits as soon as it is
// resumed is traced: the command is resumed only once ProcessTrace has
// connected, so the stop that follows its exit does not come before the
// consumer (ProcessTrace would fail with ERROR_WMI_INSTANCE_NOT_FOUND
// and the session's buffers would be lost).
func TestCommandExitsAtOnce(t *testing.T) {
	f := fakeWithFixture(t)
	f.connectDelay = 100 * time.Millisecond
	pid := busiestPid(t)
	f.child = &fakeChild{pid: pid, resumed: make(chan struct{}), exit: make(chan struct{})}
	go func() { <-f.child.resumed; close(f.child.exit) }()
	sink := &memSink{}
	var warns []string
	opts := backend.Options{Command: []string{"app.exe"}, Warn: func(s string) { warns = append(warns, s) }}
	if err := New(Config{API: f}).Run(context.Background(), opts, sink); err != nil {
		t.Fatalf("%v (warnings %q)", err, warns)
	}
	n := 0
	for _, e := range sink.events {
		if e.Pid == pid && e.Layer == event.LayerBlock {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no disk I/O of the command in the trace; warnings %q", warns)
	}
	if rt := sink.trailer.Stats.Get(event.CountLost, StatRealTimeBufLost); rt != 2 { // the fixture's 2
		t.Errorf("real-time buffers lost %d", rt)
	}
}

// TestSessionConnectsBeforeStop: a trace stopped at once (a duration of
// one microsecond) still has the events the session logged when it
// started: the running processes, named from the kernel's rundown.
func TestSessionConnectsBeforeStop(t *testing.T) {
	f := newFakeAPI()
	f.connectDelay = 100 * time.Millisecond
	f.procs = append(f.procs, Process{Pid: 777, PPid: 4, Name: "late.exe"})
	sink := &memSink{}
	opts := backend.Options{Duration: time.Microsecond}
	if err := runFake(t, f, Config{NoRundown: true}, opts, sink, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := sink.trailer.Stats.Get(event.CountInfo, StatReceived); got < uint64(len(f.procs)) {
		t.Errorf("%d events received, the session logged %d process rundowns", got, len(f.procs))
	}
}

// busiestPid returns the process doing the most disk I/O in the disk
// fixture.
func busiestPid(t *testing.T) uint32 {
	f := fakeWithFixture(t)
	sink := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{}, sink, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	per := map[uint32]int{}
	var pid uint32
	for _, e := range sink.events {
		if e.Layer == event.LayerBlock {
			per[e.Pid]++
			if per[e.Pid] > per[pid] {
				pid = e.Pid
			}
		}
	}
	return pid
}

// TestOwnProcessNotTraced: a system-wide trace holds no event of
// iotrace's own process, whose writes of the trace the session logs
// (and, printed to a console, would log again); they are counted.
func TestOwnProcessNotTraced(t *testing.T) {
	f := fakeWithFixture(t)
	sink := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{}, sink, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if f.selfIO == 0 {
		t.Fatal("the fake logged no I/O of the tracer: the test checks nothing")
	}
	for _, e := range sink.events {
		if e.Pid == f.pid {
			t.Fatalf("event #%d %s of iotrace's own process %d in the trace", e.ID, e.Native, e.Pid)
		}
	}
	if n := sink.trailer.Stats.Get(event.CountInfo, StatSelf); n == 0 {
		t.Errorf("%s = 0", StatSelf)
	}
}

// TestBufferPlan: buffers within ETW's limits (4 KB to 16 MB) and within
// 256 MB a session, two per processor at least; what cannot be is an
// error that says what to ask.
func TestBufferPlan(t *testing.T) {
	for _, c := range []struct {
		size, cpus uint32
		want       bufferPlan
		err        string
	}{
		{0, 4, bufferPlan{1024, 8, 80}, ""},
		{0, 64, bufferPlan{1024, 128, 256}, ""}, // not 320 MB
		{0, 256, bufferPlan{512, 512, 512}, ""},
		{64, 4, bufferPlan{64, 8, 80}, ""},
		{16 << 10, 4, bufferPlan{16 << 10, 8, 16}, ""},
		{32 << 10, 4, bufferPlan{}, "4 KB to 16384 KB"},
		{2, 4, bufferPlan{}, "4 KB to 16384 KB"},
		{16 << 10, 64, bufferPlan{}, "ask 2048 KB or less"},
	} {
		p, err := planBuffers(c.size, 0, 0, c.cpus)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%d KB on %d: %+v, %v; want %q", c.size, c.cpus, p, err, c.err)
			}
			continue
		}
		if err != nil || p != c.want || p.bytes() > maxSessionMemory {
			t.Errorf("%d KB on %d: %+v, %v; want %+v", c.size, c.cpus, p, err, c.want)
		}
	}
}

// TestBufferSizeLimits: --buffer-size beyond ETW's 16 MB is refused
// before any session starts (Windows would quietly use another size); on
// a 64-processor machine the sessions' buffers stay within 256 MB.
func TestBufferSizeLimits(t *testing.T) {
	f := newFakeAPI()
	err := runFake(t, f, Config{}, backend.Options{BufferSize: 32 << 20}, &memSink{}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "--buffer-size") || len(f.started) != 0 {
		t.Fatalf("32 MB buffers: %v, started %+v", err, f.started)
	}
	f = newFakeAPI()
	f.cpus = 64
	if err := runFake(t, f, Config{}, backend.Options{}, &memSink{}, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, s := range f.started {
		if mem := uint64(s.MaxBuffers) * uint64(s.BufferSizeKB) << 10; mem > maxSessionMemory || s.MinBuffers < 128 {
			t.Errorf("session %s: %d to %d buffers of %d KB (%d MB)", s.Name, s.MinBuffers, s.MaxBuffers, s.BufferSizeKB, mem>>20)
		}
	}
}

// TestNoSystemResources: ERROR_NO_SYSTEM_RESOURCES says which limit
// refused the session: the machine's 64 sessions, its kernel sessions
// (listed), or the memory for the buffers.
func TestNoSystemResources(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(f *fakeAPI)
		want  string
	}{
		{"64 sessions", func(f *fakeAPI) {
			for i := 0; i < 64; i++ {
				f.others = append(f.others, SessionStatus{Name: "EventLog-" + string(rune('A'+i%26)) + string(rune('a'+i/26)), LogFileMode: ModeRealTime})
			}
		}, "at most 64 trace sessions"},
		{"kernel sessions", func(f *fakeAPI) {
			f.others = append(f.others, SessionStatus{Name: "NT Kernel Logger", LogFileMode: ModeSystemLogger},
				SessionStatus{Name: "Circular Kernel Context Logger", LogFileMode: ModeSystemLogger})
			for _, n := range []string{"WPR", "PerfView", "ProcMon", "xperf", "Sysmon", "Defender"} {
				f.others = append(f.others, SessionStatus{Name: n + " Kernel", LogFileMode: ModeSystemLogger})
			}
		}, "WPR Kernel, PerfView Kernel"},
		{"memory", func(f *fakeAPI) { f.kernelMemory = 4 << 20 }, "no memory for this session's buffers"},
	} {
		f := newFakeAPI()
		c.setup(f)
		err := runFake(t, f, Config{NoRundown: true}, backend.Options{}, &memSink{}, time.Second)
		if !errors.Is(err, ErrNoSystemResources) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

// TestSessionGUIDSlots: sessions take iotrace's fixed GUIDs (which an
// administrator can grant), the first slot no running session holds;
// with every slot of a kind held, the start says so.
func TestSessionGUIDSlots(t *testing.T) {
	f := newFakeAPI()
	f.others = []SessionStatus{{Name: "iotrace-77", Guid: sessionGUID(kindMain, 0)}} // a running iotrace
	f.procs = append(f.procs, Process{Pid: 77, Name: "iotrace.exe"})
	if err := runFake(t, f, Config{}, backend.Options{}, &memSink{}, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(f.started) != 2 || f.started[0].Guid != sessionGUID(kindRundown, 0) || f.started[1].Guid != sessionGUID(kindMain, 1) {
		t.Errorf("started %+v", f.started)
	}
	if g := sessionGUID(kindMain, 1).String(); g != "1f0e5f22-6d0b-4c1e-9a4e-696f74736d01" {
		t.Errorf("GUID %s", g)
	}
	for i := 0; i < numSlots; i++ {
		f.others = append(f.others, SessionStatus{Name: "held", Guid: sessionGUID(kindMain, i)})
	}
	err := runFake(t, f, Config{NoRundown: true}, backend.Options{}, &memSink{}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "GUIDs") {
		t.Errorf("every slot held: %v", err)
	}
}
