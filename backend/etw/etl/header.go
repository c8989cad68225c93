package etl

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
	"unicode/utf16"

	"github.com/iotrace/iotrace/event"
)

// Log file modes (TRACE_LOGFILE_HEADER.LogFileMode, EVENT_TRACE_*_MODE)
// the reader reports on.
const (
	LogFileModeSequential     = 0x00000001
	LogFileModeCircular       = 0x00000002
	LogFileModeRealTime       = 0x00000100
	LogFileModeRelog          = 0x00010000
	LogFileModeSystemLogger   = 0x02000000
	LogFileModeCompressed     = 0x04000000
	LogFileModeIndependent    = 0x08000000
	logFileModeNoPerProcessor = 0x10000000
)

// Clock types (TRACE_LOGFILE_HEADER.ReservedFlags, the session's
// WNODE_HEADER.ClientContext).
const (
	ClockTypeQPC        = 1 // QueryPerformanceCounter ticks at PerfFreq Hz
	ClockTypeSystemTime = 2 // FILETIME, 100 ns units
	ClockTypeCPUCycles  = 3 // CPU cycles at CPUSpeedMHz
)

// filetimeUnixEpoch is 1970-01-01 as a FILETIME (100 ns since 1601).
const filetimeUnixEpoch = 116444736000000000

// FILETIMEs whose time int64 nanoseconds since the Unix epoch can hold:
// from 1677-09-21 to 2262-04-11.
const (
	minFiletime = filetimeUnixEpoch + math.MinInt64/100 + 1
	maxFiletime = filetimeUnixEpoch + math.MaxInt64/100
)

// FiletimeToUnixNano converts a FILETIME (100 ns units since 1601-01-01
// UTC) to nanoseconds since the Unix epoch. A FILETIME of 0 or less (not
// set), or one beyond what int64 nanoseconds hold (a header's StartTime of
// the largest int64 wrapped to 2185), is unknown: 0.
func FiletimeToUnixNano(ft int64) int64 {
	if ft <= 0 || ft < minFiletime || ft > maxFiletime {
		return 0
	}
	return (ft - filetimeUnixEpoch) * 100
}

// FiletimeToTime converts a FILETIME to a UTC time.Time (the zero Time for
// 0).
func FiletimeToTime(ft int64) time.Time {
	if ft == 0 {
		return time.Time{}
	}
	return time.Unix(0, FiletimeToUnixNano(ft)).UTC()
}

// LogfileHeader is the TRACE_LOGFILE_HEADER carried by the first record of
// an ETL file, plus what the reader learned from the header buffer. Times
// are raw FILETIMEs; see the methods for conversions.
type LogfileHeader struct {
	// BufferSize is the session's buffer size in bytes.
	BufferSize uint32
	// OSMajor, OSMinor, SPMajor, SPMinor decode the Version field.
	OSMajor, OSMinor, SPMajor, SPMinor uint8
	// Build is the OS build number (ProviderVersion).
	Build uint32
	// NumberOfProcessors of the traced machine.
	NumberOfProcessors uint32
	// EndTime (FILETIME) is when the session stopped; unreliable in
	// relogged files.
	EndTime int64
	// TimerResolution in 100 ns units.
	TimerResolution uint32
	// MaximumFileSize in MB (0 = none).
	MaximumFileSize uint32
	// LogFileMode holds the LogFileMode* bits of the session.
	LogFileMode uint32
	// BuffersWritten is the number of buffers the logger wrote.
	BuffersWritten uint32
	// StartBuffers is reserved by the OS (1 in practice).
	StartBuffers uint32
	// PointerSize of the logging machine's kernel: 4 or 8. Records carry
	// their own pointer size; use this only for the header itself.
	PointerSize uint32
	// EventsLost counts events the session lost.
	EventsLost uint32
	// CPUSpeedMHz is the processor speed.
	CPUSpeedMHz uint32
	// TimeZoneBias is UTC minus local time in minutes; TimeZoneName the
	// standard-time zone name.
	TimeZoneBias int32
	TimeZoneName string
	// BootTime and StartTime are FILETIMEs (UTC).
	BootTime  int64
	StartTime int64
	// PerfFreq is the QPC frequency in Hz.
	PerfFreq int64
	// ClockType is the session clock (ClockType*; ReservedFlags).
	ClockType uint32
	// BuffersLost counts buffers the session lost.
	BuffersLost uint32
	// LoggerName and LogFileName are the session and file names.
	LoggerName, LogFileName string

	// HeaderTimestamp is the timestamp of the header record itself in the
	// session clock: the native time of StartTime and of time 0.
	HeaderTimestamp int64
	// CompressionFormat is the compression of compressed buffers (3 =
	// XPRESS), 0 when the file is not compressed.
	CompressionFormat uint16
}

