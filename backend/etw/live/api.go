package live

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/event"
)

// Kernel enable flags (EVENT_TRACE_PROPERTIES.EnableFlags, EVENT_TRACE_FLAG_*).
const (
	FlagProcess    = 0x00000001
	FlagThread     = 0x00000002
	FlagImageLoad  = 0x00000004
	FlagDiskIO     = 0x00000100 // DiskIo completions
	FlagDiskFileIO = 0x00000200 // FileIo name events, file rundown
	FlagDiskIOInit = 0x00000400 // DiskIo Init events (issuer)
	FlagFileIO     = 0x02000000 // FileIo OpEnd (completion, duration)
	FlagFileIOInit = 0x04000000 // FileIo requests
)

// DefaultFlags are the kernel events a trace session enables.
const DefaultFlags = FlagFileIO | FlagFileIOInit | FlagDiskIO | FlagDiskIOInit | FlagDiskFileIO |
	FlagProcess | FlagThread | FlagImageLoad

// tracedLayers are the layers a session with these flags traces: file
// requests with FileIo's (requests or their ends), block I/O with
// DiskIo's.
func tracedLayers(flags uint32) event.Layers {
	var l event.Layers
	if flags&(FlagFileIO|FlagFileIOInit) != 0 {
		l = l.With(event.LayerFile)
	}
	if flags&(FlagDiskIO|FlagDiskIOInit) != 0 {
		l = l.With(event.LayerBlock)
	}
	return l
}

// RundownFlags are the flags of the short rundown session whose stop
// enumerates every open file (FileRundown events).
const RundownFlags = FlagDiskFileIO | FlagDiskIO

// Log file modes (EVENT_TRACE_PROPERTIES.LogFileMode).
const (
	ModeFileSequential = 0x00000001
	ModeRealTime       = 0x00000100
	ModeSystemLogger   = 0x02000000
	ModeIndependent    = 0x08000000
)

// ControlTrace codes.
const (
	ControlQuery  = 0
	ControlStop   = 1
	ControlUpdate = 2
	ControlFlush  = 3
)

// OpenTrace / ProcessTrace modes.
const (
	processTraceModeRealTime     = 0x00000100
	processTraceModeRawTimestamp = 0x00001000
	processTraceModeEventRecord  = 0x10000000
)

// Clock types (WNODE_HEADER.ClientContext).
const (
	ClockQPC        = 1
	ClockSystemTime = 2
	ClockCPUCycles  = 3
)

// WNODE_HEADER.Flags.
const wnodeFlagTracedGUID = 0x00020000

// SystemTraceControlGUID is the kernel provider's control GUID
// (SystemTraceControlGuid): a user who is not an administrator needs
// access to it, besides the session's GUID, to start a kernel session.
var SystemTraceControlGUID = GUID{0x9e814aad, 0x3204, 0x11d2, [8]byte{0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39}}

// lostEventGUID is the class of the RT_LostEvent events a real-time
// consumer receives when the session drops events or buffers.
var lostEventGUID = GUID{0x6a399ae0, 0x4bc6, 0x4de9, [8]byte{0x87, 0x0b, 0x36, 0x57, 0xf8, 0x94, 0x7e, 0x7e}}

// MarkerGUID identifies the marker events `iotrace mark` writes into
// running iotrace sessions: iotrace's own provider (ownprovider).
var MarkerGUID = GUID(ownprovider.GUID)

// Errno is a Win32 error code returned by the ETW API.
type Errno uint32

// Win32 error codes the session logic acts on.
const (
	ErrAccessDenied      Errno = 5
	ErrInvalidHandle     Errno = 6 // ERROR_INVALID_HANDLE
	ErrBadLength         Errno = 24
	ErrInvalidParameter  Errno = 87
	ErrAlreadyExists     Errno = 183
	ErrMoreData          Errno = 234
	ErrCancelled         Errno = 1223
	ErrNoSystemResources Errno = 1450
	ErrNotFound          Errno = 4201 // ERROR_WMI_INSTANCE_NOT_FOUND: no such session
	// ErrCtxClosePending is CloseTrace's answer when it was called from
	// outside ProcessTrace's callbacks while buffers were still being
	// delivered: the close completes when the last callback returns (a
	// success, not a failure).
	ErrCtxClosePending Errno = 7007 // ERROR_CTX_CLOSE_PENDING
)

// errnoText names the codes above.
var errnoText = map[Errno]string{
	ErrAccessDenied:      "access denied (ERROR_ACCESS_DENIED)",
	ErrInvalidHandle:     "invalid handle (ERROR_INVALID_HANDLE)",
	ErrAlreadyExists:     "a session of this name or GUID already exists (ERROR_ALREADY_EXISTS)",
	ErrNoSystemResources: "no system resources left for the session (ERROR_NO_SYSTEM_RESOURCES)",
	ErrNotFound:          "no such session (ERROR_WMI_INSTANCE_NOT_FOUND)",
	ErrInvalidParameter:  "invalid parameter (ERROR_INVALID_PARAMETER)",
	ErrMoreData:          "more data (ERROR_MORE_DATA)",
	ErrCancelled:         "cancelled (ERROR_CANCELLED)",
}

