//go:build unix

package outfile

import "syscall"

const nofollow = syscall.O_NOFOLLOW
