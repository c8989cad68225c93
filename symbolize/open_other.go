//go:build !unix

package symbolize

import "os"

// Opening a file does not wait here (a named pipe connects or fails at
// once); the regular-file check refuses what is not a file; a final
// symbolic link is followed.
const (
	openNonBlock = 0
	openNoFollow = 0
)

// allocated: the bytes a file takes on disk are not known here.
func allocated(os.FileInfo) (int64, bool) { return 0, false }
