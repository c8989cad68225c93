//go:build unix && !linux

package ring

// hugePages: the arena keeps the system's page size here.
func hugePages([]byte) {}
