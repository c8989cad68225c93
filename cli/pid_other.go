//go:build !unix && !windows

package cli

// pidExists cannot tell here: every pid is taken as existing.
func pidExists(uint32) bool { return true }
