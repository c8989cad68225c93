//go:build !linux

package cli

import (
	"fmt"
	"runtime"

	"github.com/iotrace/iotrace/backend"
)

// sendMark is not available here yet (the Windows side comes with the ETW
// live backend, in mark_windows.go; change this file's build tag then).
func sendMark(string) (int, error) {
	return 0, fmt.Errorf("iotrace mark on %s: %w", runtime.GOOS, backend.ErrNotSupported)
}
