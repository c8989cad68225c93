package tracefile

import (
	"errors"
	"io"
)

// window buffers a stream so that a chunk can be inspected in place and a
// reader that lost its place can search forward. It grows only as data
// actually arrives, so a corrupt length cannot make it allocate more than
// about twice the data read.
type window struct {
	r     io.Reader
	buf   []byte
	start int   // first unconsumed byte in buf
	end   int   // end of data in buf
	off   int64 // file offset of buf[start]
	eof   bool
	err   error // read error other than EOF
}

const minWindow = 4 << 10

// avail returns the unconsumed data.
func (w *window) avail() []byte { return w.buf[w.start:w.end] }

// fill makes at least n bytes available, reading as needed. It reports
// whether it succeeded; on false, fewer bytes are available because the
// stream ended (or failed: see w.err).
func (w *window) fill(n int) bool {
	for w.end-w.start < n {
		if !w.more(n) {
			return false
		}
	}
	return true
}

// more reads at least one more byte, making room for a total of want
// bytes in steps.
func (w *window) more(want int) bool {
	if w.eof || w.err != nil {
		return false
	}
	if w.end == len(w.buf) {
		have := w.end - w.start
		if w.start > 0 && have < len(w.buf)/2 {
			copy(w.buf, w.buf[w.start:w.end])
		} else {
			// Grow by doubling towards want: never far beyond the data
			// actually read, whatever a corrupt length asks for.
			size := min(max(want, minWindow), max(2*len(w.buf), minWindow))
			if size <= have {
				size = have + minWindow
			}
			nb := make([]byte, size)
			copy(nb, w.buf[w.start:w.end])
			w.buf = nb
		}
		w.end = have
		w.start = 0
	}
	n, err := w.r.Read(w.buf[w.end:])
	w.end += n
	if err != nil {
		if errors.Is(err, io.EOF) {
			w.eof = true
		} else {
			w.err = err
		}
		return n > 0
	}
	return true
}

// discard consumes n available bytes.
func (w *window) discard(n int) {
	w.start += n
	w.off += int64(n)
}

// reset points the window at a new stream position.
func (w *window) reset(r io.Reader, off int64) {
	w.r = r
	w.start, w.end = 0, 0
	w.off = off
	w.eof, w.err = false, nil
}
