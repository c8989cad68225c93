//go:build !unix

package etl

import "time"

// cpuTime is not measured on this OS; the CPU-time metrics are omitted.
func cpuTime() time.Duration { return 0 }