func (e Errno) Error() string {
	if s, ok := errnoText[e]; ok {
		return s
	}
	return fmt.Sprintf("Win32 error %d", uint32(e))
}

// SessionHandle is the TRACEHANDLE StartTrace returns.
type SessionHandle uint64

// TraceHandle is the PROCESSTRACE_HANDLE OpenTrace returns.
type TraceHandle uint64

// ProviderHandle is the REGHANDLE EventRegister returns.
type ProviderHandle uint64

// SessionConfig describes a kernel session to start. Every session
// iotrace starts is a system logger (EVENT_TRACE_SYSTEM_LOGGER_MODE: a
// kernel session of its own name, Windows 8 and later).
type SessionConfig struct {
	// Name of the session.
	Name string
	// LogFile, when set, makes a file-mode session writing this .etl file;
	// otherwise the session is real-time.
	LogFile string
	// EnableFlags are the kernel Flag* bits.
	EnableFlags uint32
	// BufferSizeKB, MinBuffers and MaxBuffers size the session's buffers
	// (0: the OS default).
	BufferSizeKB, MinBuffers, MaxBuffers uint32
	// FlushTimer is the flush period in seconds (0: the OS default).
	FlushTimer uint32
	// ClockType is ClockQPC, ClockSystemTime or ClockCPUCycles.
	ClockType uint32
	// Guid is the session GUID (Wnode.Guid): one of iotrace's session
	// GUIDs (guids.go), which an administrator can grant in advance.
	Guid GUID
	// StackEvents are the kernel events the session walks the stack of
	// (set with SetStackTracing once the session is started).
	StackEvents []ClassicEventID
}

// SessionStatus is what ControlTrace and QueryAllTraces report about a
// running session.
type SessionStatus struct {
	Name, LogFile                       string
	Handle                              SessionHandle
	Guid                                GUID
	BufferSizeKB                        uint32
	MinBuffers, MaxBuffers              uint32
	NumberOfBuffers, FreeBuffers        uint32
	BuffersWritten                      uint32
	EventsLost                          uint32
	LogBuffersLost, RealTimeBuffersLost uint32
	EnableFlags, LogFileMode, ClockType uint32
	FlushTimer                          uint32
	LoggerThreadID                      uint64
}

// RealTime reports whether the session delivers to real-time consumers.
func (s *SessionStatus) RealTime() bool { return s.LogFileMode&ModeRealTime != 0 }

// OpenSpec says what OpenTrace opens.
type OpenSpec struct {
	// SessionName opens a running session in real time.
	SessionName string
	// LogFile opens an .etl file instead.
	LogFile string
}

// Consumer receives the events of an opened trace. Event is called on the
// thread running ProcessTrace, one event at a time; it must return fast
// and must not keep er or anything it points to.
type Consumer interface {
	Event(er *EventRecord)
}

// Process is a running process.
type Process struct {
	Pid, PPid uint32
	Name      string // image file name ("svchost.exe")
}

// Stdio are the standard input, output and error a started command gets:
// files of this process, which stay open in it (the child inherits
// copies). A nil file leaves that handle unset in the child.
type Stdio struct {
	Stdin, Stdout, Stderr *os.File
}

