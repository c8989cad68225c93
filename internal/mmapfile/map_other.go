//go:build !unix

package mmapfile

import "os"

// Map reports that nothing is mapped here: files are read.
func Map(f *os.File, off, n int64) (*Mapping, bool) { return nil, false }

// Release does nothing: nothing is mapped.
func (m *Mapping) Release(upto int) {}

// Close does nothing: nothing is mapped.
func (m *Mapping) Close() {}
