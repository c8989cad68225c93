//go:build !linux

// Command syscall is the Linux system-call tracing benchmark; it runs on
// Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "the system-call benchmark needs Linux")
	os.Exit(1)
}
