// Package outfile creates the files iotrace commands write (traces,
// converted traces, script output, heatmaps), by one rule for every
// command, because iotrace runs as root and its outputs hold every
// process's paths and command lines:
//
//   - An output is never one of the command's own inputs: Create refuses a
//     path that is the same file (device and inode, not name) as an input,
//     standard input included when it is a regular file (CreateReading).
//   - A symbolic link at the final path component is an error: it is never
//     written through nor replaced (a user's link in /tmp must not make
//     root overwrite the link's target, nor lose the link silently).
//   - The data goes to a temporary file in the target directory
//     (".NAME.tmp-RANDOM", created 0600 with O_EXCL) that Commit renames
//     into place, so a failed run never leaves a half-written file where a
//     good one was. A new file is 0600; a replaced regular file keeps its
//     permission bits.
//   - An existing device or FIFO (-o /dev/null, a named pipe) is written
//     in place, there being nothing to rename over, when it is the user's
//     own or root's; another user's is refused (a FIFO in /tmp would receive the
//     trace). A replaced file keeps its mode only when it was the user's
//     own: another user's 0666 file must not make the trace readable.
//
// The standard library has every call needed; the package holds only the
// rule, so that it is the same in every command.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// File is an output being written. Write to it, then Commit it, or Abort
// to remove what was written.
type File struct {
	*os.File
	path string // the final path
	temp string // the temporary path; "" when writing in place
	mode fs.FileMode

	mu   sync.Mutex // Rescue may race with the others
	done bool
}

// Create starts the output at path. inputs are the files the command
// reads ("" and "-" are skipped); path must not be one of them.
func Create(path string, inputs ...string) (*File, error) {
	return CreateReading(path, nil, inputs...)
}

// CreateReading is Create for a command that also reads standard input:
// stdin describes the file behind it (nil when the command does not read
// it). When that is a regular file, path must not be it either
// ("convert - -o t.iot < t.iot" would replace the trace it reads); a
// pipe or a terminal cannot be an output file.
func CreateReading(path string, stdin fs.FileInfo, inputs ...string) (*File, error) {
	st, err := os.Lstat(path)
	switch {
	case err == nil:
		if st.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("output %s is a symbolic link: iotrace does not write through links (remove it or name the target)", path)
		}
		if err := notAnInput(path, st, stdin, inputs); err != nil {
			return nil, err
		}
		if st.IsDir() {
			return nil, fmt.Errorf("output %s is a directory", path)
		}
		if !st.Mode().IsRegular() {
			if !trusted(st) {
				return nil, fmt.Errorf("output %s is a %s of another user: iotrace does not write into it", path, kind(st))
			}
			// A device or FIFO: write in place, without creating.
			f, err := os.OpenFile(path, os.O_WRONLY|nofollow, 0)
			if err != nil {
				return nil, err
			}
			return &File{File: f, path: path}, nil
		}
	case errors.Is(err, fs.ErrNotExist):
		st = nil
	default:
		return nil, fmt.Errorf("create %s: %w", path, inDirectory(filepath.Dir(path), err))
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, inDirectory(dir, err))
	}
	o := &File{File: f, path: path, temp: f.Name(), mode: 0o600}
	if st != nil && ownedByMe(st) {
		o.mode = st.Mode().Perm()
	}
	return o, nil
}

// inDirectory turns an error about a name in dir (the output, its
// temporary file, which the user never named) into one about dir: what is
// wrong there is the directory (missing, not a directory, not writable).
func inDirectory(dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: "directory", Path: dir, Err: pe.Err}
	}
	return err
}

// notAnInput refuses an existing output that is the same file as one of
// inputs, or as standard input (stdin, when a regular file).
func notAnInput(path string, st, stdin fs.FileInfo, inputs []string) error {
	if stdin != nil && stdin.Mode().IsRegular() && os.SameFile(st, stdin) {
		return fmt.Errorf("output %s is the same file as the input - (standard input): refusing to overwrite it", path)
	}
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		ist, err := os.Stat(in)
		if err == nil && os.SameFile(st, ist) {
			return fmt.Errorf("output %s is the same file as the input %s: refusing to overwrite it", path, in)
		}
	}
	return nil
}

