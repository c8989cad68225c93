package kernel

import (
	"encoding/binary"
	"fmt"
)

// EventTrace opcodes (kernel group 0).
const (
	OpcodeHeader          = 0
	OpcodeExtension       = 5
	OpcodeRundownComplete = 8
	OpcodeEndExtension    = 32
	OpcodePartitionInfo   = 80
)

// LogfileHeader is the TRACE_LOGFILE_HEADER carried by the EventTrace
// header event, the first record of an ETL file (and of a real-time
// session).
type LogfileHeader struct {
	BufferSize         uint32
	MajorVersion       uint8 // Windows version, e.g. 6.2 or 10.0
	MinorVersion       uint8
	Build              uint32 // ProviderVersion: the OS build (9200, 26200)
	NumberOfProcessors uint32
	EndTime            int64 // FILETIME (unreliable in relogged files)
	TimerResolution    uint32
	MaximumFileSize    uint32
	LogFileMode        uint32
	BuffersWritten     uint32
	PointerSize        uint32
	EventsLost         uint32
	CPUSpeedMHz        uint32
	// UTCOffsetMinutes is the time zone bias of the recording machine
	// (positive west of Greenwich).
	UTCOffsetMinutes int32
	BootTime         int64  // FILETIME
	PerfFreq         uint64 // QPC frequency in Hz
	StartTime        int64  // FILETIME (UTC) of the header record's timestamp
	ClockType        uint32 // 1 QPC, 2 system time, 3 CPU cycles (ReservedFlags)
	BuffersLost      uint32
	SessionName      string
	LogFileName      string
}

// OSVersion renders the version and build as "6.2.9200".
func (h *LogfileHeader) OSVersion() string {
	return fmt.Sprintf("%d.%d.%d", h.MajorVersion, h.MinorVersion, h.Build)
}

// fixed part of the header: up to and including BuffersLost.
func headerSize(ptr int) int { return 272 + 2*(ptr-4) + 8 }

func decodeHeader(k Key, b []byte, ev *Event) error {
	le := binary.LittleEndian
	ps := int(k.PtrSize)
	if len(b) < headerSize(ps) {
		// Name the first field that does not fit.
		fields := []struct {
			name string
			off  int
			n    int
		}{
			{"BufferSize", 0, 4}, {"Version", 4, 4}, {"ProviderVersion", 8, 4}, {"NumberOfProcessors", 12, 4},
			{"EndTime", 16, 8}, {"TimerResolution", 24, 4}, {"MaximumFileSize", 28, 4}, {"LogFileMode", 32, 4},
			{"BuffersWritten", 36, 4}, {"StartBuffers", 40, 4}, {"PointerSize", 44, 4}, {"EventsLost", 48, 4},
			{"CpuSpeedInMHz", 52, 4}, {"LoggerName", 56, ps}, {"LogFileName", 56 + ps, ps},
			{"TimeZone", 56 + 2*ps, 176}, {"BootTime", 232 + 2*ps, 8}, {"PerfFreq", 240 + 2*ps, 8},
			{"StartTime", 248 + 2*ps, 8}, {"ReservedFlags", 256 + 2*ps, 4}, {"BuffersLost", 260 + 2*ps, 4},
		}
		for _, f := range fields {
			if f.off+f.n > len(b) {
				return &FieldError{Key: k, Field: f.name, Offset: f.off, Need: f.n, Len: len(b)}
			}
		}
	}
	h := &LogfileHeader{
		BufferSize:         le.Uint32(b[0:]),
		MajorVersion:       b[4],
		MinorVersion:       b[5],
		Build:              le.Uint32(b[8:]),
		NumberOfProcessors: le.Uint32(b[12:]),
		EndTime:            int64(le.Uint64(b[16:])),
		TimerResolution:    le.Uint32(b[24:]),
		MaximumFileSize:    le.Uint32(b[28:]),
		LogFileMode:        le.Uint32(b[32:]),
		BuffersWritten:     le.Uint32(b[36:]),
		PointerSize:        le.Uint32(b[44:]),
		EventsLost:         le.Uint32(b[48:]),
		CPUSpeedMHz:        le.Uint32(b[52:]),
	}
	tz := 56 + 2*ps
	h.UTCOffsetMinutes = int32(le.Uint32(b[tz:]))
	o := tz + 176
	h.BootTime = int64(le.Uint64(b[o:]))
	h.PerfFreq = le.Uint64(b[o+8:])
	h.StartTime = int64(le.Uint64(b[o+16:]))
	h.ClockType = le.Uint32(b[o+24:])
	h.BuffersLost = le.Uint32(b[o+28:])
	o += 32
	if o < len(b) {
		s, next := scanW(b, o)
		h.SessionName = WStr(s).String()
		if next < len(b) {
			s, _ = scanW(b, next)
			h.LogFileName = WStr(s).String()
		}
	}
	ev.Header = h
	return nil
}

func addEventTrace(t *table) {
	t.name(ClassEventTrace, OpcodeHeader, "Header")
	t.name(ClassEventTrace, OpcodeExtension, "Extension")
	t.name(ClassEventTrace, OpcodeRundownComplete, "RundownComplete")
	t.name(ClassEventTrace, OpcodeEndExtension, "EndExtension")
	t.name(ClassEventTrace, OpcodePartitionInfo, "PartitionInfoExtension")
	t.add(ClassEventTrace, []uint16{OpcodeHeader}, []uint16{0, 1, 2}, spec{kind: KindTraceHeader, fn: decodeHeader})
	t.ignore(ClassEventTrace, OpcodeExtension, OpcodeRundownComplete, OpcodeEndExtension, OpcodePartitionInfo)
}
