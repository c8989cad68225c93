package cli

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// ringSaveSignals: Windows has no SIGUSR1; `iotrace mark --save` reaches
// the recorder through its ETW session's marker instead.
var ringSaveSignals []os.Signal

// memoryStatusEx is MEMORYSTATUSEX.
type memoryStatusEx struct {
	length, memoryLoad                uint32
	totalPhys, availPhys              uint64
	totalPageFile, availPageFile      uint64
	totalVirtual, availVirtual, extra uint64
}

var procGlobalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// physicalMemory returns the machine's RAM in bytes (0 when unknown).
func physicalMemory() uint64 {
	m := memoryStatusEx{length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if r, _, _ := procGlobalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m))); r == 0 {
		return 0
	}
	return m.totalPhys
}
