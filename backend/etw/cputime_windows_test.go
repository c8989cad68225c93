//go:build windows

package etw

import (
	"time"

	"golang.org/x/sys/windows"
)

// cpuTime returns the CPU time the process has used (user and kernel).
func cpuTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	ft := func(f windows.Filetime) time.Duration {
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ft(kernel) + ft(user)
}
