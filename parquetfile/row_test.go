package parquetfile

// row is one event as the tests read it back with parquet-go's reader:
// the test's own model of the schema (docs/parquet.md), kept apart from
// the writer's column table (schema.go); TestSchemaMatchesModel checks
// that the two agree.
//
// The comments below were the writer's until it wrote columns itself.
// Field order is column order. Optional columns are
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
//
// Encodings are not part of the schema (docs/parquet.md): ids and times
// are delta-encoded, integers that repeat within a row group (process,
// CPU, flags, sizes, fds, inodes, handles) dictionary-encoded, which
// leaves zstd a fraction of the bytes (0.79x the file, 0.96x the CPU of
// delta-encoding them; docs/benchmarks.md). Addresses and positions that
// rarely repeat (request, sector, offset, cause) stay plain.
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
	Code       int64  `parquet:"code,dict"`
	Failed     bool   `parquet:"failed"`
	Flags      string `parquet:"flags,dict"`

	// Who.
	CPU         int64  `parquet:"cpu,dict"`
	Pid         int64  `parquet:"pid,dict"`
	Tid         int64  `parquet:"tid,dict"`
	ProcStartNS int64  `parquet:"proc_start_ns,dict"`
	Comm        string `parquet:"comm,dict"`
	Image       string `parquet:"image,dict,optional"`
	Cmdline     string `parquet:"cmdline,dict,optional"`

	// What.
	Path        string `parquet:"path,dict,optional"`
	Path2       string `parquet:"path2,dict,optional"`
	FD          *int32 `parquet:"fd,dict"`
	FileObject  uint64 `parquet:"file_object,dict,optional"`
	FileKey     uint64 `parquet:"file_key,dict,optional"`
	Inode       uint64 `parquet:"inode,dict,optional"`
	Offset      *int64 `parquet:"offset"`
	Size        uint64 `parquet:"size,dict"`
	Bytes       *int64 `parquet:"bytes,dict"`
	OpenFlags   int64  `parquet:"open_flags,dict"`
	Mode        int64  `parquet:"mode,dict"`
	IOFlags     int64  `parquet:"io_flags,dict"`
	Info        int64  `parquet:"info,dict"`
	Disposition int32  `parquet:"disposition,dict"`
	Priority    int32  `parquet:"priority,dict"`

	// Block I/O and causes.
	Dev         string  `parquet:"dev,dict,optional"`
	DevName     string  `parquet:"dev_name,dict,optional"`
	Sector      *uint64 `parquet:"sector"`
	Request     uint64  `parquet:"request,optional"`
	Cause       int64   `parquet:"cause,optional"`
	CausedIOs   int64   `parquet:"caused_ios,dict"`
	CausedBytes int64   `parquet:"caused_bytes,dict"`

	Note string `parquet:"note,optional"`

	// Since version 2.
	Stack []string `parquet:"stack,list,optional"`

	// Since version 3.
	ReadCached    *int64 `parquet:"read_cached,dict,optional"`
	ReadAhead     *int64 `parquet:"read_ahead,dict,optional"`
	ReadDisk      *int64 `parquet:"read_disk,dict,optional"`
	ReadWaited    *int64 `parquet:"read_waited,dict,optional"`
	ReadAheadFrom int64  `parquet:"read_ahead_from,optional"`
}
