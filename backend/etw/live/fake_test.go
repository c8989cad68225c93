package live

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// fakeAPI is an in-memory Windows: sessions, processes, a volume map, and
// recorded events that ProcessTrace delivers as EVENT_RECORDs, so that the
// session logic runs on any OS.
type fakeAPI struct {
	mu        sync.Mutex
	pid       uint32
	procs     []Process
	os        [3]uint32
	freq      int64
	qpc, ft   int64
	sessions  map[string]*fakeSession
	byTrace   map[TraceHandle]*fakeSession
	nextH     uint64
	startErrs map[string][]error
	// events are delivered by ProcessTrace, per session kind.
	mainEvents, rundownEvents []record.Record
	// imageEvents are delivered to the image-load companion session.
	imageEvents []record.Record
	// traced are the TraceEvent calls.
	traced []traced
	// dieAfter > 0: the main session's ProcessTrace returns after that
	// many events, as if the session were stopped from outside.
	dieAfter int
	// rundownHang: the rundown session's ProcessTrace returns only when
	// the trace is closed.
	rundownHang bool
	// stopStatus is what stopping the main session reports.
	stopStatus SessionStatus
	// fileSizes are the files sessions wrote: a file-mode session writes
	// 64 KiB to its log file, nothing with noLogFile, an empty file with
	// emptyLogFile.
	fileSizes               map[string]int64
	noLogFile, emptyLogFile bool
	// cpuMHz is the CPU speed OpenTrace reports.
	cpuMHz uint32
	// others are sessions of other tools.
	others   []SessionStatus
	stopped  []string
	started  []SessionConfig
	child    *fakeChild
	queryErr error
	vols     map[string]string
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
	// stdio are the standard files of the StartSuspended calls.
	stdio []Stdio
}

// traced is one TraceEvent call.
type traced struct {
	session string
	guid    GUID
	opcode  uint8
	data    []byte
}

// stackCall is one SetStackTracing call: the session (by name) and the
// events.
type stackCall struct {
	session string
	ids     []ClassicEventID
}

type fakeSession struct {
	cfg      SessionConfig
	handle   SessionHandle
	trace    TraceHandle
	consumer Consumer
	stop     chan struct{}
	closed   chan struct{}
	inject   chan record.Record
	stopOnce sync.Once
	closeOne sync.Once
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{
		pid:       4242,
		os:        [3]uint32{10, 0, 22631},
		freq:      10_000_000,
		sessions:  map[string]*fakeSession{},
		byTrace:   map[TraceHandle]*fakeSession{},
		startErrs: map[string][]error{},
		procs:     []Process{{Pid: 4, Name: "System"}, {Pid: 4242, PPid: 100, Name: "iotrace.exe"}},
		vols:      map[string]string{`\Device\HarddiskVolume3`: "C:"},
	}
}

func (f *fakeAPI) StartTrace(cfg *SessionConfig) (SessionHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if errs := f.startErrs[cfg.Name]; len(errs) > 0 {
		f.startErrs[cfg.Name] = errs[1:]
		if errs[0] != nil {
			return 0, errs[0]
		}
	}
	if _, ok := f.sessions[cfg.Name]; ok {
		return 0, ErrAlreadyExists
	}
	for _, o := range f.others {
		if o.Name == cfg.Name {
			return 0, ErrAlreadyExists
		}
	}
	f.nextH++
	s := &fakeSession{cfg: *cfg, handle: SessionHandle(f.nextH), stop: make(chan struct{}), closed: make(chan struct{}), inject: make(chan record.Record, 16)}
	f.sessions[cfg.Name] = s
	f.started = append(f.started, *cfg)
	if cfg.LogFile != "" && !f.noLogFile {
		if f.fileSizes == nil {
			f.fileSizes = map[string]int64{}
		}
		f.fileSizes[cfg.LogFile] = 64 << 10
		if f.emptyLogFile {
			f.fileSizes[cfg.LogFile] = 0
		}
	}
	return s.handle, nil
}

func (f *fakeAPI) ControlTrace(h SessionHandle, name string, code uint32) (SessionStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s *fakeSession
	for _, x := range f.sessions {
		if (h != 0 && x.handle == h) || (h == 0 && x.cfg.Name == name) {
			s = x
		}
	}
	if s == nil {
		for i, o := range f.others {
			if o.Name == name {
				if code == ControlStop {
					f.others = append(f.others[:i], f.others[i+1:]...)
					f.stopped = append(f.stopped, name)
				}
				return o, nil
			}
		}
		return SessionStatus{}, ErrNotFound
	}
	st := SessionStatus{Name: s.cfg.Name, Handle: s.handle, EnableFlags: s.cfg.EnableFlags}
	if code == ControlStop {
		if s.cfg.EnableFlags != RundownFlags {
			st = f.stopStatus
			st.Name, st.Handle = s.cfg.Name, s.handle
		}
		s.stopOnce.Do(func() { close(s.stop) })
		delete(f.sessions, s.cfg.Name)
		f.stopped = append(f.stopped, s.cfg.Name)
	}
	return st, nil
}

