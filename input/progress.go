package input

import (
	"io"
	"os"
	"sync/atomic"
)

// Progress reports how far the reading of r has come, for a progress bar
// on another goroutine while Run runs: done of total bytes, where a
// reader that reads its file twice (its facts first, then everything)
// counts both passes. ok is false when r cannot say (.etl, whose records
// are merged from per-processor buffers).
func Progress(r Reader) (done, total int64, ok bool) {
	passes := int64(1)
	for {
		switch w := r.(type) {
		case *spooled:
			r = w.Reader
			continue
		case resolving:
			if _, ok := w.Reader.(factScanner); ok {
				passes = 2 // resolving.Run scans the facts first
			}
			r = w.Reader
			continue
		case interface{ BytesRead() (read, size int64) }:
			read, size := w.BytesRead()
			return read, passes * size, size > 0
		}
		return 0, 0, false
	}
}

// countedFile is a file read through Read and Seek with the bytes read
// counted, across passes, for Progress.
type countedFile struct {
	f    *os.File
	n    atomic.Int64
	size int64
}

func newCountedFile(f *os.File) (*countedFile, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &countedFile{f: f, size: st.Size()}, nil
}

func (c *countedFile) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countedFile) Seek(off int64, whence int) (int64, error) { return c.f.Seek(off, whence) }

// passCount counts the bytes of its section a jsonl reader's passes have
// read (both the facts' and Run's), for Progress.
type passCount struct {
	n    atomic.Int64
	base int64 // n when the current pass began (the reading goroutine's)
}

// begin starts a pass.
func (c *passCount) begin() { c.base = c.n.Load() }

// at says the pass has read up to offset upto of the section.
func (c *passCount) at(upto int) { c.n.Store(c.base + int64(upto)) }

// reader counts what is read through r.
func (c *passCount) reader(r io.Reader) io.Reader { return countingReader{r, c} }

type countingReader struct {
	r io.Reader
	c *passCount
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.c.n.Add(int64(n))
	return n, err
}
