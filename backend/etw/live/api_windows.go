//go:build windows && (amd64 || arm64)

package live

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// DefaultAPI returns the Windows ETW API (amd64 and arm64: the structure
// layouts and the 64-bit handles passed in one register are theirs).
func DefaultAPI() (API, error) { return winAPI{}, nil }

type winAPI struct{}

// errno turns a syscall.Errno into the portable Errno the session logic
// tests for.
func errno(err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return Errno(e)
	}
	return err
}

// maxName is the room for each of the two names after the properties.
const maxName = 1024

// propsBuf is EVENT_TRACE_PROPERTIES followed by room for the log file
// and logger names, as StartTrace, ControlTrace and QueryAllTraces want.
type propsBuf struct {
	p       EventTraceProperties
	logFile [maxName]uint16
	logger  [maxName]uint16
}

func newPropsBuf() *propsBuf {
	b := &propsBuf{}
	b.p.Wnode.BufferSize = uint32(unsafe.Sizeof(*b))
	b.p.LogFileNameOffset = uint32(unsafe.Offsetof(b.logFile))
	b.p.LoggerNameOffset = uint32(unsafe.Offsetof(b.logger))
	return b
}

func (b *propsBuf) status() SessionStatus {
	p := &b.p
	return SessionStatus{
		Name:                windows.UTF16ToString(b.logger[:]),
		LogFile:             windows.UTF16ToString(b.logFile[:]),
		Handle:              SessionHandle(p.Wnode.HistoricalContext),
		Guid:                p.Wnode.Guid,
		BufferSizeKB:        p.BufferSize,
		MinBuffers:          p.MinimumBuffers,
		MaxBuffers:          p.MaximumBuffers,
		NumberOfBuffers:     p.NumberOfBuffers,
		FreeBuffers:         p.FreeBuffers,
		BuffersWritten:      p.BuffersWritten,
		EventsLost:          p.EventsLost,
		LogBuffersLost:      p.LogBuffersLost,
		RealTimeBuffersLost: p.RealTimeBuffersLost,
		EnableFlags:         p.EnableFlags,
		LogFileMode:         p.LogFileMode,
		ClockType:           p.Wnode.ClientContext,
		FlushTimer:          p.FlushTimer,
		LoggerThreadID:      uint64(p.LoggerThreadID),
	}
}

func (winAPI) StartTrace(cfg *SessionConfig) (SessionHandle, error) {
	b := newPropsBuf()
	p := &b.p
	p.Wnode.Flags = wnodeFlagTracedGUID
	p.Wnode.ClientContext = cfg.ClockType
	p.BufferSize, p.MinimumBuffers, p.MaximumBuffers = cfg.BufferSizeKB, cfg.MinBuffers, cfg.MaxBuffers
	p.FlushTimer = cfg.FlushTimer
	p.EnableFlags = cfg.EnableFlags
	p.Wnode.Guid = cfg.Guid
	p.LogFileMode |= ModeSystemLogger
	if cfg.LogFile != "" {
		u, err := windows.UTF16FromString(cfg.LogFile)
		if err != nil || len(u) > maxName {
			return 0, fmt.Errorf("log file name %q: too long or invalid", cfg.LogFile)
		}
		copy(b.logFile[:], u)
		p.LogFileMode |= ModeFileSequential
	} else {
		p.LogFileMode |= ModeRealTime
		p.LogFileNameOffset = 0
	}
	name, err := windows.UTF16PtrFromString(cfg.Name)
	if err != nil {
		return 0, err
	}
	var h SessionHandle
	if err := startTrace(&h, name, p); err != nil {
		return 0, errno(err)
	}
	return h, nil
}

func (winAPI) ControlTrace(h SessionHandle, name string, code uint32) (SessionStatus, error) {
	b := newPropsBuf()
	var np *uint16
	if h == 0 {
		var err error
		if np, err = windows.UTF16PtrFromString(name); err != nil {
			return SessionStatus{}, err
		}
	}
	if err := controlTrace(h, np, &b.p, code); err != nil {
		return SessionStatus{}, errno(err)
	}
	return b.status(), nil
}

func (winAPI) QueryAllTraces() ([]SessionStatus, error) {
	const max = 64 // the system-wide session limit
	bufs := make([]*propsBuf, max)
	ptrs := make([]*EventTraceProperties, max)
	for i := range bufs {
		bufs[i] = newPropsBuf()
		ptrs[i] = &bufs[i].p
	}
	var n uint32
	if err := queryAllTraces(&ptrs[0], max, &n); err != nil && !errors.Is(err, syscall.Errno(ErrMoreData)) {
		return nil, errno(err)
	}
	out := make([]SessionStatus, 0, n)
	for i := uint32(0); i < n && i < max; i++ {
		out = append(out, bufs[i].status())
	}
	return out, nil
}

