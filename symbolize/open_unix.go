//go:build unix

package symbolize

import (
	"os"
	"syscall"
)

const (
	openNonBlock = syscall.O_NONBLOCK
	openNoFollow = syscall.O_NOFOLLOW
)

// allocated returns the bytes the file takes on disk.
func allocated(st os.FileInfo) (int64, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(s.Blocks) * 512, true
}
