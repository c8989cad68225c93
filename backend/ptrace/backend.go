package ptrace

// Backend traces a command and its descendants with ptrace.
type Backend struct{ cfg Config }

// Config configures the backend.
type Config struct {
	// ProcRoot is the proc file system, "/proc" when empty.
	ProcRoot string
}

// New returns the backend.
func New(cfg Config) *Backend { return &Backend{cfg: cfg} }

// Name implements backend.Backend.
func (b *Backend) Name() string { return "ptrace" }

// Description implements backend.Backend.
func (b *Backend) Description() string {
	return "Linux ptrace with a seccomp filter: a command you start and its descendants, without root; file layer only (no block I/O)"
}
