//go:build unix

package mmapfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the bytes [off, off+n) of f read-only (n < 0: to the end
// of the file). ok is false when it cannot be (an empty section, a pipe, a
// size the address space cannot hold): the caller reads the file instead.
func Map(f *os.File, off, n int64) (m *Mapping, ok bool) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, false
	}
	if n < 0 {
		n = st.Size() - off
	}
	if n <= 0 || off+n > st.Size() || n > maxMapped {
		return nil, false
	}
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	b, err := unix.Mmap(int(f.Fd()), start, int(off-start+n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false
	}
	_ = unix.Madvise(b, unix.MADV_SEQUENTIAL)
	return &Mapping{all: b, data: b[off-start:], fileOff: off}, true
}

// maxMapped is the largest section mapped (a 64-bit address space holds
// far more; a 32-bit one reads instead).
const maxMapped = int64(^uint(0)>>1) / 4

// Release lets the kernel drop the pages of the first upto bytes of the
// section from this process (they stay in the page cache), so that the
// process's memory does not grow with the file.
func (m *Mapping) Release(upto int) {
	skip := len(m.all) - len(m.data)
	end := (skip + upto) &^ (os.Getpagesize() - 1)
	if end > 0 {
		_ = unix.Madvise(m.all[:end], unix.MADV_DONTNEED)
	}
}

// Close unmaps the section: no slice of it may be used after.
func (m *Mapping) Close() { _ = unix.Munmap(m.all) }
