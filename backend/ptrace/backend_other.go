//go:build !linux || !(amd64 || arm64)

package ptrace

import (
	"context"
	"fmt"
	"runtime"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// Available implements backend.Backend.
// On another operating system it wraps backend.ErrOtherOS (left out of
// "cannot trace this machine" when a backend of this OS says why).
func (b *Backend) Available() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("ptrace backend on %s: needs Linux: %w", runtime.GOOS, backend.ErrOtherOS)
	}
	return fmt.Errorf("%w: the ptrace backend runs on Linux amd64 and arm64, not %s/%s", backend.ErrNotSupported, runtime.GOOS, runtime.GOARCH)
}

// Run implements backend.Backend.
func (b *Backend) Run(context.Context, backend.Options, event.Sink) error { return b.Available() }
