// Package live is the Windows live ETW backend, in pure Go (no cgo): a
// kernel session (FileIo, FileIo Init, DiskIo, DiskIo Init, file names,
// Process, Thread, Image) consumed in real time, its EVENT_RECORDs turned
// into the portable [record.Record] the ETL reader also produces, and
// decoded, paired and resolved by the same pipeline (package etw). It
// runs on Windows 10 and later (as Go does), windows/amd64 and
// windows/arm64 only (the structures are the 64-bit layouts).
//
// [Backend] implements backend.Backend ("etw"). Run (run.go has its
// steps: the spec, the sessions, the consumer, the stop):
//   - captures the volume → drive-letter map and the running processes
//     with their executables' full paths (facts at the head of the trace,
//     so that it is self-contained and names processes as a file does);
//   - stops stale iotrace sessions left by crashed iotrace processes
//     (never another tool's, never a running iotrace's);
//   - runs a short rundown session (DISK_FILE_IO | DISK_IO) in file mode
//     and stops it: the stop writes the names of the files already open
//     into its .etl file, which the .etl reader reads (rundown.go);
//   - starts the main session "iotrace-<pid>" (a system logger, QPC
//     clock, raw timestamps, buffers sized for the machine: buffers.go,
//     its GUID one of iotrace's fixed set: guids.go), with iotrace's own
//     provider enabled for markers (ownwriter.go);
//   - consumes it with ProcessTrace on a locked OS thread through one
//     callback created once per process that routes by context, and waits
//     for the first event delivered, proof that the consumer is connected
//     (consumed.go), before a command is resumed or the session may stop;
//     the callback copies each event into a bounded queue (overflow
//     counted) and decoding runs on another goroutine, after a reorder
//     window that puts the processors' buffers back in timestamp order
//     (reorder.go), so that disk I/O pairs and links to file requests as
//     in a file; iotrace's own process is never traced;
//   - for a command (trace -- app.exe), finds it as CreateProcess does
//     (program.go), starts it suspended, keeps it and its descendants,
//     resumes it, and stops when it exits, passing its exit code to
//     backend.Options.CommandExited;
//   - stops on cancellation, duration, command exit or error (deferred
//     stop, and a console control handler for window close, logoff and
//     shutdown), then reports the session's EventsLost,
//     RealTimeBuffersLost and LogBuffersLost, RT_LostEvent notices and
//     queue overflow in the trailer's Stats.
//
// With --stacks, the main session (or the recording session) is asked
// for the kernel's stack walks on the FileIo requests and the DiskIo
// Init events (TraceSetInformation; stacks.go says what user, kernel and
// both mean on Windows); the StackWalk records go through the pipeline,
// which joins them to their events; and each loaded image's PDB identity
// is read from its file (once per image version) and put after its Image
// record as iotrace's own OpcodeImage record (images.go), so that frames
// can be named from the right PDB.
//
// [Backend.RecordETL] records to an .etl file instead (file-mode session,
// record.go), with iotrace's own events written into it (recordown.go).
// [Sessions], [StopStale], [SendMark] and [Grant] serve `iotrace
// sessions` and `iotrace mark`.
//
// Everything but the Win32 calls is portable and written against the
// small [API] interface; the tests drive it on Linux and under wine with
// a fake that models what the backend depends on (sessions that keep
// their buffers until a consumer connects, lose events beyond their
// buffers, deliver one processor's buffer after another's, refuse
// TraceEvent; the machine's session limits; the tracer's own I/O) and
// replays real ETL fixtures as the machine's events. The Win32 structures
// ([EventTraceProperties], [EventTraceLogfile], [EventRecord],
// [EventHeader]) are checked against the documented C layouts for both
// pointer sizes.
package live
