package synth

import (
	"fmt"

	"github.com/iotrace/iotrace/event"
)

// Options configure a synthetic trace. The zero value is a Linux trace of
// DefaultEvents events with seed 0.
type Options struct {
	// Seed selects the trace; the same options always give the same trace.
	Seed uint64
	// Events is the exact number of events; 0 means DefaultEvents. With
	// fewer than MinEvents the trace is cut short of some features.
	Events int
	// OS is "linux" (the default) or "windows": it selects native op
	// names, handles (fds or FileObject/FileKey), error codes (errno or
	// NTSTATUS), devices (major:minor or disk numbers) and the rundown
	// style (at the start from /proc, or at the end as ETW does).
	OS string
	// CPUs of the simulated machine; 0 means 4.
	CPUs uint32
	// Processes is the number of worker processes doing I/O at the start
	// (workers exit and new ones start during the trace); 0 means 4.
	Processes int
	// BlockPercent is the percentage of reads that miss the page cache and
	// cause block I/O (0 means 5; use a negative value for none after the
	// opening tour). The default trace is syscall-heavy.
	BlockPercent int
	// Resolved fills in Path on handle-based events and Comm on every
	// event, as a backend that resolves at capture time would. By default
	// they are left to be resolved from the facts (Linux events still
	// carry Comm, as eBPF captures it).
	Resolved bool
	// StartWall is Header.StartWall; 0 means 2025-03-14T09:26:53Z.
	StartWall int64
	// MaxOp, when not zero, leaves out the ops numbered MaxOp and above:
	// it reproduces the traces of versions that had fewer ops (the
	// version-1 file fixtures).
	MaxOp event.Op
}

// DefaultEvents is the number of events when Options.Events is 0.
const DefaultEvents = 1000

// MinEvents is the smallest event count with which a trace of either OS
// contains every feature listed in the package documentation.
const MinEvents = 120

const defaultStartWall = 1741944413_000000000 // 2025-03-14T09:26:53Z

func (o Options) normalized() (Options, error) {
	switch o.OS {
	case "":
		o.OS = "linux"
	case "linux", "windows":
	default:
		return o, fmt.Errorf("synth: unknown OS %q (want linux or windows)", o.OS)
	}
	if o.Events < 0 {
		return o, fmt.Errorf("synth: negative event count %d", o.Events)
	}
	if o.Events == 0 {
		o.Events = DefaultEvents
	}
	if o.CPUs == 0 {
		o.CPUs = 4
	}
	if o.Processes <= 0 {
		o.Processes = 4
	}
	if o.BlockPercent == 0 {
		o.BlockPercent = 5
	}
	if o.BlockPercent < 0 {
		o.BlockPercent = 0
	}
	if o.BlockPercent > 100 {
		o.BlockPercent = 100
	}
	if o.StartWall == 0 {
		o.StartWall = defaultStartWall
	}
	return o, nil
}

var linuxOps = []event.Op{
	event.OpOpen, event.OpRead, event.OpWrite, event.OpClose, event.OpFlush,
	event.OpStat, event.OpSetInfo, event.OpDelete, event.OpRename, event.OpReadDir,
	event.OpMmap, event.OpSeek, event.OpMkdir, event.OpDup, event.OpChdir,
	event.OpExec, event.OpCopy, event.OpFSControl, event.OpNotify, event.OpAsync,
	event.OpBlockRead, event.OpBlockWrite, event.OpBlockFlush, event.OpBlockDiscard,
	event.OpMarker,
	event.OpReadlink, event.OpAccess, event.OpSetAttr, event.OpLink, event.OpMknod,
	event.OpXattr, event.OpAdvise, event.OpLock,
}

var windowsOps = []event.Op{
	event.OpOpen, event.OpRead, event.OpWrite, event.OpClose, event.OpFlush,
	event.OpStat, event.OpSetInfo, event.OpDelete, event.OpRename, event.OpReadDir,
	event.OpMmap, event.OpMkdir, event.OpFSControl, event.OpNotify, event.OpCleanup,
	event.OpBlockRead, event.OpBlockWrite, event.OpBlockFlush,
	event.OpMarker,
}

// Ops returns the ops a trace of os ("linux" or "windows") contains when it
// has at least MinEvents events: every op that exists on that OS. Linux
// has no cleanup; Windows has no seek, dup, chdir, exec, copy, async
// (io_uring) or block discard events. Together they cover every op but
// OpUnknown; [AllFields] has every op in one list.
func Ops(os string) []event.Op {
	if os == "windows" {
		return append([]event.Op(nil), windowsOps...)
	}
	return append([]event.Op(nil), linuxOps...)
}
