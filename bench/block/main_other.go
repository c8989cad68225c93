//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "block: the block I/O benchmark needs Linux (eBPF)")
	os.Exit(1)
}
