package cli

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ringSaveSignals ask a running `record --ring` to save.
var ringSaveSignals = []os.Signal{syscall.SIGUSR1}

// physicalMemory returns the machine's RAM in bytes (0 when unknown).
func physicalMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
