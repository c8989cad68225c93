package live

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// fakeAPI is an in-memory Windows 10/11 for the live backend's tests. It
// does not replay calls: it models what the backend depends on, as
// Microsoft documents it and as the consumers that run on Windows found
// it (fakesession_test.go has the sessions):
//
//   - a kernel session logs the machine's events into per-processor
//     buffers: the running processes (Process DCStart) and the machine's
//     image loads and file and disk I/O when it starts (by its flags),
//     the open files (FileRundown) when it stops with DISK_FILE_IO;
//   - a real-time session keeps its buffers until ProcessTrace connects,
//     some time after it is called; one stopped before loses them and
//     ProcessTrace fails with ERROR_WMI_INSTANCE_NOT_FOUND; beyond
//     MaximumBuffers events are lost (EventsLost);
//   - buffers are delivered when full, on the flush timer, on
//     ControlTrace(FLUSH) and at the stop, one processor's after
//     another's (out of time order across processors);
//   - the consumer's own work (writing the trace) is file I/O of the
//     tracer's process, logged into its session;
//   - TraceEvent on a kernel session's handle fails with
//     ERROR_INVALID_HANDLE (as documented for the NT Kernel Logger);
//     EventRegister/EnableTraceEx2/EventWrite reach the sessions that
//     enabled the provider;
//   - at most 64 sessions, 8 kernel sessions (2 kept for the NT Kernel
//     Logger and the Circular Kernel Context Logger), a bounded kernel
//     memory for buffers; session GUIDs are unique; a user who is not an
//     administrator starts a kernel session only with grants on its GUID
//     and the kernel provider's;
//   - CreateProcess runs a program given by its full path; finding it is
//     the caller's (exec.LookPath's ErrDot is Go's, not Windows').
type fakeAPI struct {
	mu        sync.Mutex
	pid       uint32
	cpus      uint32
	procs     []Process
	os        [3]uint32
	freq      int64
	qpc, ft   int64
	sessions  map[string]*fakeSession // running sessions started here
	byTrace   map[TraceHandle]*fakeSession
	nextH     uint64
	startErrs map[string][]error
	// The machine's events: mainEvents are logged by sessions with the
	// FILE_IO_INIT flag when they start, imageEvents by those with
	// IMAGE_LOAD, rundownEvents (the open files) by those with
	// DISK_FILE_IO when they stop.
	mainEvents, rundownEvents, imageEvents []record.Record
	// connectDelay is how long ProcessTrace takes to connect to a
	// real-time session (default 20 ms).
	connectDelay time.Duration
	// stopDelay is how long stopping a rundown session takes.
	stopDelay time.Duration
	// dieAfter > 0: the main session's logger dies after delivering
	// that many events (ProcessTrace returns).
	dieAfter int
	// stopStatus is added to what stopping the main session reports
	// (losses of the machine beyond the model's).
	stopStatus SessionStatus
	// traceEventOK makes TraceEvent succeed on kernel sessions.
	traceEventOK bool
	// enableErr fails EnableProvider.
	enableErr error
	providers map[ProviderHandle]GUID
	// traced are iotrace's own events that reached a file-mode session
	// (TraceEvent or EventWrite).
	traced []traced
	// fileSizes are the sizes of the files sessions wrote in a
	// directory that does not exist here (C:\t\x.etl): 64 KiB, nothing
	// with noLogFile, an empty file with emptyLogFile. A session whose
	// file's directory exists here writes a real .etl there.
	fileSizes               map[string]int64
	noLogFile, emptyLogFile bool
	// cpuMHz is the CPU speed the sessions report.
	cpuMHz uint32
	// others are sessions of other tools.
	others  []SessionStatus
	stopped []string
	started []SessionConfig
	// kernelMemory bounds the buffers of the running sessions (default
	// 1 GiB).
	kernelMemory uint64
	// admin is false for a user who is not an administrator; granted
	// are the GUIDs an administrator granted that user.
	admin     bool
	granted   map[GUID]bool
	grantedTo string
	child     *fakeChild
	queryErr  error
	vols      map[string]string
	// search and files are the programs CreateProcess can run.
	search ProgramSearch
	files  map[string]bool // lower-case paths
	// images are the executables' paths ProcessImage gives; a pid not
	// in it is one Windows refuses to tell (protected, System).
	images map[uint32]string
	// stackCalls are the SetStackTracing calls; stackErr fails them.
	stackCalls []stackCall
	stackErr   error
	// imageFiles are the files OpenImage serves; opened the paths asked.
	imageFiles map[string][]byte
	opened     []string
	// openGate, when set, makes OpenImage wait until it is closed.
	openGate chan struct{}
	// clockStart is when Clock was first called: later calls advance
	// the clocks with the wall clock, as a running machine's do.
	clockStart time.Time
	// stdio are the standard files of the StartSuspended calls; apps
	// the programs started.
	stdio []Stdio
	apps  []string
	// selfIO counts the tracer's own file I/O the sessions logged.
	selfIO int
	// ownTime, when set, is the time (ticks after qpc) iotrace's events
	// are logged at, instead of the clock's: a test's fixture events
	// are all logged when the session starts, with their own times.
	ownTime int64
}

