//go:build unix

package rotate

import (
	"os"
	"syscall"
)

const (
	openNoFollow = syscall.O_NOFOLLOW
	openNonBlock = syscall.O_NONBLOCK
)

// ownedByMe reports whether the file is owned by this process's
// effective user.
func ownedByMe(st os.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && s.Uid == uint32(os.Geteuid())
}
