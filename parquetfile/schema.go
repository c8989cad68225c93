package parquetfile

// SchemaVersion is the version of the row schema (docs/parquet.md).
const SchemaVersion = 3

// columns are the schema's columns, in column order (docs/parquet.md), and
// the values of the row group being filled.
//
// Timestamps are microseconds, UTC (TIMESTAMP(MICROS, true): what Spark,
// Trino, ClickHouse and DuckDB all read as a timestamp); the exact time is
// trace_start_ns + time_ns. Addresses and handles (file_object, file_key,
// request) and byte or sector counts are unsigned 64-bit; ids and times
// signed 64-bit (ids are below 2^53); process and thread ids signed 64-bit
// so every engine reads them without an unsigned type.
//
// Encodings are not part of the schema: ids and times are delta-encoded;
// integers that repeat within a row group (process, CPU, flags, sizes,
// fds, inodes, handles) dictionary-encoded, which leaves zstd a fraction
// of the bytes; addresses and positions that rarely repeat (request,
// sector, offset, cause) plain; strings dictionary-encoded.
type columns struct {
	// The trace's identity, the same on every row of a file.
	host, os, osVersion, traceID constColumn
	traceStart, traceStartNS     constColumn
	source                       constColumn

	// The event.
	id, timeNS, ts, durationNS, waitNS intColumn
	layer, op, native, status          strColumn
	code                               intColumn
	failed                             boolColumn
	flags                              strColumn

	// Who.
	cpu, pid, tid, procStartNS intColumn
	comm, image, cmdline       strColumn

	// What.
	path, path2                                           strColumn
	fd, fileObject, fileKey, inode, offset, size, bytes   intColumn
	openFlags, mode, ioFlags, info, disposition, priority intColumn

	// Block I/O and causes.
	dev, devName           strColumn
	sector, request, cause intColumn
	causedIOs, causedBytes intColumn
	note                   strColumn

	// Since version 2: the event\'s stack.
	stack listColumn

	// Since version 3: a read's page-cache provenance.
	readCached, readAhead, readDisk, readWaited, readAheadFrom intColumn
}

// init sets every column's spec, preallocates room for n rows and returns
// the columns in schema order.
func (c *columns) init(n int) []column {
	var all []column
	konst := func(col *constColumn, name string, t colType) {
		col.colSpec = colSpec{name: name, typ: t, enc: encDict, bounds: true}
		all = append(all, col)
	}
	ints := func(col *intColumn, name string, t colType, opt bool, enc colEnc, bounds bool) {
		col.colSpec = colSpec{name: name, typ: t, optional: opt, enc: enc, bounds: bounds}
		col.vals = make([]int64, 0, n)
		if opt {
			col.def = make([]uint8, 0, n)
		}
		all = append(all, col)
	}
	strs := func(col *strColumn, name string, opt, bounds bool) {
		col.colSpec = colSpec{name: name, typ: typeString, optional: opt, enc: encDict, bounds: bounds}
		col.vals = make([]string, 0, n)
		if opt {
			col.def = make([]uint8, 0, n)
		}
		all = append(all, col)
	}
	const req, opt = false, true
	konst(&c.host, "host", typeString)
	konst(&c.os, "os", typeString)
	konst(&c.osVersion, "os_version", typeString)
	konst(&c.traceID, "trace_id", typeString)
	konst(&c.traceStart, "trace_start", typeTimestamp)
	konst(&c.traceStartNS, "trace_start_ns", typeInt64)
	konst(&c.source, "source", typeString)

	ints(&c.id, "id", typeInt64, req, encDelta, true)
	ints(&c.timeNS, "time_ns", typeInt64, req, encDelta, true)
	ints(&c.ts, "ts", typeTimestamp, req, encDelta, true)
	ints(&c.durationNS, "duration_ns", typeInt64, req, encDelta, true)
	ints(&c.waitNS, "wait_ns", typeInt64, req, encDelta, true)
	strs(&c.layer, "layer", req, true)
	strs(&c.op, "op", req, true)
	strs(&c.native, "native", req, false)
	strs(&c.status, "status", req, true)
	ints(&c.code, "code", typeInt64, req, encDict, true)
	c.failed.colSpec = colSpec{name: "failed", typ: typeBool, bounds: true}
	c.failed.vals = make([]bool, 0, n)
	all = append(all, &c.failed)
	strs(&c.flags, "flags", req, false)

	ints(&c.cpu, "cpu", typeInt64, req, encDict, true)
	ints(&c.pid, "pid", typeInt64, req, encDict, true)
	ints(&c.tid, "tid", typeInt64, req, encDict, true)
	ints(&c.procStartNS, "proc_start_ns", typeInt64, req, encDict, true)
	strs(&c.comm, "comm", req, false)
	strs(&c.image, "image", opt, false)
	strs(&c.cmdline, "cmdline", opt, false)

	strs(&c.path, "path", opt, false)
	strs(&c.path2, "path2", opt, false)
	ints(&c.fd, "fd", typeInt32, opt, encDict, true)
	ints(&c.fileObject, "file_object", typeUint64, opt, encDict, true)
	ints(&c.fileKey, "file_key", typeUint64, opt, encDict, true)
	ints(&c.inode, "inode", typeUint64, opt, encDict, true)
	ints(&c.offset, "offset", typeInt64, opt, encPlain, true)
	ints(&c.size, "size", typeUint64, req, encDict, true)
	ints(&c.bytes, "bytes", typeInt64, opt, encDict, true)
	ints(&c.openFlags, "open_flags", typeInt64, req, encDict, true)
	ints(&c.mode, "mode", typeInt64, req, encDict, true)
	ints(&c.ioFlags, "io_flags", typeInt64, req, encDict, true)
	ints(&c.info, "info", typeInt64, req, encDict, true)
	ints(&c.disposition, "disposition", typeInt32, req, encDict, true)
	ints(&c.priority, "priority", typeInt32, req, encDict, true)

	strs(&c.dev, "dev", opt, true)
	strs(&c.devName, "dev_name", opt, false)
	ints(&c.sector, "sector", typeUint64, opt, encPlain, true)
	ints(&c.request, "request", typeUint64, opt, encPlain, true)
	ints(&c.cause, "cause", typeInt64, opt, encPlain, true)
	ints(&c.causedIOs, "caused_ios", typeInt64, req, encDict, true)
	ints(&c.causedBytes, "caused_bytes", typeInt64, req, encDict, true)
	strs(&c.note, "note", opt, false)
	c.stack.colSpec = colSpec{name: "stack", typ: typeString, optional: true, list: true, enc: encDict}
	all = append(all, &c.stack)
	ints(&c.readCached, "read_cached", typeInt64, opt, encDict, true)
	ints(&c.readAhead, "read_ahead", typeInt64, opt, encDict, true)
	ints(&c.readDisk, "read_disk", typeInt64, opt, encDict, true)
	ints(&c.readWaited, "read_waited", typeInt64, opt, encDict, true)
	ints(&c.readAheadFrom, "read_ahead_from", typeInt64, opt, encPlain, true)
	return all
}
