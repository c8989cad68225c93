package live

// Win32 ETW bindings, generated into zsyscall_windows.go by
// `go generate` (golang.org/x/sys/windows/mkwinsyscall): no cgo. The ETW
// functions return a Win32 error code, not a BOOL; OpenTraceW returns
// INVALID_PROCESSTRACE_HANDLE on failure, with the error in GetLastError.
// Only the amd64 and arm64 builds call them (api_windows.go): a
// TRACEHANDLE is 64 bits, one register there.

//go:generate go run golang.org/x/sys/windows/mkwinsyscall -output zsyscall_windows.go syscall_windows.go

//sys	startTrace(handle *SessionHandle, name *uint16, props *EventTraceProperties) (ret error) = advapi32.StartTraceW
//sys	controlTrace(handle SessionHandle, name *uint16, props *EventTraceProperties, code uint32) (ret error) = advapi32.ControlTraceW
//sys	queryAllTraces(props **EventTraceProperties, count uint32, returned *uint32) (ret error) = advapi32.QueryAllTracesW
//sys	openTrace(logfile *EventTraceLogfile) (handle TraceHandle, err error) [failretval==invalidProcessTraceHandle] = advapi32.OpenTraceW
//sys	processTrace(handles *TraceHandle, count uint32, start *int64, end *int64) (ret error) = advapi32.ProcessTrace
//sys	closeTrace(handle TraceHandle) (ret error) = advapi32.CloseTrace
//sys	traceSetInformation(handle SessionHandle, class uint32, info *ClassicEventID, length uint32) (ret error) = advapi32.TraceSetInformation
//sys	traceEvent(handle SessionHandle, header *EventTraceHeader) (ret error) = advapi32.TraceEvent
//sys	enableTraceEx2(handle SessionHandle, provider *GUID, code uint32, level uint8, any uint64, all uint64, timeout uint32, params uintptr) (ret error) = advapi32.EnableTraceEx2
//sys	eventRegister(provider *GUID, callback uintptr, context uintptr, handle *ProviderHandle) (ret error) = advapi32.EventRegister
//sys	eventUnregister(handle ProviderHandle) (ret error) = advapi32.EventUnregister
//sys	eventWrite(handle ProviderHandle, desc *EventDescriptor, count uint32, data *eventDataDescriptor) (ret error) = advapi32.EventWrite
//sys	eventAccessControl(guid *GUID, operation uint32, sid *windows.SID, rights uint32, allow bool) (ret error) = advapi32.EventAccessControl
//sys	queryPerformanceCounter(counter *int64) (err error) = kernel32.QueryPerformanceCounter
//sys	queryPerformanceFrequency(freq *int64) (err error) = kernel32.QueryPerformanceFrequency
//sys	setConsoleCtrlHandler(handler uintptr, add bool) (err error) = kernel32.SetConsoleCtrlHandler
//sys	needCurrentDirectoryForExePath(name *uint16) (need bool) = kernel32.NeedCurrentDirectoryForExePathW

// invalidProcessTraceHandle is what OpenTraceW returns on failure.
const invalidProcessTraceHandle = ^TraceHandle(0)

// eventDataDescriptor is EVENT_DATA_DESCRIPTOR: one piece of an
// EventWrite payload.
type eventDataDescriptor struct {
	Ptr      uint64
	Size     uint32
	Reserved uint32
}
