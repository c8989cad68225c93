package stackjoin

// Counter names of stacks: the joiner counts most of them, package etw
// the rest (and exports them all as its StatStack… names).
const (
	StatFile         = "etw: file requests with a stack"
	StatDisk         = "etw: disk I/Os with a stack"
	StatFlush        = "etw: disk flushes with a stack"
	StatRecords      = "etw: stack records joined to their event (StackWalk, extended data)"
	StatOther        = "etw: stack records of other events (process, thread, image…: not kept)"
	StatNoEvent      = "etw: stack records of other records in the trace (CPU samples, CLR, events iotrace does not decode: not kept)"
	StatUserAlone    = "etw: user parts of stacks no event took, walked when their thread returned to user mode (their event not looked for: not kept)"
	StatOrphan       = "etw: stack records of no record in the trace (no record of their time and thread: their event lost)"
	StatUndecoded    = "etw: stack records of records iotrace does not decode (live: CPU samples, CLR…: not kept)"
	StatNoRecent     = "etw: stack records matching none of the latest records (live: their event lost, or more than 32 records of its processor came between them: dropped)"
	StatLate         = "etw: stacks of events already emitted (dropped)"
	StatKeyUndefined = "etw: stack key references whose key the trace never defines (that part of the stack is lost)"
	StatUserShared   = "etw: stacks whose user part is the one walked when their thread returned to user mode (shared by the kernel events of one system call)"
	StatOff          = "etw: stack records left aside (stacks not wanted)"
	StatUserNever    = "etw: stacks whose user part never came (live: the thread did not return to user mode in time; flagged user-lost)"
	StatKeyExt       = "etw: stack keys in extended data (not resolved: that stack is lost)"
	StatUserGone     = "etw: stacks whose user part never came (their thread ended, or its ID went to another process, before it returned to user mode; flagged user-lost)"
)
