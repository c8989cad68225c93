//go:build !linux

package procfs

import "github.com/iotrace/iotrace/event"

// statFile needs Linux stat; elsewhere inode and device stay unknown.
func statFile(string) (uint64, event.Device, bool) { return 0, event.Device{}, false }
