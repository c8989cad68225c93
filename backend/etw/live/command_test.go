package live

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
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
		opts := backend.Options{Command: []string{"app.exe"}, CommandExited: func(s backend.CommandExit) { exited = append(exited, s.Status) },
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

// slowWriter is a CommandStdout that is not a file and takes its time
// with each write: what the command wrote is there when Run returns only
// if Run waited for it.
type slowWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(300 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *slowWriter) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.b.String() }

// TestCommandStdout: the command's standard output is
// Options.CommandStdout when set (the CLI's stderr when the trace goes to
// stdout), this process's stdout otherwise; its input and error are this
// process's. A CommandStdout that is not a file gets everything the
// command wrote before Run (and RecordETL) returns.
func TestCommandStdout(t *testing.T) {
	const said = "printed by the command\n"
	file, err := os.Create(filepath.Join(testenv.TempDir(t), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, record := range []bool{false, true} {
		for _, to := range []string{"unset", "file", "writer"} {
			f := newFakeAPI()
			f.traceEventOK = true // no warning about how the recording's own events are written
			f.child = &fakeChild{pid: 900, resumed: make(chan struct{}), exit: make(chan struct{}), output: said}
			go func() { <-f.child.resumed; close(f.child.exit) }()
			var warns []string
			opts := backend.Options{Command: []string{"app.exe"}, Warn: func(s string) { warns = append(warns, s) }}
			var w *slowWriter
			switch to {
			case "file":
				opts.CommandStdout = file
			case "writer":
				w = &slowWriter{}
				opts.CommandStdout = w
			case "unset":
				f.child.output = "" // not into the test's stdout
			}
			if record {
				_, err = New(Config{API: f}).RecordETL(context.Background(), opts, `C:\t\out.etl`)
			} else {
				err = New(Config{API: f, NoRundown: true}).Run(context.Background(), opts, &memSink{})
			}
			if err != nil {
				t.Fatalf("record %v, %s: %v", record, to, err)
			}
			if len(f.stdio) != 1 {
				t.Fatalf("record %v, %s: %d StartSuspended calls", record, to, len(f.stdio))
			}
			got := f.stdio[0]
			if got.Stdin != os.Stdin || got.Stderr != os.Stderr {
				t.Errorf("record %v, %s: stdin %v, stderr %v: not this process's", record, to, got.Stdin, got.Stderr)
			}
			switch to {
			case "unset":
				if got.Stdout != os.Stdout {
					t.Errorf("record %v: stdout %v, want this process's", record, got.Stdout)
				}
			case "file":
				if got.Stdout != file {
					t.Errorf("record %v: stdout %v, want CommandStdout's file", record, got.Stdout)
				}
			case "writer":
				if got.Stdout == nil || got.Stdout == os.Stdout {
					t.Errorf("record %v: stdout %v, want a pipe to CommandStdout", record, got.Stdout)
				}
				if s := w.String(); s != said {
					t.Errorf("record %v: CommandStdout got %q, want %q", record, s, said)
				}
			}
			if len(warns) != 0 {
				t.Errorf("record %v, %s: warnings %q", record, to, warns)
			}
		}
	}
	b, err := os.ReadFile(file.Name())
	if err != nil || string(b) != said+said {
		t.Errorf("the file given as CommandStdout holds %q, %v; want the command's output twice", b, err)
	}
}
