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
// # Stages
//
// A Pipeline routes each record to the handler of its kind, pairs,
// links, emits and counts; the jobs with state of their own are stages:
//   - firstPass (first.go): a file's first pass — what it notes, takes
//     and counts in each processor's stream order, and what it decodes in
//     time order for the resolver tables;
//   - internal/stackjoin: stack joining — the first pass's stack records
//     collected, assembled and taken by the second pass in time order,
//     stack cache keys, interning, and the events a live session holds
//     for their stack's user part;
//   - internal/modident: module facts and the PE and PDB identities of
//     their images;
//   - internal/names: payload strings and DOS paths, through caches.
//
// The stages report counters and warnings through one concrete struct,
// internal/tally's Tally, and return what they make (stack IDs, module
// facts, events let go) for the pipeline to emit: no call back through an
// interface or a function value.
//
// # Links between disk I/O and file requests
//
// A disk I/O is linked to a file request (Cause; the request's CausedIOs
// and CausedBytes) when its Init is issued by a thread (IssuingThreadId,
// else the Init's context) while that thread has a Read, Write or Flush
// request in flight (issued, OpEnd not yet seen) and, at completion, the
// disk I/O's FileKey is the request's FileKey or FileObject; a disk flush
// links to the thread's Flush request. A request whose OpEnd comes before
// the completion of a disk I/O it may own is held until it completes (at
// most 2 s of trace time and 4,096 requests); one that goes before its
// links are settled is counted (StatLinkLate) and never called a cache
// hit, nor is one a disk I/O of which never completed. A completed cached
// read that caused no disk I/O is a cache hit, unless a paging read
// (IRP_PAGING_IO) of its file and range was in flight while it ran (the
// cache manager's read-ahead, another thread's fault): then it waited
// for I/O (FlagWaitedIO). I/O the cache manager issues from its own
// threads (read-ahead, lazy writes, the mapped page writer) has no file
// request in flight and is not linked, nor is any when the trace lacks
// OpEnds or DiskIo Inits.
//
// Nothing is lost silently: records no decoder knows, undecodable payloads,
// unpaired Inits, completions and OpEnds, reused IRPs, and events whose
// file name could not be resolved are all counted in the trailer's
// [event.Stats].
package etw
