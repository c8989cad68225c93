package etl

import (
	"errors"
	"fmt"
)

// ErrTruncated is wrapped by the error that reports a file cut short
// inside a buffer.
var ErrTruncated = errors.New("file truncated")

// ErrCorrupt is wrapped by every error about malformed data.
var ErrCorrupt = errors.New("corrupt data")

// ErrDuplicate is wrapped by the error that reports a buffer repeating an
// earlier one (a duplicated region of the file): it is not read again,
// and nothing is missing for it.
var ErrDuplicate = errors.New("duplicated buffer")

// ErrExtra is wrapped by the error that reports more buffers than the
// log-file header says the logger wrote: every buffer is read (nothing is
// missing), but some were not written by this trace's logger.
var ErrExtra = errors.New("buffers the logger did not write")

// FormatError reports malformed or missing data: which buffer, where in
// the file, and which field.
type FormatError struct {
	// Buffer is the index of the buffer in the file (from 0).
	Buffer int
	// BufferOffset is the file offset of the buffer.
	BufferOffset int64
	// Pos is the byte offset of the failing element inside the buffer
	// (inside its decompressed data for a compressed buffer), or -1 when
	// the error is about the buffer as a whole.
	Pos int
	// Compressed is set when Pos is an offset into decompressed data.
	Compressed bool
	// Field names the element that failed ("BufferSize", "record size",
	// "extended data item", ...).
	Field string
	// Err says what is wrong; it wraps ErrCorrupt, ErrTruncated,
	// ErrDuplicate or ErrExtra.
	Err error
	// RestUnread is set when the buffers after this point cannot be
	// located or are missing: reading stopped here.
	RestUnread bool
}

func (e *FormatError) Error() string {
	where := fmt.Sprintf("buffer %d at file offset %#x", e.Buffer, e.BufferOffset)
	if e.Pos >= 0 {
		if e.Compressed {
			where += fmt.Sprintf(", byte %#x of its decompressed data", e.Pos)
		} else {
			where += fmt.Sprintf(", file offset %#x", e.BufferOffset+int64(e.Pos))
		}
	}
	return fmt.Sprintf("etl: %s: %s: %v", where, e.Field, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

// corruptf builds the Err of a FormatError about malformed data.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// truncatedf builds the Err of a FormatError about missing data.
func truncatedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrTruncated}, args...)...)
}

// maxListedErrors caps the errors a pass lists one by one; the rest are
// counted.
const maxListedErrors = 16
