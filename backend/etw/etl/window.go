package etl

import (
	"fmt"
	"io"
)

// windowSize is how much of the file one read brings in. Buffers are
// small (a compressed buffer is a few KiB), the processors' buffers lie
// near each other in the file, and a system call costs several
// microseconds: reading 256 KiB at a time replaces hundreds of reads of
// one buffer each by a few (20 instead of 360 for a 4.9 MB file), and a
// block that size is still in the processor's cache when its buffers are
// decompressed (1 MiB blocks cost 3 % more CPU end to end).
const windowSize = 256 << 10

// window serves reads of a file from a block read ahead. A read outside
// the block reads a new block starting where the read starts.
type window struct {
	ra   io.ReaderAt
	size int64  // of the file
	buf  []byte // the block: file bytes [off, off+len(buf))
	off  int64
	// mapped is the whole file when it is mapped (Options.Map): slices
	// of it are handed out, nothing is read or copied.
	mapped []byte
}

// slice returns the n bytes of the file at off, or fewer when the file
// ends first (with io.ErrUnexpectedEOF). The bytes are valid until the
// next call.
func (w *window) slice(off int64, n int) ([]byte, error) {
	if w.mapped != nil {
		end := off + int64(n)
		if off >= 0 && end <= int64(len(w.mapped)) {
			return w.mapped[off:end], nil
		}
		got := w.mapped[min(max(off, 0), int64(len(w.mapped))):]
		return got, fmt.Errorf("read %d bytes at offset %#x: %w", n, off, io.ErrUnexpectedEOF)
	}
	if off >= w.off && off+int64(n) <= w.off+int64(len(w.buf)) {
		i := int(off - w.off)
		return w.buf[i : i+n], nil
	}
	want := int(min(int64(max(n, windowSize)), w.size-off))
	if want < 0 {
		want = 0
	}
	if cap(w.buf) < want {
		w.buf = make([]byte, want)
	}
	w.buf = w.buf[:want]
	got, err := w.ra.ReadAt(w.buf, off)
	if got < want && err == nil {
		err = io.ErrUnexpectedEOF
	}
	w.buf, w.off = w.buf[:got], off
	if got >= n {
		return w.buf[:n], nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return w.buf[:got], fmt.Errorf("read %d bytes at offset %#x: %w", n, off, err)
}
