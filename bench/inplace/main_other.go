//go:build !linux

// Command inplace measures parts of the eBPF backend's system-call path;
// it runs on Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "inplace needs Linux")
	os.Exit(1)
}
