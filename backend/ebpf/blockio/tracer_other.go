//go:build !linux

package blockio

import (
	"context"
	"fmt"
	"runtime"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// Tracer traces block I/O. It is only available on Linux.
type Tracer struct{}

// Open fails: block I/O tracing with eBPF needs Linux.
func Open(opts Options) (*Tracer, error) {
	return nil, fmt.Errorf("block I/O tracing with eBPF on %s: %w", runtime.GOOS, backend.ErrNotSupported)
}

// Run fails: block I/O tracing with eBPF needs Linux.
func (t *Tracer) Run(ctx context.Context, emit func(*event.Event)) error {
	return fmt.Errorf("block I/O tracing with eBPF on %s: %w", runtime.GOOS, backend.ErrNotSupported)
}

// Facts returns nothing.
func (t *Tracer) Facts() []event.Fact { return nil }

// Stats returns nothing.
func (t *Tracer) Stats() event.Stats { return event.Stats{} }

// Close does nothing.
func (t *Tracer) Close() error { return nil }
