package tracefile_test

import "syscall"

// cpuNanos returns the CPU time (user + system) the process has used: on
// a loaded machine it measures the benchmark's own work, where wall time
// also counts the waiting.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
