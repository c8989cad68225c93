//go:build !unix

package input

import "os"

// mapSection reports that nothing is mapped here: files are read.
func mapSection(f *os.File, off, n int64) (*mapping, bool) { return nil, false }

func (m *mapping) release(upto int) {}
func (m *mapping) unmap()           {}
