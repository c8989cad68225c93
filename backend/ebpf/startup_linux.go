package ebpf

import "github.com/iotrace/iotrace/event"

// startupPrefix and stopPrefix name the counters of the start-up and
// stop phases (package phase).
const (
	startupPrefix = "startup µs: "
	stopPrefix    = "stop µs: "
)

// asyncWanted reports whether ops (none: all) take the asynchronous
// requests' programs (io_uring, AIO, iomap's direct I/O): reads and
// writes are made by them too.
func asyncWanted(ops []event.Op) bool {
	if len(ops) == 0 {
		return true
	}
	for _, o := range ops {
		if o == event.OpAsync || o == event.OpRead || o == event.OpWrite {
			return true
		}
	}
	return false
}
