package ptrace

import (
	"errors"
	"fmt"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

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
	return "Linux ptrace with a seccomp filter: a command you start and its descendants, without root; file layer only (no block I/O); used when eBPF cannot load and a command is given"
}

// Supports implements backend.Selector: the backend traces a command it
// starts, on the file layer, with user stacks at most (walked by frame
// pointers, whatever --stack-walk says).
func (b *Backend) Supports(opts backend.Options) error {
	switch {
	case len(opts.Command) == 0:
		return errNoCommand
	case len(opts.Pids) > 0 || len(opts.Comms) > 0:
		return fmt.Errorf("the ptrace backend traces only the command it starts: --pid and --comm need root and the eBPF backend")
	case len(opts.Layers) > 0 && !opts.WantLayer(event.LayerFile):
		return fmt.Errorf("the ptrace backend traces the file layer only (no block I/O)")
	case opts.Stacks&backend.StacksKernel != 0:
		return fmt.Errorf("--stacks %s: the ptrace backend sees user stacks only (--stacks user)", map[backend.Stacks]string{backend.StacksKernel: "kernel", backend.StacksBoth: "both"}[opts.Stacks])
	case opts.WaitWriteback > 0:
		return fmt.Errorf("--wait-writeback: the ptrace backend does not see writeback (no block I/O)")
	}
	return nil
}

var errNoCommand = errors.New("the ptrace backend traces a command it starts and its descendants: give the command after -- (tracing the whole system or other processes needs root and the eBPF backend)")
