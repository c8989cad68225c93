//go:build !linux && !windows

package cli

import "os"

// ringSaveSignals: none here; `iotrace mark --save` is the way.
var ringSaveSignals []os.Signal

// physicalMemory is unknown here.
func physicalMemory() uint64 { return 0 }
