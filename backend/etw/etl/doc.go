// Package etl reads Windows Event Trace Log (.etl) files in pure Go, on any
// operating system, and yields their records as [record.Record] values:
// the same portable type the live Windows session produces, so one decoder
// serves both.
//
// # Use
//
//	r, err := etl.Open(path, etl.Options{})   // or etl.NewReader(readerAt, size, opts)
//	defer r.Close()
//	h := r.Header()                           // TRACE_LOGFILE_HEADER: build, CPUs, clock, loss...
//	stats, err := r.Read(ctx, func(rec *record.Record) error {
//		ns := clock.ToNanos(rec.Timestamp)    // clock := h.Clock(): ns from the trace start
//		...                                   // rec.UserData is valid only during the call
//		return nil
//	})
//
// or, pull style: rs := r.Records(); for { rec, err := rs.Next(); ... }.
// Every call to Records (or Read) is an independent pass from the start of
// the file: an offline consumer that needs two passes (names and rundowns
// first, events second) simply reads twice. [Reader.ReadKept] leaves out
// the records a pass does not want before the merge, where they cost
// least. NewReader indexes the buffers once (it reads their 0x48-byte
// headers, through 1 MiB reads while buffers are small). A pass reads the
// file 1 MiB at a time and holds one decompressed buffer per processor.
//
// # Memory
//
// Memory is bounded by what the file holds, never by what its fields
// claim: a pass holds one buffer per processor, allocated once at the size
// of that processor's largest buffer (a compressed buffer decompresses to
// at most the log-file header's BufferSize and [MaxRatio] times its
// compressed records: more is damage), a copy of it while it is compacted,
// and a 256 KiB read window; the index takes about 120 bytes per buffer;
// then the buffer cache. The cache keeps the decompressed
// buffers a pass read, up to [Options.CacheBudget] bytes (default
// [DefaultCacheBudget], 64 MiB; negative turns it off), so that the next
// pass neither reads nor decompresses them again; a file larger than the
// budget has the rest read again by every pass. Close releases it. A
// reader told up front which records its later passes want
// ([Reader.Compact] with a [Selection]) keeps the buffers compacted to
// those records instead, with a count of the others by kind, and serves
// them to passes that ask with that Selection ([Reader.RecordsSelected]);
// every other pass reads those buffers from the file again.
//
// # Order
//
// Windows writes one buffer stream per processor, so file order is not
// time order. By default ([OrderTime]) the reader groups the buffers by
// processor, orders each processor's buffers by SequenceNumber and merges
// the streams by record timestamp (ties: lower processor first, then file
// order), which is what pairing by IRP needs. [OrderFile] delivers the
// records as they lie in the file.
//
// # Records
//
// Every record header type is decoded: SYSTEM, COMPACT and PERFINFO kernel
// headers (32 and 64 bit; PERFINFO PEBS and PMC extensions become Ext
// items of types 7 and 8; PERFINFO records carry no thread or process:
// ThreadID and ProcessID are [record.NoID]), FULL (classic/MOF
// EVENT_TRACE_HEADER), INSTANCE, EVENT_HEADER (manifest and TraceLogging,
// with their extended data items) and TraceMessage (WPP) records. For
// kernel headers the reader sets Group, Opcode, Version and the classic
// GUID of the group as Provider ([GroupGUID]). PointerSize is per record:
// from the header type for kernel and classic records, from the
// EVENT_HEADER flags otherwise (a 64-bit file holds 32-bit WOW64 records).
// CPU is the processor of the record's buffer. TraceMessage records get
// HeaderType [HeaderMessage], their MessageNumber as ID, and the previous
// record's timestamp when they carry none. FileOffset is the record's file
// offset; in a compressed buffer, the buffer's file offset plus the
// record's offset in the decompressed data. Rare header types (TIMED,
// ERROR, WNODE and unknown ones) are skipped and counted.
//
// A record and its UserData and Ext alias the reader's buffers: they are
// valid until the next call to Next (or until the Read callback returns).
// Copy what must outlive that.
//
// # Time
//
// [LogfileHeader.Clock] describes the session clock (QPC, system time or
// CPU cycles) with time 0 at the header record, as TraceEvent computes
// relative times; [event.Clock.ToNanos] gives nanoseconds from the start,
// [LogfileHeader.StartWall] the UTC wall time of time 0, and
// [LogfileHeader.WallTime] the wall time of any timestamp.
// [LogfileHeader.EventHeader] fills an [event.Header] for the trace.
//
// # Loss and damage
//
// Nothing is dropped silently. [Records.Stats] (and the Stats returned by
// Read) hold the file's own loss counts (header EventsLost and
// BuffersLost), the buffers flagged EVENTS_LOST or BUFFER_LOST, records
// skipped, and any damage, as [event.Stats] counters; merge the Stats of
// one pass only. A damaged file is read to its end: a corrupt buffer is
// skipped (or, when one record in it is malformed, the rest of that buffer
// is), a file cut short yields every complete record, and then, in place
// of io.EOF, the pass returns a *[FormatError] (several are joined) naming
// the buffer, the file offset and the field. Errors wrap [ErrCorrupt],
// [ErrTruncated], [ErrDuplicate] or [ErrExtra]. Bad input never panics.
//
// A buffer whose records repeat another's byte for byte is a duplicate,
// whatever its header says: not read again ([ErrDuplicate]). One that
// begins before the buffer before it on its processor began is a copy
// with changes, or another file's: damage, not read. More buffers than
// the header's BuffersWritten is damage that lost nothing ([ErrExtra]:
// all are read). A record timestamp outside the trace's time range is
// clamped to it and counted. A pass stops when its context is done
// ([Records.WithContext]; Read and its kin set it) within a few thousand
// steps of its walk, whatever the records.
package etl