// traced is one of iotrace's own events that reached a file-mode
// session.
type traced struct {
	session string
	guid    GUID
	opcode  uint8
	data    []byte
	via     string // "TraceEvent" or "EventWrite"
}

// stackCall is one SetStackTracing call: the session (by name) and the
// events.
type stackCall struct {
	session string
	ids     []ClassicEventID
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{
		pid:          4242,
		cpus:         4,
		os:           [3]uint32{10, 0, 22631},
		freq:         10_000_000,
		cpuMHz:       3000,
		sessions:     map[string]*fakeSession{},
		byTrace:      map[TraceHandle]*fakeSession{},
		startErrs:    map[string][]error{},
		providers:    map[ProviderHandle]GUID{},
		procs:        []Process{{Pid: 4, Name: "System"}, {Pid: 4242, PPid: 100, Name: "iotrace.exe"}},
		vols:         map[string]string{`\Device\HarddiskVolume3`: "C:"},
		connectDelay: 20 * time.Millisecond,
		kernelMemory: 1 << 30,
		admin:        true,
		granted:      map[GUID]bool{},
		search: ProgramSearch{AppDir: `C:\tools`, CurrentDir: `C:\work`, SystemDir: `C:\Windows\System32`,
			WindowsDir: `C:\Windows`, Path: `C:\Windows\System32;C:\Windows;C:\Program Files\Git\cmd`},
		files: map[string]bool{`c:\work\app.exe`: true, `c:\tools\iotrace.exe`: true, `c:\windows\system32\cmd.exe`: true},
	}
}

func (f *fakeAPI) Clock() (int64, int64, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clockLocked()
}

func (f *fakeAPI) clockLocked() (int64, int64, int64) {
	if f.clockStart.IsZero() {
		f.clockStart = time.Now()
		return f.freq, f.qpc, f.ft
	}
	d := time.Since(f.clockStart)
	return f.freq, f.qpc + int64(d.Seconds()*float64(f.freq)), f.ft + d.Nanoseconds()/100
}

func (f *fakeAPI) OSVersion() (uint32, uint32, uint32) { return f.os[0], f.os[1], f.os[2] }
func (f *fakeAPI) Processors() uint32                  { return f.cpus }
func (f *fakeAPI) Pid() uint32                         { return f.pid }

// FileSize answers for the files the sessions wrote.
func (f *fakeAPI) FileSize(path string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.fileSizes[path]
	if !ok {
		return 0, os.ErrNotExist
	}
	return n, nil
}

func (f *fakeAPI) Processes() ([]Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Process(nil), f.procs...), nil
}

func (f *fakeAPI) Volumes() (map[string]string, error) { return f.vols, nil }

func (f *fakeAPI) ProcessImage(pid uint32) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if img, ok := f.images[pid]; ok {
		return img, nil
	}
	return "", fmt.Errorf("OpenProcess %d: %w", pid, ErrAccessDenied)
}

func (f *fakeAPI) ProgramSearch() ProgramSearch { return f.search }

func (f *fakeAPI) IsFile(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files[strings.ToLower(path)]
}

// StartSuspended is CreateProcess given the program's path: it must name
// a file (CreateProcess does not search for lpApplicationName).
func (f *fakeAPI) StartSuspended(app string, argv []string, stdio Stdio) (Child, error) {
	f.mu.Lock()
	f.stdio = append(f.stdio, stdio)
	f.apps = append(f.apps, app)
	ok := f.files[strings.ToLower(app)]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("CreateProcess %s: The system cannot find the file specified", app)
	}
	if f.child == nil {
		return nil, fmt.Errorf("CreateProcess %s: no child scripted", app)
	}
	if f.child.output != "" {
		// The command writes before StartSuspended returns: the file
		// must then be open (a pipe's write end is closed after).
		if _, err := io.WriteString(stdio.Stdout, f.child.output); err != nil {
			return nil, fmt.Errorf("the command's output: %w", err)
		}
	}
	return f.child, nil
}

// fakeImage is an image file of the fake.
type fakeImage struct {
	*bytes.Reader
	mod int64
}

func (f *fakeImage) ModTime() int64 { return f.mod }
func (f *fakeImage) Close() error   { return nil }

// OpenImage serves the files in imageFiles; others do not exist.
func (f *fakeAPI) OpenImage(path string) (ImageFile, error) {
	f.mu.Lock()
	gate := f.openGate
	f.mu.Unlock()
	if gate != nil {
		<-gate // a slow disk
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, path)
	b, ok := f.imageFiles[path]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
	}
	return &fakeImage{Reader: bytes.NewReader(b), mod: 1}, nil
}

