// Command gowrite writes 4 KiB to the file named by its argument through
// os.File.Write, from main → outer → inner → writeBlock (the stack tests'
// Go program).
package main

import (
	"os"
)

//go:noinline
func writeBlock(f *os.File) error {
	_, err := f.Write(make([]byte, 4096))
	return err
}

//go:noinline
func inner(f *os.File) error { return writeBlock(f) }

//go:noinline
func outer(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return inner(f)
}

func main() {
	if err := outer(os.Args[1]); err != nil {
		os.Exit(1)
	}
}
