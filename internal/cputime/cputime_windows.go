//go:build windows

package cputime

import (
	"time"

	"golang.org/x/sys/windows"
)

// Process returns the user + kernel CPU time used by the process, 0 when
// it cannot be read.
func Process() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	ticks := func(f windows.Filetime) time.Duration { // 100 ns each
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ticks(kernel) + ticks(user)
}