// GrantTracing needs an administrator; it grants the GUIDs, the kernel
// provider's and iotrace's provider's.
func (f *fakeAPI) GrantTracing(user string, guids []GUID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.admin {
		return fmt.Errorf("EventAccessControl: %w", ErrAccessDenied)
	}
	for _, g := range append(guids, SystemTraceControlGUID, MarkerGUID) {
		f.granted[g] = true
	}
	f.grantedTo = user
	return nil
}

func (f *fakeAPI) RegisterProvider(guid GUID) (ProviderHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextH++
	h := ProviderHandle(f.nextH)
	f.providers[h] = guid
	return h, nil
}

func (f *fakeAPI) UnregisterProvider(h ProviderHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.providers[h]; !ok {
		return ErrInvalidHandle
	}
	delete(f.providers, h)
	return nil
}

type fakeChild struct {
	pid     uint32
	resumed chan struct{}
	exit    chan struct{}
	code    uint32 // exit code
	mu      sync.Mutex
	killed  bool
	// output is what the command writes into its standard output.
	output string
}

func (c *fakeChild) Pid() uint32           { return c.pid }
func (c *fakeChild) Resume() error         { close(c.resumed); return nil }
func (c *fakeChild) Wait() (uint32, error) { <-c.exit; return c.code, nil }
func (c *fakeChild) Kill()                 { c.mu.Lock(); c.killed = true; c.mu.Unlock() }
func (c *fakeChild) wasKilled() bool       { c.mu.Lock(); defer c.mu.Unlock(); return c.killed }

// eventRecordOf builds the EVENT_RECORD Windows would deliver for rec (a
// record read from an ETL file): kernel records arrive as classic events
// under their group's GUID. The returned keepalive must stay reachable
// while the record is used.
func eventRecordOf(rec *record.Record) (*EventRecord, []any) {
	er := &EventRecord{}
	h := &er.EventHeader
	h.Flags = rec.Flags
	switch rec.Kind {
	case record.KindSystem, record.KindCompact, record.KindPerfInfo, record.KindClassic, record.KindInstance:
		h.Flags |= eventHeaderFlagClassicHeader
	}
	if rec.PointerSize == 4 {
		h.Flags = h.Flags&^eventHeaderFlag64BitHeader | eventHeaderFlag32BitHeader
	} else {
		h.Flags = h.Flags&^eventHeaderFlag32BitHeader | eventHeaderFlag64BitHeader
	}
	h.Flags &^= eventHeaderFlagExtendedInfo
	h.ThreadID, h.ProcessID, h.TimeStamp = rec.ThreadID, rec.ProcessID, rec.Timestamp
	h.ProviderID = GUID(rec.Provider)
	h.EventDescriptor = EventDescriptor{ID: rec.ID, Version: uint8(rec.Version), Channel: rec.Channel,
		Level: rec.Level, Opcode: rec.Opcode, Task: rec.Task, Keyword: rec.Keyword}
	if rec.CPU > 255 {
		h.Flags |= eventHeaderFlagProcessorIndex
		er.BufferContext.ProcessorNumber, er.BufferContext.Alignment = uint8(rec.CPU), uint8(rec.CPU>>8)
	} else {
		er.BufferContext.ProcessorNumber = uint8(rec.CPU)
	}
	keep := []any{}
	if len(rec.UserData) > 0 {
		data := append([]byte(nil), rec.UserData...)
		keep = append(keep, data)
		er.UserData = unsafe.Pointer(&data[0])
		er.UserDataLength = uint16(len(data))
	}
	if len(rec.Ext) > 0 {
		h.Flags |= eventHeaderFlagExtendedInfo
		items := make([]EventHeaderExtendedDataItem, len(rec.Ext))
		for i, e := range rec.Ext {
			items[i].ExtType, items[i].DataSize = e.Type, uint16(len(e.Data))
			if len(e.Data) > 0 {
				d := append([]byte(nil), e.Data...)
				keep = append(keep, d)
				*(*unsafe.Pointer)(unsafe.Pointer(&items[i].DataPtr)) = unsafe.Pointer(&d[0])
			}
		}
		keep = append(keep, items)
		er.ExtendedData = unsafe.Pointer(&items[0])
		er.ExtendedDataCount = uint16(len(items))
	}
	return er, keep
}

// deliver hands rec to c as ProcessTrace's callback would, with the
// consumer's context (a small integer) in UserContext.
func deliver(c Consumer, rec *record.Record) {
	er, keep := eventRecordOf(rec)
	er.UserContext = 1
	c.Event(er)
	runtime.KeepAlive(keep)
}