// Offsets of TRACE_LOGFILE_HEADER fields that depend on the pointer size
// of the header record (two pointers, LoggerName and LogFileName, precede
// the time zone).
type headerLayout struct{ timeZone, bootTime, perfFreq, startTime, reservedFlags, buffersLost, names int }

var (
	layout64 = headerLayout{72, 248, 256, 264, 272, 276, 280}
	layout32 = headerLayout{64, 240, 248, 256, 264, 268, 272}
)

// parseLogfileHeader decodes a TRACE_LOGFILE_HEADER from payload, logged
// with pointers of ptrSize bytes.
func parseLogfileHeader(payload []byte, ptrSize int) (LogfileHeader, error) {
	var h LogfileHeader
	l := layout64
	if ptrSize == 4 {
		l = layout32
	}
	if len(payload) < l.names {
		return h, fmt.Errorf("TRACE_LOGFILE_HEADER: %d bytes, need at least %d for a %d-bit header", len(payload), l.names, ptrSize*8)
	}
	le := binary.LittleEndian
	h.BufferSize = le.Uint32(payload[0:])
	h.OSMajor, h.OSMinor, h.SPMajor, h.SPMinor = payload[4], payload[5], payload[6], payload[7]
	h.Build = le.Uint32(payload[8:])
	h.NumberOfProcessors = le.Uint32(payload[12:])
	h.EndTime = int64(le.Uint64(payload[16:]))
	h.TimerResolution = le.Uint32(payload[24:])
	h.MaximumFileSize = le.Uint32(payload[28:])
	h.LogFileMode = le.Uint32(payload[32:])
	h.BuffersWritten = le.Uint32(payload[36:])
	h.StartBuffers = le.Uint32(payload[40:])
	h.PointerSize = le.Uint32(payload[44:])
	h.EventsLost = le.Uint32(payload[48:])
	h.CPUSpeedMHz = le.Uint32(payload[52:])
	tz := payload[l.timeZone:]
	h.TimeZoneBias = int32(le.Uint32(tz))
	h.TimeZoneName = utf16z(tz[4 : 4+64])
	h.BootTime = int64(le.Uint64(payload[l.bootTime:]))
	h.PerfFreq = int64(le.Uint64(payload[l.perfFreq:]))
	h.StartTime = int64(le.Uint64(payload[l.startTime:]))
	h.ClockType = le.Uint32(payload[l.reservedFlags:])
	h.BuffersLost = le.Uint32(payload[l.buffersLost:])
	rest := payload[l.names:]
	var n int
	h.LoggerName, n = utf16zPrefix(rest)
	h.LogFileName, _ = utf16zPrefix(rest[n:])
	return h, nil
}

// utf16z decodes a NUL-terminated (or full-length) UTF-16LE string.
func utf16z(b []byte) string {
	s, _ := utf16zPrefix(b)
	return s
}

// utf16zPrefix decodes the NUL-terminated UTF-16LE string at the start of
// b and returns it and the bytes it used, terminator included.
func utf16zPrefix(b []byte) (string, int) {
	var u []uint16
	for i := 0; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			return string(utf16.Decode(u)), i + 2
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u)), len(b) &^ 1
}

// Compressed reports whether the session wrote compressed buffers.
func (h *LogfileHeader) Compressed() bool { return h.LogFileMode&LogFileModeCompressed != 0 }

