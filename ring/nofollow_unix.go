//go:build unix

package ring

import "syscall"

const noFollow = syscall.O_NOFOLLOW
