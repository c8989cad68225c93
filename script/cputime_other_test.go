//go:build !unix

package script

// cpuTime is not measured here: benchmarks report wall-clock rates only.
func cpuTime() int64 { return 0 }
