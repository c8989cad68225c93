//go:build !windows || !(amd64 || arm64)

package live

import (
	"fmt"
	"runtime"

	"github.com/iotrace/iotrace/backend"
)

// DefaultAPI returns the operating system's ETW API: Windows on amd64 and
// arm64 only (the structure layouts are 64-bit ones; Go does not run on
// the Windows versions where 32-bit x86 mattered).
func DefaultAPI() (API, error) {
	if runtime.GOOS == "windows" {
		return nil, fmt.Errorf("ETW on windows/%s: %w (the live backend is built for windows/amd64 and windows/arm64; .etl files can be read on any OS)", runtime.GOARCH, backend.ErrNotSupported)
	}
	return nil, fmt.Errorf("ETW on %s: %w (it is a Windows API; .etl files can be read on any OS)", runtime.GOOS, backend.ErrOtherOS)
}

// registerActive records a running session for the console control
// handler; there is none outside Windows.
func registerActive(name string, stop func()) (unregister func()) { return func() {} }

// StopActive stops every session this process runs: there is none
// outside Windows.
func StopActive() {}
