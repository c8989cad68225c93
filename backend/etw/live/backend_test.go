package live

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// memSink keeps a trace in memory.
type memSink struct {
	mu      sync.Mutex
	hdr     *event.Header
	events  []event.Event
	facts   []event.Fact
	trailer *event.Trailer
	begins  int
	delay   time.Duration // per event, to make the decoder slow
}

func (m *memSink) Begin(h *event.Header) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.begins++
	c := *h
	m.hdr = &c
	return nil
}
func (m *memSink) Event(e *event.Event) error {
	if m.delay > 0 {
		time.Sleep(m.delay)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, *e)
	return nil
}
func (m *memSink) Fact(f *event.Fact) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.facts = append(m.facts, *f)
	return nil
}
func (m *memSink) End(t *event.Trailer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *t
	m.trailer = &c
	return nil
}

const diskFixture = "filtrace_win11_kernel_diskio_fileio-names_compressed.etl"

// fixtureRecords reads a shared ETL file into memory: the recorded events
// the fake session replays as EVENT_RECORDs.
func fixtureRecords(t testing.TB, name string) ([]record.Record, *etl.LogfileHeader) {
	r, err := etl.Open(filepath.Join(testenv.ETLDir(t), name), etl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []record.Record
	if _, err := r.Read(context.Background(), func(rec *record.Record) error {
		out = append(out, rec.Clone())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h := *r.Header()
	return out, &h
}

// fakeWithFixture loads the Windows 11 disk trace into a fake: its file
// rundown records come from the rundown session, the rest from the main
// session.
func fakeWithFixture(t testing.TB) *fakeAPI {
	recs, h := fixtureRecords(t, diskFixture)
	f := newFakeAPI()
	f.freq, f.qpc, f.ft = h.PerfFreq, h.HeaderTimestamp, h.StartTime
	for _, r := range recs {
		if r.Group == record.GroupFileIo && r.Opcode == 36 {
			f.rundownEvents = append(f.rundownEvents, r)
		} else {
			f.mainEvents = append(f.mainEvents, r)
		}
	}
	f.stopStatus = SessionStatus{EventsLost: 5, RealTimeBuffersLost: 2}
	return f
}

func runFake(t *testing.T, f *fakeAPI, cfg Config, opts backend.Options, sink *memSink, stopAfter time.Duration) error {
	t.Helper()
	cfg.API = f
	ctx, cancel := context.WithTimeout(context.Background(), stopAfter)
	defer cancel()
	var warns []string
	opts.Warn = func(s string) { warns = append(warns, s) }
	err := New(cfg).Run(ctx, opts, sink)
	t.Logf("warnings: %q", warns)
	return err
}

// TestRunMatchesFileReading runs a live session whose events are the
// recorded ones of a real Windows 11 trace: the disk I/Os come out as the
// offline reader makes them, the rundown names resolve them, loss counters
// of the session reach the trailer, and both sessions are stopped.
func TestRunMatchesFileReading(t *testing.T) {
	f := fakeWithFixture(t)
	sink := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{}, sink, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if sink.begins != 1 || sink.trailer == nil {
		t.Fatalf("begins %d, trailer %v", sink.begins, sink.trailer)
	}
	if sink.hdr.Source != event.SourceETWLive || sink.hdr.Clock.Kind != event.ClockQPC || sink.hdr.Clock.Origin != f.qpc {
		t.Errorf("header %+v", sink.hdr)
	}
	// The same trace read from the file by the offline path.
	want := &memSink{}
	if err := etw.ReadFile(context.Background(), filepath.Join(testenv.ETLDir(t), diskFixture), etw.Options{}, want); err != nil {
		t.Fatal(err)
	}
	count := func(m *memSink) (disk, resolved int) {
		for _, e := range m.events {
			if e.Layer == event.LayerBlock {
				disk++
				if e.Path != "" {
					resolved++
				}
			}
		}
		return
	}
	d, r := count(sink)
	wd, wr := count(want)
	if d != wd || d == 0 {
		t.Errorf("live: %d disk I/Os, offline: %d", d, wd)
	}
	if r != wr {
		t.Errorf("live: %d disk I/Os resolved, offline: %d", r, wr)
	}
	st := sink.trailer.Stats
	for name, v := range map[string]uint64{StatSessionEventsLost: 5, StatRealTimeBufLost: 2, StatQueueOverflow: 0,
		StatRundownRecords: uint64(len(f.rundownEvents))} {
		if got := st.Get(kindOf(name), name); got != v {
			t.Errorf("%s = %d, want %d", name, got, v)
		}
	}
	// Volume and process facts captured before the session are in the
	// trace, so that it is self-contained.
	var vol, proc bool
	for _, fa := range sink.facts {
		vol = vol || fa.Kind == event.FactVolume && fa.Image == "C:"
		proc = proc || fa.Kind == event.FactProcess && fa.Pid == 4242
	}
	if !vol || !proc {
		t.Errorf("volume fact %v, process fact %v", vol, proc)
	}
	if len(f.sessions) != 0 {
		t.Errorf("sessions left running: %v", f.sessions)
	}
	if len(f.started) != 2 || f.started[0].Name != "iotrace-4242-rundown" || f.started[0].EnableFlags != RundownFlags ||
		f.started[0].LogFile == "" || f.started[0].Guid != sessionGUID(kindRundown, 0) ||
		f.started[1].Name != "iotrace-4242" || f.started[1].EnableFlags != DefaultFlags || f.started[1].Guid != sessionGUID(kindMain, 0) {
		t.Errorf("sessions started: %+v", f.started)
	}
}

// TestCPUCycleClock: a session on the CPU-cycle clock writes a header that
// says so, at the CPU speed the session reports, time 0 at its first
// record: the events' times are the cycle counts converted at that speed.
func TestCPUCycleClock(t *testing.T) {
	f := fakeWithFixture(t)
	f.cpuMHz = 2500
	sink := &memSink{}
	if err := runFake(t, f, Config{ClockType: ClockCPUCycles}, backend.Options{}, sink, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	c := sink.hdr.Clock
	if c.Kind != event.ClockCycles || c.Freq != 2_500_000_000 || sink.hdr.StartWall == 0 {
		t.Fatalf("header clock %+v, start %d", c, sink.hdr.StartWall)
	}
	first := f.rundownEvents[0].Timestamp
	if c.Origin != first {
		t.Errorf("origin %d, want the first record's timestamp %d", c.Origin, first)
	}
	// The same records at twice the CPU speed: every time halves.
	f2 := fakeWithFixture(t)
	f2.cpuMHz = 5000
	sink2 := &memSink{}
	if err := runFake(t, f2, Config{ClockType: ClockCPUCycles}, backend.Options{}, sink2, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(sink.events) == 0 || len(sink2.events) != len(sink.events) {
		t.Fatalf("%d and %d events", len(sink.events), len(sink2.events))
	}
	for i := range sink.events {
		if sink.events[i].Layer != event.LayerFile {
			continue // a disk I/O's start is its completion less a response time counted in QPC ticks
		}
		a, b := sink.events[i].Time, sink2.events[i].Time
		if d := a - 2*b; d < -2 || d > 2 {
			t.Fatalf("event %d at %d ns at 2.5 GHz, %d ns at 5 GHz", i, a, b)
		}
	}
	// Without a CPU speed, the times cannot be converted: an error, not a
	// trace with wrong times.
	f = fakeWithFixture(t)
	f.cpuMHz = 0
	if err := runFake(t, f, Config{ClockType: ClockCPUCycles}, backend.Options{}, &memSink{}, 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), "CPU speed") {
		t.Errorf("no CPU speed: %v", err)
	}
}

func kindOf(name string) event.CounterKind {
	switch name {
	case StatQueueOverflow:
		return event.CountDropped
	case StatRundownRecords, StatReceived, StatMarkers, StatImageIdentities, StatImageNoPDB, StatStackWalks, StatStackWalksNoPart:
		return event.CountInfo
	case StatImageUnreadable, StatImageMismatch, StatImageDropped, StatImageUnfinished, StatImageLate:
		return event.CountUnresolved
	}
	return event.CountLost
}

// TestStalePolicy: our own leftover session is stopped and the start
// retried; stale iotrace sessions of dead owners are cleaned up; live
// iotrace sessions and other tools' sessions are never touched.
func TestStalePolicy(t *testing.T) {
	f := newFakeAPI()
	f.procs = append(f.procs, Process{Pid: 500, Name: "iotrace.exe"}, Process{Pid: 600, Name: "notepad.exe"})
	f.others = []SessionStatus{
		{Name: "iotrace-4242"},        // ours, left by a crashed process with our pid
		{Name: "iotrace-500"},         // a running iotrace
		{Name: "iotrace-600"},         // pid reused by notepad: stale
		{Name: "iotrace-700-rundown"}, // owner gone: stale
		{Name: "Circular Kernel Context Logger"},
		{Name: "iotrace-abc"}, // not ours
	}
	sink := &memSink{}
	if err := runFake(t, f, Config{NoRundown: true}, backend.Options{}, sink, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	stopped := strings.Join(f.stopped, ",")
	for _, s := range []string{"iotrace-4242", "iotrace-600", "iotrace-700-rundown"} {
		if !strings.Contains(stopped, s) {
			t.Errorf("%s not stopped (stopped: %s)", s, stopped)
		}
	}
	for _, s := range []string{"iotrace-500,", "Circular", "iotrace-abc"} {
		if strings.Contains(stopped+",", s) {
			t.Errorf("%s stopped (stopped: %s)", s, stopped)
		}
	}
	// `iotrace sessions stop` refuses the others.
	if _, err := StopStale(f, "iotrace-500"); !errors.Is(err, ErrNotOurs) {
		t.Errorf("stop a running iotrace's session: %v", err)
	}
	if _, err := StopStale(f, "Circular Kernel Context Logger"); !errors.Is(err, ErrNotOurs) {
		t.Errorf("stop another tool's session: %v", err)
	}
}

// TestOldWindowsRefused: Go programs run on Windows 10 and later only, so
// a Windows that says it is older (wine's default, Windows 7) gets a
// clear refusal, from Run, RecordETL and Available, and no session (the
// NT Kernel Logger path is gone).
func TestOldWindowsRefused(t *testing.T) {
	f := newFakeAPI()
	f.os = [3]uint32{6, 1, 7601}
	err := runFake(t, f, Config{}, backend.Options{}, &memSink{}, time.Second)
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "Windows 10 or later") || len(f.started) != 0 {
		t.Fatalf("Run: %v, sessions started %+v", err, f.started)
	}
	if _, err := New(Config{API: f}).RecordETL(context.Background(), backend.Options{}, `C:\t\x.etl`); !errors.Is(err, backend.ErrNotSupported) {
		t.Errorf("RecordETL: %v", err)
	}
	if err := New(Config{API: f}).Available(); !errors.Is(err, backend.ErrNotSupported) {
		t.Errorf("Available: %v", err)
	}
}

// TestNotAdministrator: a user who is not an administrator starts no
// kernel session (access denied, saying how to get the right); once an
// administrator has granted that user iotrace's session GUIDs (Grant)
// the user traces: the sessions take those GUIDs, not fresh ones that no
// grant could name in advance.
func TestNotAdministrator(t *testing.T) {
	f := fakeWithFixture(t)
	f.admin = false
	err := runFake(t, f, Config{}, backend.Options{}, &memSink{}, time.Second)
	if !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "elevated") || !strings.Contains(err.Error(), "iotrace sessions grant") {
		t.Fatalf("err = %v", err)
	}
	if err := Grant(f, `WORKGROUP\me`); !errors.Is(err, ErrAccessDenied) {
		t.Errorf("a user granted himself: %v", err)
	}
	f.admin = true
	if err := Grant(f, `WORKGROUP\me`); err != nil || f.grantedTo != `WORKGROUP\me` {
		t.Fatalf("Grant: %v (to %q)", err, f.grantedTo)
	}
	f.admin = false
	sink := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{}, sink, 500*time.Millisecond); err != nil {
		t.Fatalf("granted: %v", err)
	}
	if len(sink.events) == 0 || sink.trailer.Stats.Get(event.CountInfo, StatRundownRecords) == 0 {
		t.Errorf("granted: %d events, trailer %v", len(sink.events), sink.trailer.Stats.Sorted())
	}
	f.queryErr = ErrAccessDenied
	if err := New(Config{API: f}).Available(); err == nil || !strings.Contains(err.Error(), "elevated") {
		t.Errorf("Available: %v", err)
	}
}

// TestSessionDies: a session stopped from outside mid-run ends the trace
// with what arrived (trailer included) and an error saying what happened.
func TestSessionDies(t *testing.T) {
	f := fakeWithFixture(t)
	f.dieAfter = 3000
	sink := &memSink{}
	err := runFake(t, f, Config{}, backend.Options{}, sink, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "stopped unexpectedly") {
		t.Fatalf("err = %v", err)
	}
	if sink.trailer == nil || len(sink.events) == 0 {
		t.Fatalf("%d events, trailer %v", len(sink.events), sink.trailer)
	}
	if got := sink.trailer.Stats.Get(event.CountInfo, StatReceived); got != 3000 {
		t.Errorf("received %d events, want 3000", got)
	}
}

// TestQueueOverflow: when the decoder falls behind, the ETW thread drops
// events instead of blocking, and the drops are counted and shown.
func TestQueueOverflow(t *testing.T) {
	f := fakeWithFixture(t)
	sink := &memSink{delay: time.Millisecond}
	if err := runFake(t, f, Config{QueueSize: 8, NoRundown: true}, backend.Options{}, sink, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	st := sink.trailer.Stats
	over := st.Get(event.CountDropped, StatQueueOverflow)
	if over == 0 {
		t.Fatal("no overflow counted")
	}
	found := false
	for _, p := range st.Problems() {
		found = found || p.Name == StatQueueOverflow
	}
	if !found {
		t.Error("overflow not among the problems shown")
	}
	t.Logf("%d of %d events dropped", over, st.Get(event.CountInfo, StatReceived))
}

// TestRundownTimeout: a rundown session that does not finish in time is
// abandoned with a warning and a counter; tracing goes on.
func TestRundownTimeout(t *testing.T) {
	f := fakeWithFixture(t)
	f.stopDelay = 500 * time.Millisecond
	sink := &memSink{}
	if err := runFake(t, f, Config{RundownTimeout: 50 * time.Millisecond}, backend.Options{}, sink, time.Second); err != nil {
		t.Fatal(err)
	}
	if sink.trailer.Stats.Get(event.CountLost, StatRundownUnfinished) != 1 {
		t.Errorf("stats: %v", sink.trailer.Stats.Problems())
	}
}

// TestMarker: `iotrace mark` reaches the running session and shows as a
// marker event, numbered in the pipeline's id sequence.
func TestMarker(t *testing.T) {
	f := newFakeAPI()
	f.ownTime = 5_000_000 // the marker's time (0.5 s)
	f.procs = append(f.procs, Process{Pid: 500, Name: "iotrace.exe"})
	f.others = []SessionStatus{{Name: "Other Tool"}}
	sink := &memSink{}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- New(Config{API: f, NoRundown: true}).Run(ctx, backend.Options{}, sink) }()
	var n int
	var err error
	for i := 0; i < 200 && n == 0; i++ {
		time.Sleep(5 * time.Millisecond)
		if !f.takesOwn(SessionName(4242)) {
			continue // not yet enabled for iotrace's provider
		}
		n, err = SendMark(f, "phase 2 starts")
	}
	if n != 1 || err != nil {
		t.Fatalf("SendMark: %d, %v", n, err)
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []event.Event
	for _, e := range sink.events {
		if e.Op == event.OpMarker {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].Note != "phase 2 starts" || got[0].Layer != event.LayerMarker || got[0].Time != 500_000_000 {
		t.Fatalf("markers: %+v", got)
	}
	// The marker's id is the pipeline's next one: exact as a JSON number,
	// as short as the events' ids (text shows up to 12 digits), and
	// unique.
	if got[0].ID == 0 || got[0].ID >= 1e12 {
		t.Errorf("marker id %d: not a compact id", got[0].ID)
	}
	seen := map[uint64]bool{}
	for _, e := range sink.events {
		if seen[e.ID] {
			t.Errorf("id %d given twice", e.ID)
		}
		seen[e.ID] = true
	}
}

// TestTraceCommand: the command starts suspended, is resumed once the
// session runs, only it and its descendants are kept, and the trace ends
// when it exits.
func TestTraceCommand(t *testing.T) {
	f := fakeWithFixture(t)
	// Pick the pid of the process doing the most disk I/O in the fixture.
	want := &memSink{}
	if err := etw.ReadFile(context.Background(), filepath.Join(testenv.ETLDir(t), diskFixture), etw.Options{}, want); err != nil {
		t.Fatal(err)
	}
	per := map[uint32]int{}
	for _, e := range want.events {
		if e.Layer == event.LayerBlock {
			per[e.Pid]++
		}
	}
	var pid uint32
	for p, n := range per {
		if n > per[pid] {
			pid = p
		}
	}
	f.child = &fakeChild{pid: pid, resumed: make(chan struct{}), exit: make(chan struct{}), code: 0xC0000005}
	go func() { <-f.child.resumed; time.Sleep(100 * time.Millisecond); close(f.child.exit) }()
	sink := &memSink{}
	var started int
	var exited []int
	opts := backend.Options{Command: []string{"app.exe", "-x"}, CommandStarted: func(p int) { started = p },
		CommandExited: func(s backend.CommandExit) { exited = append(exited, s.Status) }}
	t0 := time.Now()
	if err := runFake(t, f, Config{}, opts, sink, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the trace ended %v after the start, not when the command exited", d)
	}
	if started != int(pid) || sink.hdr.Command != "app.exe -x" {
		t.Errorf("started %d, header command %q", started, sink.hdr.Command)
	}
	// The exit status as cmd and PowerShell show it: an access violation
	// (NTSTATUS 0xC0000005) is -1073741819.
	if len(exited) != 1 || exited[0] != -1073741819 {
		t.Errorf("CommandExited calls: %v, want [-1073741819]", exited)
	}
	if got := sink.trailer.Stats.Get(event.CountInfo, StatCommandExit); got != 0xC0000005 {
		t.Errorf("%s = %#x", StatCommandExit, got)
	}
	if f.child.wasKilled() {
		t.Error("a command that exited by itself was killed")
	}
	n := 0
	for _, e := range sink.events {
		if e.Pid != pid && e.Layer != event.LayerMarker {
			t.Fatalf("event of pid %d kept (traced: %d)", e.Pid, pid)
		}
		if e.Layer == event.LayerBlock {
			n++
		}
	}
	if n < per[pid] {
		t.Errorf("%d disk I/Os of the command, want at least %d", n, per[pid])
	}
}

// TestConvertRoundTrip turns every record of several real traces into the
// EVENT_RECORD Windows would deliver and back: the portable record comes
// out the same (payload, extended items, ids, pointer size, processor).
func TestConvertRoundTrip(t *testing.T) {
	for _, name := range []string{diskFixture, "perfview_win10_tracelogging_primitive_types.etl",
		"tx_win7_http_server_manifest.etl", "perfview_win10_32bit_pointersize4_tiny_compressed.etl"} {
		recs, _ := fixtureRecords(t, name)
		var rec record.Record
		var buf []byte
		var ext []record.ExtItem
		for i := range recs {
			in := &recs[i]
			er, keep := eventRecordOf(in)
			Convert(er, &rec, &buf, &ext)
			_ = keep
			if string(rec.UserData) != string(in.UserData) || rec.Provider != in.Provider || rec.Opcode != in.Opcode ||
				rec.Version != in.Version || rec.ID != in.ID || rec.PointerSize != in.PointerSize || rec.CPU != in.CPU ||
				rec.ThreadID != in.ThreadID || rec.ProcessID != in.ProcessID || rec.Timestamp != in.Timestamp ||
				rec.Keyword != in.Keyword || rec.FileOffset != -1 || len(rec.Ext) != len(in.Ext) {
				t.Fatalf("%s record %d: %+v\nwant %+v", name, i, rec, *in)
			}
			for j := range in.Ext {
				if rec.Ext[j].Type != in.Ext[j].Type || string(rec.Ext[j].Data) != string(in.Ext[j].Data) {
					t.Fatalf("%s record %d ext %d differs", name, i, j)
				}
			}
			classic := in.Kind != record.KindEvent
			if (rec.Kind == record.KindClassic) != classic {
				t.Fatalf("%s record %d: kind %v from %v", name, i, rec.Kind, in.Kind)
			}
		}
	}
}

func TestOwnerPid(t *testing.T) {
	for name, want := range map[string]int64{"iotrace-12": 12, "iotrace-12-rundown": 12, "iotrace-12-images": 12, "iotrace-12-images-rundown": -1, "iotrace-": -1, "iotrace-x": -1,
		"iotrace-+3": -1, "NT Kernel Logger": -1, "iotrace-99999999999": -1} {
		pid, ok := OwnerPid(name)
		if ok != (want >= 0) || ok && int64(pid) != want {
			t.Errorf("OwnerPid(%q) = %d, %v", name, pid, ok)
		}
	}
}

// TestRecordETL: a file-mode session named after the process, stopped when
// the command exits, with its loss reported.
func TestRecordETL(t *testing.T) {
	f := newFakeAPI()
	f.stopStatus = SessionStatus{EventsLost: 1, BuffersWritten: 10}
	f.child = &fakeChild{pid: 900, resumed: make(chan struct{}), exit: make(chan struct{}), code: 3}
	go func() { <-f.child.resumed; close(f.child.exit) }()
	var exited []int
	opts := backend.Options{Command: []string{"app.exe"}, CommandExited: func(s backend.CommandExit) { exited = append(exited, s.Status) }}
	st, err := New(Config{API: f}).RecordETL(context.Background(), opts, `C:\t\out.etl`)
	if err != nil {
		t.Fatal(err)
	}
	if len(exited) != 1 || exited[0] != 3 {
		t.Errorf("CommandExited calls: %v, want [3]", exited)
	}
	if len(f.started) != 1 || f.started[0].LogFile != `C:\t\out.etl` || f.started[0].Name != "iotrace-4242" || st.EventsLost != 1 {
		t.Fatalf("started %+v, status %+v", f.started, st)
	}
	if len(f.sessions) != 0 {
		t.Error("session left running")
	}
	all, err := Sessions(f)
	if err != nil || len(all) != 0 {
		t.Errorf("Sessions: %v %v", all, err)
	}
}

// TestRecordETLChecksItsFile: a session that stops without having written
// its file, or with an empty one, is an error that says so.
func TestRecordETLChecksItsFile(t *testing.T) {
	for _, empty := range []bool{false, true} {
		f := newFakeAPI()
		f.noLogFile, f.emptyLogFile = !empty, empty
		want := "cannot be read"
		if empty {
			want = "is empty"
		}
		_, err := New(Config{API: f}).RecordETL(context.Background(), backend.Options{Duration: time.Millisecond}, `C:\t\x.etl`)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("empty=%v: err %v, want %q", empty, err, want)
		}
	}
}
