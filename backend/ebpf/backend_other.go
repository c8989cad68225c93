//go:build !linux

package ebpf

import (
	"context"
	"fmt"
	"runtime"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// Available reports that eBPF tracing needs Linux.
func (b *Backend) Available() error {
	return fmt.Errorf("ebpf backend on %s: needs Linux: %w", runtime.GOOS, backend.ErrOtherOS)
}

// Run fails: eBPF tracing needs Linux.
func (b *Backend) Run(ctx context.Context, opts backend.Options, sink event.Sink) error {
	return b.Available()
}