// API is the part of the Win32 API the live backend uses. The Windows
// implementation calls advapi32 and kernel32; tests use a fake that
// models the behaviour the backend depends on (fake_test.go).
type API interface {
	// StartTrace starts a kernel session (StartTraceW).
	StartTrace(cfg *SessionConfig) (SessionHandle, error)
	// ControlTrace queries, flushes or stops a session by handle or name
	// (ControlTraceW) and returns its status.
	ControlTrace(h SessionHandle, name string, code uint32) (SessionStatus, error)
	// QueryAllTraces lists every running session (QueryAllTracesW).
	QueryAllTraces() ([]SessionStatus, error)
	// OpenTrace opens a session in real time or an .etl file for
	// consumption by c, with raw (session clock) timestamps (OpenTraceW,
	// PROCESS_TRACE_MODE_EVENT_RECORD). It returns the log-file header.
	OpenTrace(spec OpenSpec, c Consumer) (TraceHandle, TraceLogfileHeader, error)
	// ProcessTrace delivers the events of an opened trace to its consumer
	// until the session stops or CloseTrace is called (ProcessTrace). It
	// blocks; call it on its own goroutine. A real-time session is
	// connected to only here: one stopped before fails with
	// ERROR_WMI_INSTANCE_NOT_FOUND, its buffers lost.
	ProcessTrace(h TraceHandle) error
	// CloseTrace closes an opened trace (CloseTrace).
	CloseTrace(h TraceHandle) error
	// TraceEvent writes a classic event with payload data into a session
	// (TraceEvent). Windows documents ERROR_INVALID_HANDLE for the NT
	// Kernel Logger's handle: a kernel session may refuse it.
	TraceEvent(h SessionHandle, guid GUID, opcode uint8, data []byte) error
	// RegisterProvider registers this process as the provider guid
	// (EventRegister).
	RegisterProvider(guid GUID) (ProviderHandle, error)
	// UnregisterProvider undoes RegisterProvider (EventUnregister).
	UnregisterProvider(h ProviderHandle) error
	// EnableProvider enables provider guid on session h, every level and
	// keyword (EnableTraceEx2, EVENT_CONTROL_CODE_ENABLE_PROVIDER).
	EnableProvider(h SessionHandle, guid GUID) error
	// WriteEvent writes an event of the registered provider h with
	// descriptor d and payload data into every session that enabled the
	// provider (EventWrite).
	WriteEvent(h ProviderHandle, d EventDescriptor, data []byte) error
	// Clock returns the QPC frequency and a (QPC, UTC FILETIME) pair taken
	// together.
	Clock() (freq, qpc, filetime int64)
	// OSVersion returns the Windows version.
	OSVersion() (major, minor, build uint32)
	// Processors is the number of logical processors, in every processor
	// group: ETW gives each its buffers (GetActiveProcessorCount).
	Processors() uint32
	// Pid is this process's id.
	Pid() uint32
	// FileSize returns the size of the file at path (os.Stat): record to
	// .etl checks that the session wrote its file.
	FileSize(path string) (int64, error)
	// Processes lists the running processes.
	Processes() ([]Process, error)
	// ProcessImage returns the full path of the executable of process
	// pid in DOS form ("C:\Windows\System32\svchost.exe";
	// QueryFullProcessImageNameW). It fails for processes this one may
	// not query (protected, System) and for those that are gone.
	ProcessImage(pid uint32) (string, error)
	// ProgramSearch returns the directories CreateProcess searches for a
	// program named without a path, and IsFile whether a path names a
	// file: findProgram (program.go) resolves a command with them.
	ProgramSearch() ProgramSearch
	IsFile(path string) bool
	// StartSuspended starts the program at path app (a full path, as
	// findProgram resolves it) with the command line argv, suspended, for
	// Child.Resume once the session runs. The child's standard input,
	// output and error are stdio's files, and it inherits no other
	// handle.
	StartSuspended(app string, argv []string, stdio Stdio) (Child, error)
	// Volumes maps NT device paths ("\Device\HarddiskVolume3") to drive
	// letters ("C:") (QueryDosDeviceW).
	Volumes() (map[string]string, error)
	// SetStackTracing asks session h for a stack walk (a StackWalk event
	// following the event) on each of the kernel events ids; an empty
	// list turns stack tracing off (TraceSetInformation,
	// TraceStackTracingInfo). Call it after StartTrace.
	SetStackTracing(h SessionHandle, ids []ClassicEventID) error
	// OpenImage opens an executable image file (a Win32 path, or an NT
	// path under \\?\GLOBALROOT) to read its identity.
	OpenImage(path string) (ImageFile, error)
	// GrantTracing gives the account named user (DOMAIN\name, or a SID
	// string) the rights to start and consume iotrace's kernel sessions:
	// on each session GUID and on the kernel provider's
	// (EventAccessControl). It needs an administrator.
	GrantTracing(user string, guids []GUID) error
}

// TraceStackTracingInfo is the TRACE_INFO_CLASS of TraceSetInformation
// that sets the kernel events to walk the stack of.
const TraceStackTracingInfo = 3

// MaxStackTracingEvents is the most events TraceSetInformation takes in
// one TraceStackTracingInfo list.
const MaxStackTracingEvents = 256

// ClassicEventID is CLASSIC_EVENT_ID: a kernel event by its class GUID
// and event type (opcode).
type ClassicEventID struct {
	EventGUID GUID
	Type      uint8
	Reserved  [7]uint8
}

// The extended data pointer of an item is a ULONGLONG; read and write it
// as a pointer without converting an integer to a pointer.
func itemData(it *EventHeaderExtendedDataItem) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&it.DataPtr))
}

// isErrno is errors.Is for Errno targets.
func isErrno(err error, e Errno) bool { return errors.Is(err, e) }

// closeTraceErr is CloseTrace's result: ERROR_CTX_CLOSE_PENDING (7007)
// means the close completes once the callbacks in progress return, a
// success; anything else (ERROR_MORE_DATA included) is an error.
func closeTraceErr(err error) error {
	if err == nil || errors.Is(err, syscall.Errno(ErrCtxClosePending)) {
		return nil
	}
	return err
}