func (winAPI) OpenTrace(spec OpenSpec, c Consumer) (TraceHandle, TraceLogfileHeader, error) {
	var lf EventTraceLogfile
	var err error
	if spec.LogFile != "" {
		if lf.LogFileName, err = windows.UTF16PtrFromString(spec.LogFile); err != nil {
			return 0, TraceLogfileHeader{}, err
		}
		lf.ProcessTraceMode = processTraceModeEventRecord | processTraceModeRawTimestamp
	} else {
		if lf.LoggerName, err = windows.UTF16PtrFromString(spec.SessionName); err != nil {
			return 0, TraceLogfileHeader{}, err
		}
		lf.ProcessTraceMode = processTraceModeRealTime | processTraceModeEventRecord | processTraceModeRawTimestamp
	}
	id := consumers.add(c)
	lf.EventRecordCallback = eventCallback()
	lf.Context = id
	h, err := openTrace(&lf)
	if err != nil {
		consumers.remove(id)
		return 0, TraceLogfileHeader{}, errno(err)
	}
	consumers.bind(h, id)
	return h, lf.LogfileHeader, nil
}

func (winAPI) ProcessTrace(h TraceHandle) error {
	if err := processTrace(&h, 1, nil, nil); err != nil && !errors.Is(err, syscall.Errno(ErrCancelled)) {
		return errno(err)
	}
	return nil
}

func (winAPI) CloseTrace(h TraceHandle) error {
	err := closeTraceErr(closeTrace(h))
	consumers.release(h)
	if err != nil {
		return errno(err)
	}
	return nil
}

func (winAPI) TraceEvent(h SessionHandle, guid GUID, opcode uint8, data []byte) error {
	// EVENT_TRACE_HEADER followed by one MOF_FIELD pointing at data.
	var ev struct {
		hdr EventTraceHeader
		mof struct {
			DataPtr uint64
			Length  uint32
			Type    uint32
		}
	}
	ev.hdr.Size = uint16(unsafe.Sizeof(ev))
	const wnodeFlagUseMofPtr = 0x00100000
	ev.hdr.Type = opcode
	ev.hdr.Guid = guid
	// Flags live where ClientContext/Flags are in WNODE_HEADER: the
	// EVENT_TRACE_HEADER union puts Flags at offset 44 (UserTime).
	ev.hdr.UserTime = wnodeFlagTracedGUID | wnodeFlagUseMofPtr
	if len(data) > 0 {
		ev.mof.DataPtr = uint64(uintptr(unsafe.Pointer(&data[0])))
		ev.mof.Length = uint32(len(data))
	}
	err := traceEvent(h, &ev.hdr)
	runtime.KeepAlive(data)
	return errno(err)
}

// EVENT_CONTROL_CODE_ENABLE_PROVIDER and TRACE_LEVEL_VERBOSE.
const (
	eventControlCodeEnableProvider = 1
	traceLevelVerbose              = 5
)

func (winAPI) EnableProvider(h SessionHandle, guid GUID) error {
	return errno(enableTraceEx2(h, &guid, eventControlCodeEnableProvider, traceLevelVerbose, ^uint64(0), 0, 0, 0))
}

func (winAPI) RegisterProvider(guid GUID) (ProviderHandle, error) {
	var h ProviderHandle
	if err := eventRegister(&guid, 0, 0, &h); err != nil {
		return 0, errno(err)
	}
	return h, nil
}

func (winAPI) UnregisterProvider(h ProviderHandle) error { return errno(eventUnregister(h)) }

func (winAPI) WriteEvent(h ProviderHandle, d EventDescriptor, data []byte) error {
	var dd eventDataDescriptor
	n := uint32(0)
	if len(data) > 0 {
		dd.Ptr, dd.Size, n = uint64(uintptr(unsafe.Pointer(&data[0]))), uint32(len(data)), 1
	}
	err := eventWrite(h, &d, n, &dd)
	runtime.KeepAlive(data)
	return errno(err)
}

// EventAccessControl's operation and the rights GrantTracing gives
// (WMISTR.H).
const (
	eventSecurityAddDACL    = 2
	wmiguidQuery            = 0x0001
	tracelogCreateRealtime  = 0x0020
	tracelogCreateOndisk    = 0x0040
	tracelogGUIDEnable      = 0x0080
	tracelogAccessKernelLog = 0x0100
	tracelogLogEvent        = 0x0200
	tracelogAccessRealtime  = 0x0400
	tracelogRegisterGUIDs   = 0x0800
	sessionRights           = wmiguidQuery | tracelogCreateRealtime | tracelogCreateOndisk | tracelogGUIDEnable | tracelogLogEvent | tracelogAccessRealtime
	kernelProviderRights    = wmiguidQuery | tracelogGUIDEnable | tracelogAccessKernelLog
	ownProviderRights       = wmiguidQuery | tracelogGUIDEnable | tracelogRegisterGUIDs | tracelogLogEvent
)

