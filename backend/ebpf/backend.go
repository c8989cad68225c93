package ebpf

import "time"

// Defaults of [Config].
const (
	// DefaultBufferSize is the syscall ring buffer size in bytes.
	DefaultBufferSize = 8 << 20
	// DefaultPollInterval is how often the reader drains the ring buffer
	// when the kernel has not woken it (wakeups are batched).
	DefaultPollInterval = 10 * time.Millisecond
	// DefaultThreadSlots is how many threads keep their state in the
	// BPF programs' array of thread slots (192 bytes each).
	DefaultThreadSlots = 8192
)

// Config tunes the backend beyond backend.Options. The zero value uses
// the defaults.
type Config struct {
	// ProcRoot is where procfs is mounted; "" means "/proc".
	ProcRoot string
	// MarkerDir is where running traces listen for `iotrace mark`; ""
	// means marker.DefaultDir. "-" disables markers.
	MarkerDir string
	// PollInterval overrides DefaultPollInterval.
	PollInterval time.Duration
	// WakeupFraction is the fill level (1/N of the ring buffer) at which
	// the kernel wakes the reader; 0 means 4.
	WakeupFraction int
	// NoRundown skips the /proc snapshot at the start (descriptors opened
	// before the trace are then named lazily from /proc, or not at all).
	NoRundown bool
	// UnwindCacheDir is where unwind tables are cached across runs (by
	// build ID); "" means unwind.DefaultCacheDir(), "-" no cache.
	UnwindCacheDir string
	// ThreadSlots is the number of threads whose state the BPF programs
	// keep in an array, the fast place (a power of two; 0 means
	// DefaultThreadSlots); the others keep it in task-local storage
	// (bpf/cur_syscall.h).
	ThreadSlots int
}

// Backend traces file system calls (and block I/O) on Linux with eBPF. It
// implements backend.Backend.
type Backend struct {
	cfg Config
}

// New returns the eBPF backend with cfg.
func New(cfg Config) *Backend { return &Backend{cfg: cfg} }

// Name implements backend.Backend.
func (b *Backend) Name() string { return "ebpf" }

// Description implements backend.Backend.
func (b *Backend) Description() string {
	return "Linux eBPF: file system calls paired in the kernel with paths, block I/O by bio, io_uring"
}
