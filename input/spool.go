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
	name := path
	var src io.Reader
	if path == "-" {
		name, src = "standard input", stdin
		if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return nil, fmt.Errorf("standard input is a terminal: pipe a trace into it (iotrace print - < trace.iot)")
		}
	} else {
		st, err := os.Stat(path)
		if err != nil || st.Mode().IsRegular() || st.IsDir() {
			return Open(path) // Open says what is wrong, or reads the file
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		src = f
	}
	tmp, err := os.CreateTemp("", "iotrace-spool-*")
	if err != nil {
		return nil, fmt.Errorf("%s: cannot spool it to a temporary file: %w", name, err)
	}
	spool := tmp.Name()
	n, err := io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && n == 0 {
		err = fmt.Errorf("empty, not a trace")
	}
	if err != nil {
		os.Remove(spool)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r, err := Open(spool)
	if err != nil {
		os.Remove(spool)
		return nil, fmt.Errorf("%s (spooled to %s): %w", name, spool, err)
	}
	return &spooled{Reader: r, name: name, spool: spool}, nil
}

// spooled is a Reader of a temporary copy of a stream, removed on Close.
type spooled struct {
	Reader
	name, spool string
}

func (s *spooled) Run(ctx context.Context, sink event.Sink) error {
	if err := s.Reader.Run(ctx, sink); err != nil {
		return fmt.Errorf("%s (spooled to %s): %w", s.name, s.spool, err)
	}
	return nil
}

func (s *spooled) Close() error {
	err := s.Reader.Close()
	if rerr := os.Remove(s.spool); err == nil && rerr != nil {
		err = rerr
	}
	return err
}
