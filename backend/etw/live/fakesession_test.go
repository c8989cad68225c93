package live

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/iotrace/iotrace/backend/etw/internal/etwsynth"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
)

// The fake's kernel sessions (fake_test.go says what is modelled).

// fakeBuf is one buffer of a session: one processor's records.
type fakeBuf struct {
	cpu  uint16
	used int
	recs []record.Record
}

// bufferHeader is the size of a buffer's header (WMI_BUFFER_HEADER).
const bufferHeader = 0x48

type fakeSession struct {
	cfg      SessionConfig
	handle   SessionHandle
	trace    TraceHandle
	consumer Consumer
	running  bool
	// connected is set when ProcessTrace has connected (real time).
	connected bool
	bufBytes  int
	maxBufs   int
	cur       map[uint16]*fakeBuf // the buffer each processor logs into
	ready     []*fakeBuf          // flushed, waiting for delivery
	lost      uint32              // EventsLost
	rtLost    uint32              // RealTimeBuffersLost
	written   uint32              // BuffersWritten
	file      []record.Record     // file mode: what reached the file
	enabled   map[GUID]bool       // user providers enabled
	startQPC  int64
	wake      chan struct{}
	stopped   chan struct{}
	closed    chan struct{}
	stopOnce  sync.Once
	closeOnce sync.Once
}

// realTime reports whether the session delivers to a consumer.
func (s *fakeSession) realTime() bool { return s.cfg.LogFile == "" }

// log puts r into its processor's buffer; a full buffer is flushed, and
// without a free buffer the event is lost. f.mu is held.
func (s *fakeSession) log(r record.Record) {
	if !s.running {
		return
	}
	size := (etwsynth.HeaderSize(&r) + len(r.UserData) + 7) &^ 7
	b := s.cur[r.CPU]
	if b != nil && b.used+size > s.bufBytes {
		s.ready = append(s.ready, b)
		delete(s.cur, r.CPU)
		b = nil
	}
	if b == nil {
		if len(s.cur)+len(s.ready) >= s.maxBufs {
			s.lost++
			return
		}
		b = &fakeBuf{cpu: r.CPU, used: bufferHeader}
		s.cur[r.CPU] = b
	}
	b.recs = append(b.recs, r)
	b.used += size
	s.drain()
}

// flush hands every processor's partly filled buffer over, the highest
// processor's first. f.mu is held.
func (s *fakeSession) flush() {
	cpus := make([]int, 0, len(s.cur))
	for c := range s.cur {
		cpus = append(cpus, int(c))
	}
	sort.Sort(sort.Reverse(sort.IntSlice(cpus)))
	for _, c := range cpus {
		s.ready = append(s.ready, s.cur[uint16(c)])
	}
	clear(s.cur)
	s.drain()
}

