package input

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/iotrace/iotrace/event"
)

// OpenFrom is Open that also reads standard input and pipes: path "-" is
// stdin, and a path that is not a regular file (a FIFO, /dev/stdin on a
// pipe, a process substitution) is read once into a temporary file
// (created 0600 in the system's temporary directory, removed by Close),
// because the .iot and .etl readers read a file twice (facts first, then
// events) and every format is recognized from its first bytes.
func OpenFrom(path string, stdin io.Reader) (Reader, error) {
	name, spool, err := spoolIfStream(path, stdin)
	if err != nil || spool == "" {
		if err != nil {
			return nil, err
		}
		return Open(path) // Open says what is wrong, or reads the file
	}
	r, err := Open(spool)
	if err != nil {
		os.Remove(spool)
		return nil, fmt.Errorf("%s (spooled to %s): %w", name, spool, err)
	}
	return &spooled{Reader: r, name: name, spool: spool, refs: new(int(1))}, nil
}

// OpenAllFrom is OpenAll that also reads standard input and pipes, as
// OpenFrom does: every trace of the stream (concatenated jsonl traces are
// several), the temporary copy removed when the last is closed.
func OpenAllFrom(path string, stdin io.Reader) ([]Reader, error) {
	name, spool, err := spoolIfStream(path, stdin)
	if err != nil || spool == "" {
		if err != nil {
			return nil, err
		}
		return OpenAll(path)
	}
	rs, err := OpenAll(spool)
	if err != nil {
		os.Remove(spool)
		return nil, fmt.Errorf("%s (spooled to %s): %w", name, spool, err)
	}
	refs := new(int(len(rs)))
	for i, r := range rs {
		rs[i] = &spooled{Reader: r, name: name, spool: spool, refs: refs}
	}
	return rs, nil
}

// spoolIfStream copies standard input ("-") or a path that is not a
// regular file into a temporary file and returns its path; "" for a
// regular file (or a path Open will explain).
func spoolIfStream(path string, stdin io.Reader) (name, spool string, err error) {
	name = path
	var src io.Reader
	if path == "-" {
		name, src = "standard input", stdin
		if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return name, "", fmt.Errorf("standard input is a terminal: pipe a trace into it (iotrace print - < trace.iot)")
		}
	} else {
		st, err := os.Stat(path)
		if err != nil || st.Mode().IsRegular() || st.IsDir() {
			return name, "", nil
		}
		f, err := os.Open(path)
		if err != nil {
			return name, "", err
		}
		defer f.Close()
		src = f
	}
	tmp, err := os.CreateTemp("", "iotrace-spool-*")
	if err != nil {
		return name, "", fmt.Errorf("%s: cannot spool it to a temporary file: %w", name, err)
	}
	spool = tmp.Name()
	n, err := io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && n == 0 {
		err = fmt.Errorf("empty, not a trace")
	}
	if err != nil {
		os.Remove(spool)
		return name, "", fmt.Errorf("%s: %w", name, err)
	}
	return name, spool, nil
}

// spooled is a Reader of a temporary copy of a stream, removed on Close.
type spooled struct {
	Reader
	name, spool string
	refs        *int // readers of the spool still open; the last Close removes it
}

func (s *spooled) Run(ctx context.Context, sink event.Sink) error {
	if err := s.Reader.Run(ctx, sink); err != nil {
		return fmt.Errorf("%s (spooled to %s): %w", s.name, s.spool, err)
	}
	return nil
}

func (s *spooled) Close() error {
	err := s.Reader.Close()
	if s.refs == nil {
		return err
	}
	*s.refs--
	last := *s.refs == 0
	s.refs = nil
	if !last {
		return err
	}
	if rerr := os.Remove(s.spool); err == nil && rerr != nil {
		err = rerr
	}
	return err
}
