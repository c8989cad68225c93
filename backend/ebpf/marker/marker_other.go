//go:build !linux

package marker

import (
	"fmt"
	"runtime"

	"github.com/iotrace/iotrace/backend"
)

// Listener receives markers; Unix datagram sockets need Linux.
type Listener struct{}

// Listen fails outside Linux.
func Listen(dir string) (*Listener, error) {
	return nil, fmt.Errorf("marker sockets on %s: %w", runtime.GOOS, backend.ErrNotSupported)
}

// Path returns "".
func (l *Listener) Path() string { return "" }

// Read fails outside Linux.
func (l *Listener) Read() (Mark, error) {
	return Mark{}, fmt.Errorf("marker sockets on %s: %w", runtime.GOOS, backend.ErrNotSupported)
}

// Close does nothing.
func (l *Listener) Close() error { return nil }

// Send fails outside Linux.
func Send(dir, text string) (int, error) {
	return 0, fmt.Errorf("marker sockets on %s: %w", runtime.GOOS, backend.ErrNotSupported)
}
