// Package blockio traces Linux block I/O with eBPF: one event per bio,
// paired from queue to completion by the bio's address, attributed to the
// thread that queued it and linked to the system call it was queued in.
//
// The kernel side (bpf/blockio.bpf.c, compiled with bpf2go and committed)
// hooks raw tracepoints: block_bio_queue records the submitter (pid, tid,
// comm, CPU), the queue time, the inode whose page cache the bio carries
// and, when the thread is inside a traced syscall, that syscall's ID
// (the thread's state, in the shared maps thread_slots or cur_syscall);
// block_split gives a split child its parent's
// record (the parent is bi_private); block_rq_issue stamps the request;
// block_rq_complete walks rq->bio, bi_next... and sends one record per bio;
// block_bio_complete does the same for bio-based devices (device-mapper,
// md). Completions run in interrupt context, often on a CPU's idle thread:
// the event's thread is always the submitter, never the completing one.
//
// The Go API, used by the eBPF backend (package backend/ebpf):
//
//	t, err := blockio.Open(blockio.Options{Origin: o, CurSyscall: m, ThreadSlots: s, PidFilter: p, ExcludePid: self})
//	defer t.Close()
//	err = t.Run(ctx, func(e *event.Event) { ... }) // until ctx is done
//	facts := t.Facts()                              // FactDevice: names of devices
//	stats := t.Stats()                              // received, lost, unpaired
//
// Events: Layer LayerBlock; Op OpBlockRead, OpBlockWrite, OpBlockFlush or
// OpBlockDiscard; Native the kernel's rwbs string ("R", "WS", "FWS", "RA");
// ID of kind [KindBlock] (below 2^53); Request the bio address; Cause the ID of
// the syscall event that queued it (0 for none); Time the queue time, Wait
// queue to issue, Duration queue to completion; Dev the device the bio was
// submitted to (a partition; its FactDevice names the disk), Sector and
// Offset relative to that device; Size the bytes; IOFlags the raw bi_opf;
// Code the errno of the completion status and Info the raw blk_status_t;
// Inode the file whose page cache pages the bio carries (0 for direct I/O
// and metadata); Flags from bi_opf (sync, meta, fua, preflush, readahead,
// discard), plus FlagDirect (user pages pinned), FlagWriteback (a write
// queued by a kernel thread), FlagNoStart and FlagNoCompletion.
//
// Nothing is lost silently: ring-buffer reserve failures (per CPU),
// completions of bios never seen queued, split children of untracked
// bios, requests without bios (flushes), over-long bio chains and bios
// still in flight at the stop are all counters in [Tracer.Stats].
package blockio
