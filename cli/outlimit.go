package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// A command that reads traces writes at most outputPerInputByte bytes for
// every byte of its inputs, plus outputSlack: nothing a file holds (a
// path of 32,767 UTF-16 units named by every event, a stack of
// event.MaxStackFrames frames in modules of long names under every
// event) can make it write more. A real trace comes nowhere near: text
// is about 8 times a .iot, 5 to 20 with --stacks.
const (
	outputPerInputByte = 1024
	outputSlack        = 16 << 20
)

// outputLimit returns the most bytes a command reading inputs may write,
// or 0 (no limit) when the size of an input is not known (a pipe), or
// there is none.
func outputLimit(stdin io.Reader, inputs []string) int64 {
	if len(inputs) == 0 {
		return 0
	}
	var total int64
	for _, in := range inputs {
		var st fs.FileInfo
		var err error
		if in == "-" {
			st = stdinFile(stdin, inputs)
			if st == nil {
				return 0
			}
		} else if st, err = os.Stat(in); err != nil {
			return 0 // the command says what is wrong
		}
		if !st.Mode().IsRegular() {
			return 0
		}
		total += st.Size()
	}
	return outputPerInputByte*total + outputSlack
}

// outputLimitError stops a command whose output reached its limit
// (outputLimit): the output holds every event before, and the command
// fails as for a damaged input (exit 2).
type outputLimitError struct {
	limit int64
}

func (e *outputLimitError) Error() string {
	return fmt.Sprintf("the output reached %d bytes, %d bytes per byte of the input plus %d MiB: the input holds far more than a trace writes (built to expand?); the output was stopped",
		e.limit, outputPerInputByte, outputSlack>>20)
}

// isOutputLimit reports whether err is an outputLimitError.
func isOutputLimit(err error) bool {
	var le *outputLimitError
	return errors.As(err, &le)
}