func (f *fakeAPI) QueryAllTraces() ([]SessionStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queryErr != nil {
		return nil, f.queryErr
	}
	out := append([]SessionStatus(nil), f.others...)
	for _, s := range f.sessions {
		out = append(out, SessionStatus{Name: s.cfg.Name, Handle: s.handle, EnableFlags: s.cfg.EnableFlags, LogFileMode: ModeRealTime})
	}
	return out, nil
}

func (f *fakeAPI) OpenTrace(spec OpenSpec, c Consumer) (TraceHandle, TraceLogfileHeader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[spec.SessionName]
	if s == nil {
		return 0, TraceLogfileHeader{}, ErrNotFound
	}
	f.nextH++
	s.trace, s.consumer = TraceHandle(f.nextH), c
	f.byTrace[s.trace] = s
	return s.trace, TraceLogfileHeader{PerfFreq: f.freq, PointerSize: 8, CPUSpeedInMHz: f.cpuMHz}, nil
}

func (f *fakeAPI) ProcessTrace(h TraceHandle) error {
	f.mu.Lock()
	s := f.byTrace[h]
	rundown := s != nil && s.cfg.EnableFlags == RundownFlags
	events := f.mainEvents
	if rundown {
		events = f.rundownEvents
	} else if s != nil && s.cfg.EnableFlags == FlagImageLoad {
		events = f.imageEvents
	}
	dieAfter, hang := f.dieAfter, f.rundownHang && rundown
	f.mu.Unlock()
	if s == nil {
		return ErrCtxClosed
	}
	for i := range events {
		if dieAfter > 0 && i == dieAfter {
			return nil // the session went away under us
		}
		deliver(s.consumer, &events[i])
	}
	for {
		select {
		case r := <-s.inject:
			deliver(s.consumer, &r)
		case <-s.stop:
			if hang {
				<-s.closed
			}
			return nil
		case <-s.closed:
			return nil
		}
	}
}

func (f *fakeAPI) CloseTrace(h TraceHandle) error {
	f.mu.Lock()
	s := f.byTrace[h]
	f.mu.Unlock()
	if s == nil {
		return ErrCtxClosed
	}
	s.closeOne.Do(func() { close(s.closed) })
	return nil
}

func (f *fakeAPI) TraceEvent(h SessionHandle, guid GUID, opcode uint8, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sessions {
		if s.handle == h {
			f.traced = append(f.traced, traced{session: s.cfg.Name, guid: guid, opcode: opcode, data: append([]byte(nil), data...)})
			if s.consumer == nil {
				return nil // a file-mode session: written to its file
			}
			s.inject <- record.Record{Kind: record.KindClassic, Provider: record.GUID(guid), Opcode: opcode,
				PointerSize: 8, Flags: eventHeaderFlagClassicHeader | eventHeaderFlag64BitHeader,
				ThreadID: 77, ProcessID: 78, Timestamp: f.qpc + 5_000_000, UserData: data}
			return nil
		}
	}
	return ErrCtxClosed
}

func (f *fakeAPI) Clock() (int64, int64, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clockStart.IsZero() {
		f.clockStart = time.Now()
		return f.freq, f.qpc, f.ft
	}
	d := time.Since(f.clockStart)
	return f.freq, f.qpc + int64(d.Seconds()*float64(f.freq)), f.ft + d.Nanoseconds()/100
}
func (f *fakeAPI) OSVersion() (uint32, uint32, uint32) {
	return f.os[0], f.os[1], f.os[2]
}
func (f *fakeAPI) Pid() uint32 { return f.pid }

// FileSize answers from fileSizes; a path not there does not exist.
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

// SetStackTracing records the call against the session it names.
func (f *fakeAPI) SetStackTracing(h SessionHandle, ids []ClassicEventID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stackErr != nil {
		return f.stackErr
	}
	for _, s := range f.sessions {
		if s.handle == h {
			f.stackCalls = append(f.stackCalls, stackCall{session: s.cfg.Name, ids: append([]ClassicEventID(nil), ids...)})
			return nil
		}
	}
	return ErrInvalidParameter
}
func (f *fakeAPI) ProcessImage(pid uint32) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if img, ok := f.images[pid]; ok {
		return img, nil
	}
	return "", fmt.Errorf("OpenProcess %d: %w", pid, ErrAccessDenied)
}
func (f *fakeAPI) StartSuspended(argv []string, stdio Stdio) (Child, error) {
	f.mu.Lock()
	f.stdio = append(f.stdio, stdio)
	f.mu.Unlock()
	if f.child == nil {
		return nil, fmt.Errorf("no such program %q", argv[0])
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

func deliver(c Consumer, rec *record.Record) {
	er, keep := eventRecordOf(rec)
	c.Event(er)
	runtime.KeepAlive(keep)
}
