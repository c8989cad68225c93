package live

import "unsafe"

// Win32 ETW structures, laid out as the C headers lay them out on 64-bit
// Windows (amd64 and arm64, the only targets of the live backend). layout_test.go checks every offset and size against the
// documented C layout for both pointer sizes. They are plain Go types so
// that the session and conversion code, and its tests with a fake, build
// and run on any OS.

// GUID is a Windows GUID.
type GUID struct {
	Data1 uint32
	Data2 uint16
	Data3 uint16
	Data4 [8]byte
}

// WnodeHeader is WNODE_HEADER.
type WnodeHeader struct {
	BufferSize        uint32
	ProviderID        uint32
	HistoricalContext uint64 // the session handle after StartTrace/ControlTrace
	TimeStamp         int64  // union with CountLost, KernelHandle
	Guid              GUID
	ClientContext     uint32 // clock: 1 QPC, 2 system time, 3 CPU cycles
	Flags             uint32
}

// EventTraceProperties is EVENT_TRACE_PROPERTIES; the logger and log
// file names follow it in the same allocation, at the offsets it gives.
type EventTraceProperties struct {
	Wnode               WnodeHeader
	BufferSize          uint32 // KB
	MinimumBuffers      uint32
	MaximumBuffers      uint32
	MaximumFileSize     uint32
	LogFileMode         uint32
	FlushTimer          uint32
	EnableFlags         uint32
	AgeLimit            int32
	NumberOfBuffers     uint32
	FreeBuffers         uint32
	EventsLost          uint32
	BuffersWritten      uint32
	LogBuffersLost      uint32
	RealTimeBuffersLost uint32
	LoggerThreadID      uintptr // HANDLE
	LogFileNameOffset   uint32
	LoggerNameOffset    uint32
}

// EventTraceHeader is EVENT_TRACE_HEADER.
type EventTraceHeader struct {
	Size           uint16
	FieldTypeFlags uint16 // HeaderType, MarkerFlags
	Type           uint8  // Class.Type (opcode)
	Level          uint8
	Version        uint16
	ThreadID       uint32
	ProcessID      uint32
	TimeStamp      int64
	Guid           GUID
	KernelTime     uint32 // union with ProcessorTime
	UserTime       uint32
}

// EventTrace is EVENT_TRACE (classic consumer record).
type EventTrace struct {
	Header           EventTraceHeader
	InstanceID       uint32
	ParentInstanceID uint32
	ParentGuid       GUID
	MofData          uintptr
	MofLength        uint32
	ClientContext    uint32 // union with ETW_BUFFER_CONTEXT
}

// TimeZoneInformation is TIME_ZONE_INFORMATION.
type TimeZoneInformation struct {
	Bias         int32
	StandardName [32]uint16
	StandardDate [8]uint16 // SYSTEMTIME
	StandardBias int32
	DaylightName [32]uint16
	DaylightDate [8]uint16
	DaylightBias int32
}

// TraceLogfileHeader is TRACE_LOGFILE_HEADER (in-memory form).
type TraceLogfileHeader struct {
	BufferSize         uint32
	Version            uint32
	ProviderVersion    uint32
	NumberOfProcessors uint32
	EndTime            int64
	TimerResolution    uint32
	MaximumFileSize    uint32
	LogFileMode        uint32
	BuffersWritten     uint32
	StartBuffers       uint32 // union with LogInstanceGuid
	PointerSize        uint32
	EventsLost         uint32
	CPUSpeedInMHz      uint32
	LoggerName         uintptr // the OS's pointers, never read
	LogFileName        uintptr
	TimeZone           TimeZoneInformation
	BootTime           int64
	PerfFreq           int64
	StartTime          int64
	ReservedFlags      uint32
	BuffersLost        uint32
}

// EventTraceLogfile is EVENT_TRACE_LOGFILEW, the argument of OpenTraceW.
// The names are Go pointers, so that the strings they point to stay
// alive while the structure does (a uintptr would not keep them).
type EventTraceLogfile struct {
	LogFileName         *uint16
	LoggerName          *uint16
	CurrentTime         int64
	BuffersRead         uint32
	ProcessTraceMode    uint32 // union with LogFileMode
	CurrentEvent        EventTrace
	LogfileHeader       TraceLogfileHeader
	BufferCallback      uintptr
	BufferSize          uint32
	Filled              uint32
	EventsLost          uint32
	EventRecordCallback uintptr // union with EventCallback
	IsKernelTrace       uint32
	Context             uintptr // an integer (the consumer's id), never a pointer
}

// EventDescriptor is EVENT_DESCRIPTOR.
type EventDescriptor struct {
	ID      uint16
	Version uint8
	Channel uint8
	Level   uint8
	Opcode  uint8
	Task    uint16
	Keyword uint64
}

// EventHeader is EVENT_HEADER.
type EventHeader struct {
	Size            uint16
	HeaderType      uint16
	Flags           uint16
	EventProperty   uint16
	ThreadID        uint32
	ProcessID       uint32
	TimeStamp       int64
	ProviderID      GUID
	EventDescriptor EventDescriptor
	KernelTime      uint32 // union with ProcessorTime
	UserTime        uint32
	ActivityID      GUID
}

// EtwBufferContext is ETW_BUFFER_CONTEXT.
type EtwBufferContext struct {
	ProcessorNumber uint8 // with Alignment: the u16 ProcessorIndex
	Alignment       uint8
	LoggerID        uint16
}

// EventHeaderExtendedDataItem is EVENT_HEADER_EXTENDED_DATA_ITEM.
type EventHeaderExtendedDataItem struct {
	Reserved1 uint16
	ExtType   uint16
	Linkage   uint16 // bit 0: another item follows
	DataSize  uint16
	DataPtr   uint64
}

// EventRecord is EVENT_RECORD, what the OS passes to the event callback.
type EventRecord struct {
	EventHeader       EventHeader
	BufferContext     EtwBufferContext
	ExtendedDataCount uint16
	UserDataLength    uint16
	ExtendedData      unsafe.Pointer // *EventHeaderExtendedDataItem
	UserData          unsafe.Pointer
	// UserContext is EVENT_TRACE_LOGFILE.Context as given to OpenTrace:
	// the consumer's id, a small integer, so not a pointer (the Go
	// runtime may reject an invalid pointer it finds on a stack).
	UserContext uintptr
}

// Sizes of the structures on 64-bit Windows.
const (
	sizeofEventTraceProperties = unsafe.Sizeof(EventTraceProperties{})
	sizeofEventTraceLogfile    = unsafe.Sizeof(EventTraceLogfile{})
	sizeofEventRecord          = unsafe.Sizeof(EventRecord{})
	sizeofEventHeader          = unsafe.Sizeof(EventHeader{})
)
