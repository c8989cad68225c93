package blockio

import (
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
	"github.com/iotrace/iotrace/event"
)

// Defaults of [Options]. DefaultMaxInFlight is not smaller because the
// kernel does not bound the bios in flight below it: each hardware queue
// of a device holds up to nr_requests requests, each of many merged bios
// (bounded by the size and segment limits: hundreds), plus the split
// children of larger bios and the bios waiting for a tag; 64 NVMe queues
// of 1,023 requests of two bios each pass it. Preallocated
// (preallocatePlain says why): about 12 MiB of kernel memory.
const (
	DefaultBufferSize   = 4 << 20
	DefaultMaxInFlight  = 65536
	DefaultPollInterval = 10 * time.Millisecond
)

// Options configure a [Tracer]. The zero value traces every bio on the
// system with no cause links.
type Options struct {
	// Origin is the kernel clock value, in ns, of trace time 0: the same
	// origin the syscall side uses, so block and syscall times line up.
	Origin int64
	// Monotonic selects CLOCK_MONOTONIC (bpf_ktime_get_ns) for
	// timestamps; the default is CLOCK_BOOTTIME (bpf_ktime_get_boot_ns),
	// the clock of the syscall records.
	Monotonic bool

	// CurSyscall and ThreadSlots are the syscall side's cur_syscall
	// (task-local storage) and thread_slots (an array, a power of two in
	// size) maps, where each thread keeps its state (layouts in
	// backend/ebpf/bpf/cur_syscall.h): both or neither. With them, each
	// bio records the ID of the syscall its thread was in as its Cause,
	// and adds itself to that syscall's nr_bios/bio_bytes. Without them,
	// causes are absent.
	CurSyscall  *ebpf.Map
	ThreadSlots *ebpf.Map
	// InodeIO is the syscall side's inode_io map (LRU hash, layout in
	// backend/ebpf/bpf/cur_syscall.h): page-cache read bios in flight and
	// queued per file, which tells a read that waited for I/O in flight
	// from a cache hit. Without it, those counts are kept in a map of the
	// tracer's own that nobody reads.
	InodeIO *ebpf.Map
	// Stacks selects the stacks taken when a bio is queued: the
	// submitter's user stack, the kernel stack, both (--stacks), or
	// none. With one, StackMap must be the syscall side's stacks map
	// (layout in backend/ebpf/bpf/cur_syscall.h) and events carry the
	// IDs packed by RawStack.
	Stacks   backend.Stacks
	StackMap *ebpf.Map
	// PageCache is the syscall side's ring buffer (its rb map). With it,
	// every page-cache read bio is reported into it twice (queued, done;
	// layout in backend/ebpf/bpf/pagecache.h), for the provenance of the
	// reads of those pages, and with PidFilter the page-cache reads of
	// untraced processes are tracked for that too (no block event).
	// PageCacheWakeup is that ring's forced-wakeup threshold in bytes.
	PageCache       *ebpf.Map
	PageCacheWakeup uint64
	// Unwind, with Stacks asking for user stacks, walks them with the
	// syscall side's unwind tables (backend/ebpf/bpf/unwind.h) instead of
	// frame pointers: the user stack IDs are then keys of its ustacks
	// map.
	Unwind *UnwindMaps
	// PidFilter is the syscall side's set of traced processes (hash map,
	// key: __u32 tgid, any value). With it, only bios queued by those
	// processes, caused by their syscalls, or writing back files they
	// dirtied are traced. Without it, every bio is.
	PidFilter *ebpf.Map
	// ExcludePid is a process whose own bios are ignored (iotrace
	// itself); 0 for none.
	ExcludePid uint32

	// BufferSize is the ring buffer size in bytes (rounded up to a power
	// of two); 0 means DefaultBufferSize.
	BufferSize int
	// MaxInFlight bounds the bios tracked between queue and completion;
	// 0 means DefaultMaxInFlight. A bio queued when that many are
	// tracked is counted (StatMapFull) and not tracked. (The object's
	// LRU map, which the loader replaces, would evict the oldest bio
	// instead: its completion would count under StatNoStart.)
	MaxInFlight int
	// PollInterval is how often Run looks at the ring buffer when the
	// kernel has not woken it (wakeups are batched); 0 means
	// DefaultPollInterval.
	PollInterval time.Duration

	// Warn, when set, is called with a one-line message when something
	// goes wrong while tracing: loss starts, an optional tracepoint is
	// missing.
	Warn func(msg string)
	// Fact, when set, is called by Run with the fact of a device first
	// seen during the trace, before the first event on it.
	Fact func(f *event.Fact)

	// Sysfs is where sysfs is mounted, for device names; "" means "/sys".
	Sysfs string

	// NoWitness leaves out the block completion witness: a tracefs
	// instance recording every block completion into the kernel's own
	// trace buffer, where the completions no BPF program saw are looked
	// up (docs/block.md, "Completions the kernel does not deliver").
	// Without it, those bios are events without completion. When the
	// instance cannot be created, Open warns and goes on without it.
	NoWitness bool
	// WitnessKeep is how many completions the witness remembers
	// (0: DefaultWitnessKeep); WitnessBufferKB its buffer per CPU in KiB
	// (0: 1024).
	WitnessKeep     int
	WitnessBufferKB int
	// inFlightLRU keeps the map of bios in flight the object's LRU map
	// (as before issue 28), for tests.
	inFlightLRU bool
	// maxRequests bounds the requests whose issue time is kept (0: the
	// object's 16,384), for tests.
	maxRequests int
	// KernelTypes is the kernel's BTF as the caller already parsed it
	// (parsing costs tens of ms); nil: parsed here.
	KernelTypes *btf.Cache
	// RawKernel is the kernel's raw BTF as the caller reads it for its own
	// loader too (one parse for both); nil: read here.
	RawKernel *rawbtf.Shared
}

func (o *Options) warnf(msg string) {
	if o.Warn != nil {
		o.Warn(msg)
	}
}

// UnwindMaps are the syscall side's maps of the user-stack walker
// (layouts in backend/ebpf/bpf/unwind.h), and the page size's log2.
type UnwindMaps struct {
	Files, Rows, Rules, UStacks *ebpf.Map
	PageShift                   uint8
}
