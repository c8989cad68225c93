//go:build unix

package cli

import (
	"errors"
	"syscall"
)

// pidExists reports whether a process with this pid runs now (signal 0
// checks without sending; EPERM means it exists).
func pidExists(pid uint32) bool {
	err := syscall.Kill(int(pid), 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
