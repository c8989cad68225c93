package symbolize

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Symbol files and module files are data from elsewhere: the module paths
// come from a trace, and a symbol directory may hold anything a user left
// there. A file is opened without blocking (a FIFO or a device answers at
// once instead of waiting for a writer), used only when it is a regular
// file, and read through a readBudget: no section, stream or table is
// read on the strength of a size field alone.

// errNotRegular is returned for a path that is not a regular file (a
// FIFO, a device, a directory, a socket).
var errNotRegular = errors.New("not a regular file")

// errBudget is returned by a budgetReader once the file has given what
// it holds.
var errBudget = errors.New("the file claims more data than it holds")

// openRegular opens path for reading without blocking, without following
// a final symbolic link when noFollow (a path from a trace), and checks
// that it is a regular file. It returns the file and how many bytes may be
// read from it (readBudget).
func openRegular(path string, noFollow bool) (*os.File, int64, error) {
	flags := os.O_RDONLY | openNonBlock
	if noFollow {
		flags |= openNoFollow
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w (%s)", path, errNotRegular, st.Mode().Type())
	}
	return f, readBudget(st), nil
}

// Budget figures: what a file may make this package read, in all.
const (
	// budgetSlack is read beyond what a file holds on disk: headers,
	// tables a parser reads twice.
	budgetSlack = 16 << 20
	// sparseFactor is how much larger than its allocated blocks a file's
	// data may be (a file system that compresses stores less than it
	// gives).
	sparseFactor = 16
)

// readBudget is how many bytes may be read from a file: twice its size
// (a parser reads some tables twice) and, when the file system says how
// many bytes the file takes on disk, no more than sparseFactor times
// those: a sparse file of a few blocks claiming gigabytes of sections
// gives its holes' zeros only up to the budget.
func readBudget(st os.FileInfo) int64 {
	b := 2*st.Size() + budgetSlack
	if alloc, ok := allocated(st); ok && alloc > 0 {
		b = min(b, sparseFactor*alloc+budgetSlack)
	}
	return b
}

// budgetReader is an io.ReaderAt that fails once left bytes have been
// read, or once done is closed (the command was interrupted).
// A parser that ignores a failed read (debug/elf reads some tables
// optionally) still sees the file refused: err says why reading stopped.
type budgetReader struct {
	r    io.ReaderAt
	left int64
	done <-chan struct{}
	err  error
}

func (b *budgetReader) ReadAt(p []byte, off int64) (int, error) {
	select {
	case <-b.done:
		b.err = errInterrupted
	default:
		if int64(len(p)) > b.left {
			b.err = errBudget
		}
	}
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.ReadAt(p, off)
	b.left -= int64(n)
	return n, err
}

// errInterrupted is returned by reads after Options.Done was closed.
var errInterrupted = errors.New("interrupted")
