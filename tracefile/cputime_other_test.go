//go:build !linux

package tracefile_test

// cpuNanos is not measured on this OS.
func cpuNanos() int64 { return 0 }