// OSVersion renders the Windows version and build, e.g. "6.2.9200".
func (h *LogfileHeader) OSVersion() string {
	return fmt.Sprintf("%d.%d.%d", h.OSMajor, h.OSMinor, h.Build)
}

// Clock returns the session clock with time 0 at the header record.
// Unknown clock types are taken as QPC when PerfFreq is set (every file
// seen uses QPC), else as system time.
func (h *LogfileHeader) Clock() event.Clock {
	c := event.Clock{Origin: h.HeaderTimestamp}
	switch {
	case h.ClockType == ClockTypeSystemTime:
		c.Kind, c.Freq = event.ClockFiletime, 10_000_000
	case h.ClockType == ClockTypeCPUCycles && h.CPUSpeedMHz > 0:
		c.Kind, c.Freq = event.ClockCycles, uint64(h.CPUSpeedMHz)*1_000_000
	case h.PerfFreq > 0:
		c.Kind, c.Freq = event.ClockQPC, uint64(h.PerfFreq)
	default:
		c.Kind, c.Freq = event.ClockFiletime, 10_000_000
	}
	return c
}

// StartWall returns the UTC wall-clock time of time 0 in nanoseconds
// since the Unix epoch: StartTime, or for a system-time clock the header
// record's own FILETIME.
func (h *LogfileHeader) StartWall() int64 {
	if h.Clock().Kind == event.ClockFiletime && h.HeaderTimestamp != 0 {
		return FiletimeToUnixNano(h.HeaderTimestamp)
	}
	return FiletimeToUnixNano(h.StartTime)
}

// Nanos converts a record timestamp to nanoseconds from time 0 (the
// header record), the time base of the event model.
func (h *LogfileHeader) Nanos(ts int64) int64 { c := h.Clock(); return c.ToNanos(ts) }

// WallTime converts a record timestamp to UTC wall-clock time (the zero
// Time when that is beyond what int64 nanoseconds hold).
func (h *LogfileHeader) WallTime(ts int64) time.Time {
	w, n := h.StartWall(), h.Nanos(ts)
	if s := w + n; (w^s)&(n^s) < 0 {
		return time.Time{}
	}
	return time.Unix(0, w+n).UTC()
}

// The trace's time range, from time 0: a record's timestamp outside it is
// damage (counted and clamped to it by the reader). A session's records
// lie between its start and its end (the header's StartTime and EndTime:
// EndTime is a little early in relogged files, 2.5 s in a 12.6 s trace),
// so the range is the session's duration, and as much again, and an hour,
// on each side; without a believable EndTime, rangeUnknown on each side,
// so that a duration between two records never overflows int64
// nanoseconds.
const (
	rangeSlack   = int64(time.Hour)
	rangeUnknown = int64(1) << 61 // 73 years
)

// timeRange returns the trace's time range as record timestamps (the
// session clock's units).
func (h *LogfileHeader) timeRange() (lo, hi int64) {
	loNs, hiNs := -rangeUnknown, rangeUnknown
	if h.StartTime > 0 && h.EndTime >= h.StartTime && h.EndTime-h.StartTime < rangeUnknown/100 {
		d := (h.EndTime - h.StartTime) * 100
		loNs, hiNs = -d-rangeSlack, 2*d+rangeSlack
	}
	c := h.Clock()
	return nativeAt(c, loNs), nativeAt(c, hiNs)
}

// nativeAt returns the timestamp of clock c ns nanoseconds from time 0,
// saturated to int64.
func nativeAt(c event.Clock, ns int64) int64 {
	v := float64(c.Origin) + float64(ns)*float64(c.Freq)/1e9
	switch {
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return int64(v)
}

// EventHeader returns the event-model header of the trace: source, OS,
// version, CPUs, pointer size, start time and clock.
func (h *LogfileHeader) EventHeader() event.Header {
	return event.Header{
		Source:      event.SourceETLFile,
		OS:          "windows",
		OSVersion:   h.OSVersion(),
		CPUs:        h.NumberOfProcessors,
		PointerSize: uint8(h.PointerSize),
		StartWall:   h.StartWall(),
		Clock:       h.Clock(),
	}
}
