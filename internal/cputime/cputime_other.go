//go:build !unix && !windows

package cputime

import "time"

// Process is not measured on this OS: it returns 0 and the CPU-time
// metrics are omitted.
func Process() time.Duration { return 0 }
