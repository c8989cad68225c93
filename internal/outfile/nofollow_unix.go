//go:build unix

package outfile

import (
	"io/fs"
	"os"
	"syscall"
)

const nofollow = syscall.O_NOFOLLOW

// ownedByMe reports whether the file belongs to this process's user: only
// then is its mode kept.
func ownedByMe(st fs.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(s.Uid) == os.Geteuid()
}

// trusted reports whether a device or FIFO may be written in place: it
// belongs to this process's user or to root (/dev/null), not to another
// user (whose FIFO in /tmp would receive the trace).
func trusted(st fs.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && (s.Uid == 0 || int(s.Uid) == os.Geteuid())
}

// unlinked reports whether st is of a file no name refers to any more.
func unlinked(st fs.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && s.Nlink == 0
}