func (winAPI) GrantTracing(user string, guids []GUID) error {
	sid, err := windows.StringToSid(user)
	if err != nil {
		if sid, _, _, err = windows.LookupSID("", user); err != nil {
			return fmt.Errorf("account %q: %w", user, err)
		}
	}
	grant := func(g GUID, rights uint32) error {
		if err := eventAccessControl(&g, eventSecurityAddDACL, sid, rights, true); err != nil {
			return fmt.Errorf("EventAccessControl(%v): %w", g, errno(err))
		}
		return nil
	}
	for _, g := range guids {
		if err := grant(g, sessionRights); err != nil {
			return err
		}
	}
	if err := grant(SystemTraceControlGUID, kernelProviderRights); err != nil {
		return err
	}
	return grant(MarkerGUID, ownProviderRights)
}

func (winAPI) SetStackTracing(h SessionHandle, ids []ClassicEventID) error {
	if len(ids) > MaxStackTracingEvents {
		return fmt.Errorf("stack tracing on %d events: at most %d", len(ids), MaxStackTracingEvents)
	}
	var p *ClassicEventID
	if len(ids) > 0 {
		p = &ids[0]
	}
	err := traceSetInformation(h, TraceStackTracingInfo, p, uint32(len(ids))*uint32(unsafe.Sizeof(ClassicEventID{})))
	runtime.KeepAlive(ids)
	return errno(err)
}

func (winAPI) Clock() (freq, qpc, filetime int64) {
	_ = queryPerformanceFrequency(&freq)
	_ = queryPerformanceCounter(&qpc)
	var ft windows.Filetime
	windows.GetSystemTimePreciseAsFileTime(&ft)
	return freq, qpc, int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime)
}

// allProcessorGroups is ALL_PROCESSOR_GROUPS.
const allProcessorGroups = 0xffff

func (winAPI) Processors() uint32 {
	if n := windows.GetActiveProcessorCount(allProcessorGroups); n > 0 {
		return n
	}
	return uint32(runtime.NumCPU())
}

func (winAPI) ProgramSearch() ProgramSearch {
	var s ProgramSearch
	if exe, err := os.Executable(); err == nil {
		s.AppDir = filepath.Dir(exe)
	}
	s.CurrentDir, _ = os.Getwd()
	s.SystemDir, _ = windows.GetSystemDirectory()
	s.WindowsDir, _ = windows.GetWindowsDirectory()
	s.Path = os.Getenv("PATH")
	// A program name with no path: may the current directory hold it?
	// (No, when NoDefaultCurrentDirectoryInExePath is set.)
	if p, err := windows.UTF16PtrFromString("iotrace-probe.exe"); err == nil {
		s.SkipCurrentDir = !needCurrentDirectoryForExePath(p)
	}
	return s
}

func (winAPI) IsFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func (winAPI) OSVersion() (uint32, uint32, uint32) {
	v := windows.RtlGetVersion()
	return v.MajorVersion, v.MinorVersion, v.BuildNumber
}

func (winAPI) Pid() uint32 { return uint32(os.Getpid()) }

func (winAPI) FileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (winAPI) OpenImage(path string) (ImageFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &winImage{File: f, size: st.Size(), mod: st.ModTime().UnixNano()}, nil
}

// winImage is an image file opened for reading its headers.
type winImage struct {
	*os.File
	size, mod int64
}

func (f *winImage) Size() int64    { return f.size }
func (f *winImage) ModTime() int64 { return f.mod }

func (winAPI) Processes() ([]Process, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, fmt.Errorf("CreateToolhelp32Snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	var pe windows.ProcessEntry32
	pe.Size = uint32(unsafe.Sizeof(pe))
	var out []Process
	for err = windows.Process32First(snap, &pe); err == nil; err = windows.Process32Next(snap, &pe) {
		out = append(out, Process{Pid: pe.ProcessID, PPid: pe.ParentProcessID, Name: windows.UTF16ToString(pe.ExeFile[:])})
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return out, fmt.Errorf("Process32Next: %w", err)
	}
	return out, nil
}

func (winAPI) ProcessImage(pid uint32) (string, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return "", fmt.Errorf("OpenProcess %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_PATH)
	for {
		n := uint32(len(buf))
		err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n)
		if err == nil {
			return windows.UTF16ToString(buf[:n]), nil
		}
		if !errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) || len(buf) >= 1<<15 {
			return "", fmt.Errorf("QueryFullProcessImageName %d: %w", pid, err)
		}
		buf = make([]uint16, 2*len(buf)) // a path longer than MAX_PATH
	}
}

