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
func (b *Backend) Available() error {
	return fmt.Errorf("%w: the ptrace backend runs on Linux amd64 and arm64, not %s/%s", backend.ErrNotSupported, runtime.GOOS, runtime.GOARCH)
}

// Run implements backend.Backend.
func (b *Backend) Run(context.Context, backend.Options, event.Sink) error { return b.Available() }
