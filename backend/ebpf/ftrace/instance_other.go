//go:build !linux

package ftrace

import (
	"fmt"

	"github.com/iotrace/iotrace/backend"
)

// Options configure an [Instance] (Linux only).
type Options struct {
	Name     string
	Events   []string
	Clock    string
	BufferKB int
	Root     string
}

// Instance is a tracefs instance (Linux only).
type Instance struct{}

// ErrNotSupported: tracefs is Linux's.
var ErrNotSupported = fmt.Errorf("ftrace: tracefs instances are Linux-only: %w", backend.ErrNotSupported)

// Open fails: tracefs is Linux's.
func Open(Options) (*Instance, error) { return nil, ErrNotSupported }

// Formats returns nothing.
func (*Instance) Formats() map[uint16]*Format { return nil }

// Missing returns nothing.
func (*Instance) Missing() []string { return nil }

// Read reads nothing.
func (*Instance) Read(func(cpu int, ts uint64, rec []byte)) (uint64, error) {
	return 0, ErrNotSupported
}

// Dropped returns 0.
func (*Instance) Dropped() uint64 { return 0 }

// Close does nothing.
func (*Instance) Close() error { return nil }

// RemoveStale does nothing: tracefs is Linux's.
func RemoveStale(root, prefix string) (int, error) { return 0, ErrNotSupported }
