package ring

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/tracefile"
)

// IsSaveRequest reports whether e is the marker of `iotrace mark --save`.
func IsSaveRequest(e *event.Event) bool {
	return e.Op == event.OpMarker && strings.HasPrefix(e.Note, SavePrefix)
}

// SaveRequestText is the marker text `iotrace mark --save TEXT` sends.
func SaveRequestText(text string) string {
	if text == "" {
		return SavePrefix
	}
	return SavePrefix + " " + text
}

// CreateOutput creates path for writing a trace: mode 0600, failing when
// anything exists there (O_EXCL also refuses a symbolic link, dangling or
// not, so a trace is never written through one).
func CreateOutput(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
}

// NumberedName returns the name of save n of a recording to path:
// "t.iot" gives "t.1.iot", "t.2.iot", ...
func NumberedName(path string, n int) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + strconv.Itoa(n) + ext
}

// maxNameTries bounds the search for a free numbered name.
const maxNameTries = 10000

// Recorder saves a Ring to files named after Path: SaveNext writes a new
// numbered file on each request (never replacing one), SaveTo the file
// of the recording's end.
type Recorder struct {
	Ring *Ring
	// Path is the recording's file name (-o).
	Path string

	mu   sync.Mutex // serializes SaveNext
	next int
}

// SaveNext writes the ring to the next free numbered name (see
// NumberedName) and returns the name and what was saved.
func (r *Recorder) SaveNext() (string, Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == 0 {
		r.next = 1
	}
	for tries := 0; tries < maxNameTries; tries++ {
		name := NumberedName(r.Path, r.next)
		r.next++
		f, err := CreateOutput(name)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return name, Stats{}, fmt.Errorf("create %s: %w", name, err)
		}
		st, err := r.SaveTo(f, name)
		return name, st, err
	}
	return "", Stats{}, fmt.Errorf("no free name for a save of %s after %d tries", r.Path, maxNameTries)
}

// SaveTo writes the ring as a .iot trace to f and closes f; name is for
// errors. A file whose save failed is removed.
func (r *Recorder) SaveTo(f *os.File, name string) (Stats, error) {
	w := tracefile.NewWriter(f, tracefile.WriterOptions{})
	st, err := r.Ring.Save(w)
	if err == nil {
		err = w.Close()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return st, fmt.Errorf("save %s: %w", name, err)
	}
	return st, nil
}

// Trigger passes a stream to a Ring and calls OnSave after each `iotrace
// mark --save` marker has reached it, so the saved trace ends with the
// request.
type Trigger struct {
	*Ring
	OnSave func()
}

// Event implements event.Sink.
func (t Trigger) Event(e *event.Event) error {
	if err := t.Ring.Event(e); err != nil {
		return err
	}
	if t.OnSave != nil && IsSaveRequest(e) {
		t.OnSave()
	}
	return nil
}
