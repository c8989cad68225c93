package live

import (
	"fmt"
	"io"
	"os"
	"time"
)

// commandIO gives the traced command its standard files: this process's
// own, with backend.Options.CommandStdout as its output when set (the CLI
// sets it to stderr when the trace itself goes to stdout). A CommandStdout
// that is not a file gets a pipe, and what the command writes into it is
// copied there.
type commandIO struct {
	stdio Stdio
	// pw is this process's copy of the pipe's write end until the child
	// holds its own (nil without a pipe).
	pw *os.File
	// copied receives the copy's result once the pipe is closed by every
	// process holding its write end (nil without a pipe).
	copied chan error
}

// newCommandIO returns the standard files for a command whose output goes
// to stdout (nil: this process's stdout).
func newCommandIO(stdout io.Writer) (*commandIO, error) {
	c := &commandIO{stdio: Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}}
	if stdout == nil {
		return c, nil
	}
	if f, ok := stdout.(*os.File); ok {
		if f != nil {
			c.stdio.Stdout = f
		}
		return c, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("a pipe for the command's output: %w", err)
	}
	c.stdio.Stdout, c.pw = pw, pw
	c.copied = make(chan error, 1)
	go func() {
		_, err := io.Copy(stdout, pr)
		pr.Close()
		c.copied <- err
	}()
	return c, nil
}

// started closes this process's copy of the pipe's write end once
// StartSuspended has returned (the child, if it started, holds its own):
// the copy then ends when the command and the processes that inherited
// its output have closed it.
func (c *commandIO) started() {
	if c.pw != nil {
		c.pw.Close()
		c.pw = nil
	}
}

// wait waits, once the command has exited, up to d for the rest of its
// output to be copied; the error says why not all of it was.
func (c *commandIO) wait(d time.Duration) error {
	if c.copied == nil {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-c.copied:
		if err != nil {
			return fmt.Errorf("copy the command's output: %w", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("the command's output is still open %v after it exited (held by a process it started?): what comes later is not copied", d)
	}
}