// drain moves flushed buffers on: to the file, or (a consumer
// connected) wakes ProcessTrace. Unconnected, a real-time session keeps
// them. f.mu is held.
func (s *fakeSession) drain() {
	if !s.realTime() {
		for _, b := range s.ready {
			s.file = append(s.file, b.recs...)
			s.written++
		}
		s.ready = nil
		return
	}
	if s.connected {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// logStart logs what a session of these flags sees when it starts.
// f.mu is held.
func (f *fakeAPI) logStart(s *fakeSession) {
	_, now, _ := f.clockLocked()
	if s.cfg.EnableFlags&FlagProcess != 0 {
		var p etwsynth.Recs
		for _, pr := range f.procs {
			p.Process(now, 3, pr.Pid, pr.PPid, pr.Name, pr.Name) // DCStart
		}
		for _, r := range p.Recs {
			s.log(r)
		}
	}
	if s.cfg.EnableFlags&FlagImageLoad != 0 {
		for _, r := range f.imageEvents {
			s.log(r)
		}
	}
	if s.cfg.EnableFlags&FlagFileIOInit != 0 {
		for _, r := range f.mainEvents {
			s.log(r)
		}
	}
}

// logSelf logs the tracer's own file I/O, as its writing of what it
// received would cause: a FileIo Create of its output the first time,
// then a Write. f.mu is held.
func (f *fakeAPI) logSelf(s *fakeSession) {
	if s.cfg.EnableFlags&FlagFileIOInit == 0 || !s.running {
		return
	}
	_, now, _ := f.clockLocked()
	const fo, irp = 0xffffc000005e1f00, 0xffffc000005e1000
	tid := f.pid + 1
	var r etwsynth.Recs
	if f.selfIO == 0 {
		r.Create(now, tid, f.pid, irp, fo, 0, `\Device\HarddiskVolume3\work\trace.txt`)
		r.OpEnd(now+1, tid, f.pid, irp, 0, 0)
	}
	r.ReadWrite(now+2, 68, tid, f.pid, irp, fo, fo, uint64(f.selfIO)*4096, 4096)
	r.OpEnd(now+3, tid, f.pid, irp, 4096, 0)
	f.selfIO++
	for _, x := range r.Recs {
		s.log(x)
	}
}

// ownRecord is one of iotrace's events as its writer logs it into a
// session. f.mu is held.
func (f *fakeAPI) ownRecord(opcode uint8, data []byte, classic bool) record.Record {
	_, now, _ := f.clockLocked()
	if f.ownTime != 0 {
		now = f.qpc + f.ownTime
	}
	var r etwsynth.Recs
	if classic {
		r.Own(now, opcode, f.pid, f.pid+1, append([]byte(nil), data...))
	} else {
		r.OwnEvent(now, opcode, f.pid, f.pid+1, append([]byte(nil), data...))
	}
	return r.Recs[0]
}

// sessionByHandle returns the running session h. f.mu is held.
func (f *fakeAPI) sessionByHandle(h SessionHandle) *fakeSession {
	for _, s := range f.sessions {
		if s.handle == h {
			return s
		}
	}
	return nil
}

// startRefused says why Windows refuses to start cfg. f.mu is held.
func (f *fakeAPI) startRefused(cfg *SessionConfig) error {
	if errs := f.startErrs[cfg.Name]; len(errs) > 0 {
		f.startErrs[cfg.Name] = errs[1:]
		if errs[0] != nil {
			return errs[0]
		}
	}
	if !f.admin && !(f.granted[SystemTraceControlGUID] && f.granted[cfg.Guid]) {
		return ErrAccessDenied
	}
	kernel, memory := 0, uint64(cfg.MinBuffers)*uint64(cfg.BufferSizeKB)<<10
	for _, s := range f.sessions {
		if s.cfg.Name == cfg.Name || s.cfg.Guid == cfg.Guid {
			return ErrAlreadyExists
		}
		kernel++
		memory += uint64(s.cfg.MinBuffers) * uint64(s.cfg.BufferSizeKB) << 10
	}
	for _, o := range f.others {
		if o.Name == cfg.Name || o.Guid == cfg.Guid && o.Guid != (GUID{}) {
			return ErrAlreadyExists
		}
		if o.LogFileMode&ModeSystemLogger != 0 && !reservedKernel[o.Name] {
			kernel++
		}
	}
	if len(f.sessions)+len(f.others) >= maxSessions || kernel >= kernelSlots-2 || memory > f.kernelMemory {
		return ErrNoSystemResources
	}
	return nil
}

func (f *fakeAPI) StartTrace(cfg *SessionConfig) (SessionHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.startRefused(cfg); err != nil {
		return 0, err
	}
	c := *cfg
	if c.BufferSizeKB == 0 {
		c.BufferSizeKB = 64
	}
	c.BufferSizeKB = min(c.BufferSizeKB, MaxBufferKB) // ETW corrects what it finds unreasonable
	c.MinBuffers = max(c.MinBuffers, 2*f.cpus)
	if c.MaxBuffers < c.MinBuffers {
		c.MaxBuffers = c.MinBuffers + 20 // ETW's usual default
	}
	f.nextH++
	_, now, _ := f.clockLocked()
	s := &fakeSession{cfg: c, handle: SessionHandle(f.nextH), running: true, bufBytes: int(c.BufferSizeKB) << 10,
		maxBufs: int(c.MaxBuffers), cur: map[uint16]*fakeBuf{}, enabled: map[GUID]bool{}, startQPC: now,
		wake: make(chan struct{}, 1), stopped: make(chan struct{}), closed: make(chan struct{})}
	f.sessions[c.Name] = s
	f.started = append(f.started, *cfg)
	f.logStart(s)
	return s.handle, nil
}

func (f *fakeAPI) status(s *fakeSession) SessionStatus {
	mode := uint32(ModeSystemLogger | ModeRealTime)
	if !s.realTime() {
		mode = ModeSystemLogger | ModeFileSequential
	}
	return SessionStatus{Name: s.cfg.Name, LogFile: s.cfg.LogFile, Handle: s.handle, Guid: s.cfg.Guid, EnableFlags: s.cfg.EnableFlags,
		LogFileMode: mode, BufferSizeKB: s.cfg.BufferSizeKB, MinBuffers: s.cfg.MinBuffers, MaxBuffers: s.cfg.MaxBuffers,
		EventsLost: s.lost, RealTimeBuffersLost: s.rtLost, BuffersWritten: s.written, FlushTimer: s.cfg.FlushTimer}
}

func (f *fakeAPI) ControlTrace(h SessionHandle, name string, code uint32) (SessionStatus, error) {
	f.mu.Lock()
	var s *fakeSession
	if h != 0 {
		s = f.sessionByHandle(h)
	} else {
		s = f.sessions[name]
	}
	if s == nil {
		defer f.mu.Unlock()
		return f.controlOther(name, code)
	}
	if code == ControlStop && s.cfg.EnableFlags == RundownFlags && f.stopDelay > 0 {
		f.mu.Unlock()
		time.Sleep(f.stopDelay) // a slow rundown
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	switch code {
	case ControlFlush:
		s.flush()
	case ControlStop:
		return f.stop(s), nil
	}
	return f.status(s), nil
}

// controlOther queries or stops another tool's session. f.mu is held.
func (f *fakeAPI) controlOther(name string, code uint32) (SessionStatus, error) {
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

// stop stops s: the open files are run down (DISK_FILE_IO), the buffers
// flushed (to the file, to a connected consumer, or lost with an
// unconnected real-time session). f.mu is held.
func (f *fakeAPI) stop(s *fakeSession) SessionStatus {
	if s.cfg.EnableFlags&FlagDiskFileIO != 0 {
		for _, r := range f.rundownEvents {
			s.log(r)
		}
	}
	s.flush()
	if s.realTime() && !s.connected {
		s.rtLost += uint32(len(s.ready))
		s.ready = nil
	}
	s.running = false
	st := f.status(s)
	if s.cfg.Name == SessionName(f.pid) {
		st.EventsLost += f.stopStatus.EventsLost
		st.RealTimeBuffersLost += f.stopStatus.RealTimeBuffersLost
		st.BuffersWritten += f.stopStatus.BuffersWritten
	}
	if !s.realTime() {
		f.writeFile(s)
	}
	s.stopOnce.Do(func() { close(s.stopped) })
	delete(f.sessions, s.cfg.Name)
	f.stopped = append(f.stopped, s.cfg.Name)
	return st
}

// writeFile writes a file-mode session's .etl: a real one when its
// directory exists here, otherwise only its size is known. f.mu is held.
func (f *fakeAPI) writeFile(s *fakeSession) {
	if f.fileSizes == nil {
		f.fileSizes = map[string]int64{}
	}
	path := s.cfg.LogFile
	if st, err := os.Stat(filepath.Dir(path)); err == nil && st.IsDir() && filepath.IsAbs(path) {
		b := etwsynth.ETLWith(s.startQPC, f.cpuMHz, s.file)
		if err := os.WriteFile(path, b, 0o600); err == nil {
			f.fileSizes[path] = int64(len(b))
		}
		return
	}
	switch {
	case f.noLogFile:
	case f.emptyLogFile:
		f.fileSizes[path] = 0
	default:
		f.fileSizes[path] = 64 << 10
	}
}

func (f *fakeAPI) QueryAllTraces() ([]SessionStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queryErr != nil {
		return nil, f.queryErr
	}
	out := append([]SessionStatus(nil), f.others...)
	for _, s := range f.sessions {
		out = append(out, f.status(s))
	}
	return out, nil
}

func (f *fakeAPI) OpenTrace(spec OpenSpec, c Consumer) (TraceHandle, TraceLogfileHeader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[spec.SessionName]
	if s == nil || !s.realTime() {
		return 0, TraceLogfileHeader{}, ErrNotFound
	}
	f.nextH++
	s.trace, s.consumer = TraceHandle(f.nextH), c
	f.byTrace[s.trace] = s
	return s.trace, TraceLogfileHeader{PerfFreq: f.freq, PointerSize: 8, CPUSpeedInMHz: f.cpuMHz}, nil
}

// ProcessTrace connects after connectDelay (a session stopped by then is
// gone: ERROR_WMI_INSTANCE_NOT_FOUND), then delivers the session's
// buffers as they are flushed, until the session stops (its last
// buffers delivered) or the trace is closed.
func (f *fakeAPI) ProcessTrace(h TraceHandle) error {
	f.mu.Lock()
	s := f.byTrace[h]
	delay, dieAfter := f.connectDelay, 0
	if s != nil && s.cfg.Name == SessionName(f.pid) {
		dieAfter = f.dieAfter
	}
	f.mu.Unlock()
	if s == nil {
		return ErrInvalidHandle
	}
	time.Sleep(delay)
	f.mu.Lock()
	if !s.running {
		f.mu.Unlock()
		return ErrNotFound
	}
	s.connected = true
	flushEvery := time.Duration(max(s.cfg.FlushTimer, 1)) * time.Second
	f.mu.Unlock()
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	delivered := 0
	for {
		f.mu.Lock()
		bufs, running := s.ready, s.running
		s.ready = nil
		f.mu.Unlock()
		for _, b := range bufs {
			for i := range b.recs {
				if dieAfter > 0 && delivered == dieAfter {
					f.mu.Lock()
					s.running = false // the logger died
					delete(f.sessions, s.cfg.Name)
					f.mu.Unlock()
					return nil
				}
				deliver(s.consumer, &b.recs[i])
				delivered++
			}
		}
		if len(bufs) > 0 {
			f.mu.Lock()
			f.logSelf(s)
			f.mu.Unlock()
		}
		if !running {
			return nil
		}
		select {
		case <-s.wake:
		case <-s.stopped:
		case <-tick.C:
			f.mu.Lock()
			s.flush()
			f.mu.Unlock()
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
		return ErrInvalidHandle
	}
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// TraceEvent is refused on a kernel session's handle, as documented for
// the NT Kernel Logger, unless traceEventOK.
func (f *fakeAPI) TraceEvent(h SessionHandle, guid GUID, opcode uint8, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessionByHandle(h)
	if s == nil || !f.traceEventOK {
		return ErrInvalidHandle
	}
	f.logOwn(s, opcode, data, "TraceEvent")
	return nil
}

// logOwn logs one of iotrace's events into s. f.mu is held.
func (f *fakeAPI) logOwn(s *fakeSession, opcode uint8, data []byte, via string) {
	s.log(f.ownRecord(opcode, data, via == "TraceEvent"))
	if !s.realTime() {
		f.traced = append(f.traced, traced{session: s.cfg.Name, guid: MarkerGUID, opcode: opcode,
			data: append([]byte(nil), data...), via: via})
	}
}

func (f *fakeAPI) EnableProvider(h SessionHandle, guid GUID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.enableErr != nil {
		return f.enableErr
	}
	s := f.sessionByHandle(h)
	if s == nil {
		return ErrInvalidHandle
	}
	s.enabled[guid] = true
	return nil
}

// WriteEvent reaches every running session that enabled the provider.
func (f *fakeAPI) WriteEvent(h ProviderHandle, d EventDescriptor, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	guid, ok := f.providers[h]
	if !ok {
		return ErrInvalidHandle
	}
	if guid != MarkerGUID || d.ID != uint16(d.Opcode) || d.Version != ownprovider.Version {
		return ErrInvalidParameter // not an event iotrace writes
	}
	names := make([]string, 0, len(f.sessions))
	for n := range f.sessions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if s := f.sessions[n]; s.enabled[guid] {
			f.logOwn(s, d.Opcode, data, "EventWrite")
		}
	}
	return nil
}

// SetStackTracing records the call against the session it names.
func (f *fakeAPI) SetStackTracing(h SessionHandle, ids []ClassicEventID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stackErr != nil {
		return f.stackErr
	}
	s := f.sessionByHandle(h)
	if s == nil {
		return ErrInvalidParameter
	}
	f.stackCalls = append(f.stackCalls, stackCall{session: s.cfg.Name, ids: append([]ClassicEventID(nil), ids...)})
	return nil
}

// running returns the names of the sessions still running.
func (f *fakeAPI) running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.sessions {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ownTraced returns the own events that reached the session name, by
// opcode.
func (f *fakeAPI) ownTraced(name string) map[uint8][]traced {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[uint8][]traced{}
	for _, t := range f.traced {
		if strings.EqualFold(t.session, name) {
			out[t.opcode] = append(out[t.opcode], t)
		}
	}
	return out
}

// takesOwn reports whether the session name runs with iotrace's provider
// enabled.
func (f *fakeAPI) takesOwn(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[name]
	return s != nil && s.enabled[MarkerGUID]
}
