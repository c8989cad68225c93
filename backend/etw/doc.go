// Package etw turns ETW records into iotrace's event model, on any
// operating system: decoded kernel and Kernel-File events (package
// kernel) are paired (DiskIo Init ↔ completion by IRP, FileIo request ↔
// OpEnd by IRP), attributed to the issuing thread and process, resolved to
// file names (FileKey, then FileObject, with time history; NT device paths
// turned into drive letters through the trace's volume mapping) and
// delivered with the facts behind them to an [event.Sink]. Disk I/O is
// linked to the file request whose thread issued it (event Cause,
// CausedIOs, CausedBytes; reads that caused none are cache hits), and
// processes are named after their executables (Image and Kernel-Process
// events). Images become module facts with their PE and PDB identities
// (Image, KernelTraceControl ImageID/DbgID_RSDS and iotrace's own image
// events), and the kernel's stack walks (StackWalk, whole or compressed,
// and manifest events' inline stacks) become stack facts joined to the
// file requests and disk I/Os they belong to.
//
// [ReadFile] reads an .etl file in two passes: the first collects every
// name, rundown, process, thread and volume fact (file rundowns come at the
// end of a trace and bind retroactively), skipping every other record
// before decoding it; the second emits the events. A
// live session feeds the same [Pipeline] in one pass with [Pipeline.Push],
// after pre-filling it with a rundown session's records.
//
// Nothing is lost silently: records no decoder knows, undecodable payloads,
// unpaired Inits, completions and OpEnds, reused IRPs, and events whose
// file name could not be resolved are all counted in the trailer's
// [event.Stats].
package etw