// Path returns the final path.
func (o *File) Path() string { return o.path }

// TempPath returns where the data is until Commit ("" when written in
// place).
func (o *File) TempPath() string { return o.temp }

// Commit flushes the data to disk and renames the temporary file into
// place (rename replaces whatever is at the path, a link included, and
// never follows it).
func (o *File) Commit() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return nil
	}
	o.done = true
	if o.temp == "" {
		return o.File.Close()
	}
	err := o.File.Chmod(o.mode)
	if err == nil {
		err = o.File.Sync()
	}
	if cerr := o.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.temp, o.path)
	}
	if err != nil {
		os.Remove(o.temp)
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file, leaving whatever was at
// the path. It does nothing after Commit.
func (o *File) Abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return
	}
	o.done = true
	o.File.Close()
	if o.temp != "" {
		os.Remove(o.temp)
	}
}

// Keep closes the temporary file and leaves it where it is, for data that
// must not be lost although the run failed (a recording): it returns the
// temporary path.
func (o *File) Keep() (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return o.temp, nil
	}
	o.done = true
	err := o.File.Close()
	if o.temp == "" {
		return o.path, err
	}
	return o.temp, err
}

// Rescue renames the temporary file into place as it is now, for a
// process about to quit before its clean end (a second Ctrl-C): what was
// written so far is kept under the file's name rather than lost in a
// hidden temporary file. It may run while another goroutine writes: that
// write fails or lands in the renamed file. ok is false when there was
// nothing to rename (committed, aborted, kept, written in place, or
// nothing written: the temporary file is then removed).
func (o *File) Rescue() (ok bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done || o.temp == "" {
		return false, nil
	}
	o.done = true
	if st, err := o.File.Stat(); err == nil && st.Size() == 0 {
		// Nothing written: whatever was at the path stays.
		o.File.Close()
		os.Remove(o.temp)
		return false, nil
	}
	o.File.Chmod(o.mode)
	o.File.Close()
	// A write in flight holds the file open until it returns; Windows
	// cannot rename an open file.
	for try := 0; ; try++ {
		err = os.Rename(o.temp, o.path)
		if err == nil || try == 20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return false, fmt.Errorf("rename %s to %s: %w", o.temp, o.path, err)
	}
	return true, nil
}

// Removed reports whether the temporary file was removed while being
// written (its directory removed, or the file itself): Commit cannot put
// it in place, Salvage can copy it elsewhere.
func (o *File) Removed() bool {
	if o.temp == "" {
		return false
	}
	st, err := o.File.Stat()
	return err == nil && unlinked(st)
}

// CommitAt commits the first size bytes of what was written, for an
// output whose writing failed (a full disk): size is where the last whole
// piece ends. A failed fsync is reported with the file renamed into place
// all the same (the data the file holds is checked when read).
func (o *File) CommitAt(size int64) error {
	o.mu.Lock()
	if o.done {
		o.mu.Unlock()
		return nil
	}
	err := o.File.Truncate(size)
	o.mu.Unlock()
	if err != nil {
		return fmt.Errorf("write %s: cut it to its last whole part: %w", o.path, err)
	}
	return o.Commit()
}

// Salvage copies what was written to a new file in dir (named after the
// output, 0600, never an existing file), for an output whose temporary
// file was removed (see Removed), and closes the output; it returns the
// new file's path.
func (o *File) Salvage(dir string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return "", nil
	}
	o.done = true
	defer o.File.Close()
	ext := filepath.Ext(o.path)
	dst, err := os.CreateTemp(dir, "iotrace-"+strings.TrimSuffix(filepath.Base(o.path), ext)+"-*"+ext)
	if err != nil {
		return "", fmt.Errorf("save the recording of %s elsewhere: %w", o.path, err)
	}
	st, err := o.File.Stat()
	if err == nil {
		_, err = io.Copy(dst, io.NewSectionReader(o.File, 0, st.Size()))
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst.Name())
		return "", fmt.Errorf("save the recording of %s to %s: %w", o.path, dst.Name(), err)
	}
	return dst.Name(), nil
}

// kind names a file type for a message.
func kind(st fs.FileInfo) string {
	switch m := st.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}
