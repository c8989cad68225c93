package live

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// TestCommandStillRunning: a trace that ends (duration, Ctrl-C) while the
// command runs reports no exit status; at the end of the duration the
// command is left running, with a warning; on Ctrl-C it is killed.
func TestCommandStillRunning(t *testing.T) {
	for _, cancel := range []bool{false, true} {
		f := newFakeAPI()
		f.child = &fakeChild{pid: 900, resumed: make(chan struct{}), exit: make(chan struct{})}
		var exited []int
		var warns []string
		opts := backend.Options{Command: []string{"app.exe"}, CommandExited: func(s int) { exited = append(exited, s) },
			Warn: func(s string) { warns = append(warns, s) }}
		ctx, stop := context.WithCancel(context.Background())
		if cancel {
			time.AfterFunc(50*time.Millisecond, stop)
		} else {
			opts.Duration = 50 * time.Millisecond
		}
		sink := &memSink{}
		if err := New(Config{API: f, NoRundown: true}).Run(ctx, opts, sink); err != nil {
			t.Fatal(err)
		}
		stop()
		if len(exited) != 0 {
			t.Errorf("cancel %v: CommandExited(%v) for a command still running", cancel, exited)
		}
		if f.child.wasKilled() != cancel {
			t.Errorf("cancel %v: killed %v", cancel, f.child.wasKilled())
		}
		still := strings.Contains(strings.Join(warns, "\n"), "app.exe (pid 900) is still running, no longer traced")
		if still == cancel {
			t.Errorf("cancel %v: warnings %q", cancel, warns)
		}
		if sink.trailer == nil || sink.trailer.Stats.Get(event.CountInfo, StatCommandExit) != 0 {
			t.Errorf("cancel %v: trailer %+v", cancel, sink.trailer)
		}
		close(f.child.exit)
	}
}

// TestProcessFactsFullImage: the running processes captured before the
// session carry their executable's full path where Windows gives it, and
// are named after it as a trace file names them (the path's file name
// without .exe); a process Windows will not open keeps its image file
// name, counted; events of the process take that name.
func TestProcessFactsFullImage(t *testing.T) {
	f := newFakeAPI()
	f.qpc = 50_000_000
	f.procs = append(f.procs,
		Process{Pid: lPid, PPid: 100, Name: "SearchProtocolHost.exe"},
		Process{Pid: 777, PPid: 100, Name: "MsMpEng.exe"}) // protected
	f.images = map[uint32]string{
		4242: `C:\tools\iotrace.exe`,
		lPid: `C:\Windows\System32\SearchProtocolHost.exe`,
	}
	rd, main := linkSession(f.qpc)
	f.rundownEvents, f.mainEvents = rd, main
	sink := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{}, sink, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := map[uint32][2]string{
		4:    {"System", ""},
		4242: {"iotrace", `C:\tools\iotrace.exe`},
		lPid: {"SearchProtocolHost", `C:\Windows\System32\SearchProtocolHost.exe`},
		777:  {"MsMpEng", ""},
	}
	for _, fa := range sink.facts {
		if fa.Kind != event.FactProcess || !fa.Rundown || fa.Time != 0 {
			continue
		}
		w, ok := want[fa.Pid]
		if !ok {
			continue
		}
		if fa.Name != w[0] || fa.Image != w[1] {
			t.Errorf("pid %d: name %q image %q, want %q %q", fa.Pid, fa.Name, fa.Image, w[0], w[1])
		}
		delete(want, fa.Pid)
	}
	if len(want) != 0 {
		t.Errorf("no process fact for %v", want)
	}
	if n := sink.trailer.Stats.Get(event.CountInfo, StatProcessNoImage); n != 1 {
		t.Errorf("%s = %d, want 1 (MsMpEng; Idle and System have no executable)", StatProcessNoImage, n)
	}
	n := 0
	for _, e := range sink.events {
		if e.Pid == lPid {
			n++
			if e.Comm != "SearchProtocolHost" {
				t.Errorf("event #%d of pid %d: comm %q", e.ID, e.Pid, e.Comm)
			}
		}
	}
	if n == 0 {
		t.Error("no event of the process")
	}
}