func (winAPI) Volumes() (map[string]string, error) {
	buf := make([]uint16, 256)
	n, err := windows.GetLogicalDriveStrings(uint32(len(buf)), &buf[0])
	if err != nil {
		return nil, fmt.Errorf("GetLogicalDriveStrings: %w", err)
	}
	out := map[string]string{}
	target := make([]uint16, windows.MAX_PATH)
	for _, root := range splitUTF16z(buf[:n]) {
		if len(root) < 2 {
			continue
		}
		drive := root[:2] // "C:"
		d, _ := windows.UTF16PtrFromString(drive)
		m, err := windows.QueryDosDevice(d, &target[0], uint32(len(target)))
		if err != nil || m == 0 {
			continue
		}
		out[windows.UTF16ToString(target[:m])] = drive
	}
	return out, nil
}

// splitUTF16z splits a list of NUL-terminated UTF-16 strings.
func splitUTF16z(b []uint16) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			if i > start {
				out = append(out, windows.UTF16ToString(b[start:i]))
			}
			start = i + 1
		}
	}
	return out
}

func (winAPI) StartSuspended(path string, argv []string, stdio Stdio) (Child, error) {
	cmdline := windows.ComposeCommandLine(argv)
	cl, err := windows.UTF16PtrFromString(cmdline)
	if err != nil {
		return nil, err
	}
	app, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	// The child inherits inheritable duplicates of stdio's handles, and
	// only those (PROC_THREAD_ATTRIBUTE_HANDLE_LIST): this process's
	// own handles stay as they are, and no other inheritable handle of
	// it leaks into the child.
	self := windows.CurrentProcess()
	var std [3]windows.Handle
	var inherit []windows.Handle
	for i, f := range [3]*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr} {
		if f == nil {
			continue
		}
		h := windows.Handle(f.Fd())
		if h == 0 || h == windows.InvalidHandle {
			continue // no such handle here (a process without a console)
		}
		var dup windows.Handle
		if err := windows.DuplicateHandle(self, h, self, &dup, 0, true, windows.DUPLICATE_SAME_ACCESS); err != nil {
			return nil, fmt.Errorf("DuplicateHandle of %s: %w", f.Name(), err)
		}
		defer windows.CloseHandle(dup)
		std[i] = dup
		inherit = append(inherit, dup)
	}
	attrs, err := windows.NewProcThreadAttributeList(1)
	if err != nil {
		return nil, fmt.Errorf("InitializeProcThreadAttributeList: %w", err)
	}
	defer attrs.Delete()
	if len(inherit) > 0 {
		if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST, unsafe.Pointer(&inherit[0]), uintptr(len(inherit))*unsafe.Sizeof(inherit[0])); err != nil {
			return nil, fmt.Errorf("UpdateProcThreadAttribute(HANDLE_LIST): %w", err)
		}
	}
	var si windows.StartupInfoEx
	si.Cb = uint32(unsafe.Sizeof(si))
	si.Flags = windows.STARTF_USESTDHANDLES
	si.StdInput, si.StdOutput, si.StdErr = std[0], std[1], std[2]
	si.ProcThreadAttributeList = attrs.List()
	var pi windows.ProcessInformation
	flags := uint32(windows.CREATE_SUSPENDED | windows.EXTENDED_STARTUPINFO_PRESENT)
	err = windows.CreateProcess(app, cl, nil, nil, len(inherit) > 0, flags, nil, nil, &si.StartupInfo, &pi)
	runtime.KeepAlive(inherit)
	if err != nil {
		return nil, fmt.Errorf("CreateProcess: %w", err)
	}
	return &winChild{pi: pi}, nil
}

type winChild struct {
	pi     windows.ProcessInformation
	mu     sync.Mutex
	closed bool // the process handle is closed (Wait returned)
}

func (c *winChild) Pid() uint32 { return c.pi.ProcessId }

func (c *winChild) Resume() error {
	_, err := windows.ResumeThread(c.pi.Thread)
	windows.CloseHandle(c.pi.Thread)
	return err
}

func (c *winChild) Wait() (uint32, error) {
	defer func() {
		c.mu.Lock()
		if !c.closed {
			c.closed = true
			windows.CloseHandle(c.pi.Process)
		}
		c.mu.Unlock()
	}()
	if _, err := windows.WaitForSingleObject(c.pi.Process, windows.INFINITE); err != nil {
		return 0, fmt.Errorf("WaitForSingleObject: %w", err)
	}
	var code uint32
	if err := windows.GetExitCodeProcess(c.pi.Process, &code); err != nil {
		return 0, fmt.Errorf("GetExitCodeProcess: %w", err)
	}
	return code, nil
}

func (c *winChild) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed { // never a handle closed (and maybe reused) since
		_ = windows.TerminateProcess(c.pi.Process, 1)
	}
}
