package parquetfile

// SchemaVersion is the version of the row schema (docs/parquet.md).
const SchemaVersion = 1

// row is one event. Field order is column order. Optional columns are
// pointers (null when nil) or strings/ints tagged optional (null when
// empty or zero: an empty path, no cause).
//
// Timestamps are microseconds, UTC (TIMESTAMP(MICROS, true): what Spark,
// Trino, ClickHouse and DuckDB all read as a timestamp); the exact time is
// trace_start_ns + time_ns.
//
// Integers that are addresses or handles (file_object, file_key, request)
// and byte or sector counts are unsigned 64-bit; ids and times are signed
// 64-bit (ids are below 2^53). Process and thread ids are signed 64-bit so
// every engine reads them without an unsigned type.
type row struct {
	// The trace's identity, the same on every row of a file.
	Host         string `parquet:"host,dict"`
	OS           string `parquet:"os,dict"`
	OSVersion    string `parquet:"os_version,dict"`
	TraceID      string `parquet:"trace_id,dict"`
	TraceStart   int64  `parquet:"trace_start,timestamp(microsecond),delta"`
	TraceStartNS int64  `parquet:"trace_start_ns,delta"`
	Source       string `parquet:"source,dict"`

	// The event.
	ID         int64  `parquet:"id,delta"`
	TimeNS     int64  `parquet:"time_ns,delta"`
	TS         int64  `parquet:"ts,timestamp(microsecond),delta"`
	DurationNS int64  `parquet:"duration_ns,delta"`
	WaitNS     int64  `parquet:"wait_ns,delta"`
	Layer      string `parquet:"layer,dict"`
	Op         string `parquet:"op,dict"`
	Native     string `parquet:"native,dict"`
	Status     string `parquet:"status,dict"`
	Code       int64  `parquet:"code,delta"`
	Failed     bool   `parquet:"failed"`
	Flags      string `parquet:"flags,dict"`

	// Who.
	CPU         int64  `parquet:"cpu,delta"`
	Pid         int64  `parquet:"pid,delta"`
	Tid         int64  `parquet:"tid,delta"`
	ProcStartNS int64  `parquet:"proc_start_ns,delta"`
	Comm        string `parquet:"comm,dict"`
	Image       string `parquet:"image,dict,optional"`
	Cmdline     string `parquet:"cmdline,dict,optional"`

	// What.
	Path        string `parquet:"path,dict,optional"`
	Path2       string `parquet:"path2,dict,optional"`
	FD          *int32 `parquet:"fd"`
	FileObject  uint64 `parquet:"file_object,optional"`
	FileKey     uint64 `parquet:"file_key,optional"`
	Inode       uint64 `parquet:"inode,optional"`
	Offset      *int64 `parquet:"offset"`
	Size        uint64 `parquet:"size,delta"`
	Bytes       *int64 `parquet:"bytes"`
	OpenFlags   int64  `parquet:"open_flags,delta"`
	Mode        int64  `parquet:"mode,delta"`
	IOFlags     int64  `parquet:"io_flags,delta"`
	Info        int64  `parquet:"info,delta"`
	Disposition int32  `parquet:"disposition,delta"`
	Priority    int32  `parquet:"priority,delta"`

	// Block I/O and causes.
	Dev         string  `parquet:"dev,dict,optional"`
	DevName     string  `parquet:"dev_name,dict,optional"`
	Sector      *uint64 `parquet:"sector"`
	Request     uint64  `parquet:"request,optional"`
	Cause       int64   `parquet:"cause,optional"`
	CausedIOs   int64   `parquet:"caused_ios,delta"`
	CausedBytes int64   `parquet:"caused_bytes,delta"`

	Note string `parquet:"note,optional"`
}
