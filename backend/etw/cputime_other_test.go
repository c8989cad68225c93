//go:build !unix && !windows

package etw

import "time"

// cpuTime returns 0 where the process's CPU time is not read: callers
// use wall time instead.
func cpuTime() time.Duration { return 0 }
