// Package live is the Windows live ETW backend, in pure Go (no cgo): a
// kernel session (FileIo, FileIo Init, DiskIo, DiskIo Init, file names,
// Process, Thread, Image) consumed in real time, its EVENT_RECORDs turned
// into the portable [record.Record] the ETL reader also produces, and
// decoded, paired and resolved by the same pipeline (package etw).
//
// [Backend] implements backend.Backend ("etw"). Run:
//   - captures the volume → drive-letter map and the running processes
//     with their executables' full paths (facts at the head of the trace,
//     so that it is self-contained and names processes as a file does);
//   - stops stale iotrace sessions left by crashed iotrace processes
//     (never another tool's, never a running iotrace's);
//   - runs a short rundown session (DISK_FILE_IO | DISK_IO) and stops it:
//     its FileRundown events name the files already open; it is bounded
//     in time and says when it did not finish;
//   - starts the main session, "iotrace-<pid>" with
//     EVENT_TRACE_SYSTEM_LOGGER_MODE on Windows 8 and later (the NT
//     Kernel Logger on Windows 7), QPC clock, raw timestamps;
//   - consumes it with ProcessTrace on a locked OS thread through one
//     callback created once per process that routes by context; the
//     callback copies each event into a bounded queue (overflow counted)
//     and decoding runs on another goroutine, after a reorder window that
//     puts the processors' buffers back in timestamp order (reorder.go),
//     so that disk I/O pairs and links to file requests as in a file;
//   - for a command (trace -- app.exe), starts it suspended, keeps it and
//     its descendants, resumes it, and stops when it exits, passing its
//     exit code to backend.Options.CommandExited;
//   - stops on cancellation, duration, command exit or error (deferred
//     stop, and a console control handler for window close, logoff and
//     shutdown), then reports the session's EventsLost,
//     RealTimeBuffersLost and LogBuffersLost, RT_LostEvent notices and
//     queue overflow in the trailer's Stats.
//
// With --stacks, the main session (or the recording session) is asked
// for the kernel's stack walks on the FileIo requests and the DiskIo
// Init events (TraceSetInformation; stacks.go says what user, kernel and both
// mean on Windows); the StackWalk records go through the pipeline, which
// joins them to their events; and each loaded image's PDB identity is
// read from its file and put after its Image record as iotrace's own
// OpcodeImage record (images.go), so that frames can be named from the
// right PDB.
//
// [Backend.RecordETL] records to an .etl file instead (file-mode session).
// [Sessions], [StopStale] and [SendMark] serve `iotrace sessions` and
// `iotrace mark`.
//
// Everything but the Win32 calls is portable and written against the
// small [API] interface; the tests drive it on Linux with a fake that
// replays real ETL fixtures as EVENT_RECORDs and scripts
// ERROR_ALREADY_EXISTS, access denied and a session that dies mid-run.
// The Win32 structures ([EventTraceProperties], [EventTraceLogfile],
// [EventRecord], [EventHeader]) are checked against the documented C
// layouts for both pointer sizes.
package live
