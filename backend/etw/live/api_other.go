//go:build !windows

package live

import (
	"fmt"
	"runtime"

	"github.com/iotrace/iotrace/backend"
)

// DefaultAPI returns the operating system's ETW API: Windows only.
func DefaultAPI() (API, error) {
	return nil, fmt.Errorf("ETW on %s: %w (it is a Windows API; .etl files can be read on any OS)", runtime.GOOS, backend.ErrNotSupported)
}

// registerActive records a running session for the console control
// handler; there is none outside Windows.
func registerActive(name string, stop func()) (unregister func()) { return func() {} }

// StopActive stops every session this process runs: there is none
// outside Windows.
func StopActive() {}
