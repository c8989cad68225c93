//go:build !linux && !windows

package cli

import (
	"fmt"
	"runtime"

	"github.com/iotrace/iotrace/backend"
)

// sendMark is not available on this OS (Linux: mark_linux.go, Windows:
// mark_windows.go).
func sendMark(string) (int, error) {
	return 0, fmt.Errorf("iotrace mark on %s: %w", runtime.GOOS, backend.ErrNotSupported)
}
