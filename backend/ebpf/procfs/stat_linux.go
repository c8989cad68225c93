package procfs

import (
	"os"
	"syscall"

	"github.com/iotrace/iotrace/event"
)

func statFile(name string) (uint64, event.Device, bool) {
	fi, err := os.Stat(name)
	if err != nil {
		return 0, event.Device{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, event.Device{}, false
	}
	return st.Ino, UserDev(uint64(st.Dev)), true
}
