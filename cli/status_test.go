package cli

import (
	"io"

	"github.com/iotrace/iotrace/event"
)

// progressShown reports whether convert and print show a read's progress
// on stderr, writing to path (stdout for "-").
func progressShown(stderr io.Writer, path string, stdout io.Writer) bool {
	next := &countSink{}
	s, stop := readProgress(stderr, nil, "in.iot", next, false, isStdout(path) && isTerminal(stdout))
	stop()
	return s != event.Sink(next)
}
