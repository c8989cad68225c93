package ring

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

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

// DefaultSaveDelay is how long a Trigger waits at most for the stream to
// pass a save request's time.
const DefaultSaveDelay = time.Second

// DefaultSaveInterval is the least time between two saves a Trigger
// makes on request.
const DefaultSaveInterval = 10 * time.Second

// RefusedCounter names the informational counter of save requests a
// Trigger refused (too soon after the last save).
const RefusedCounter = "flight recorder: save requests refused (too soon after the last save)"

// Trigger passes a stream on to Sink (a Ring, or filters in front of
// one) and calls OnSave for each `iotrace mark --save` marker. A marker
// can overtake events of the moments before it (they wait in kernel
// buffers), so the save happens when the first event that started after
// the marker arrives, or Delay after the marker when none does: the saved
// trace holds what happened up to the request. Put it before any filter:
// a --layer or --op selection drops markers, not the request.
//
// Saves are rate-limited: a request less than Interval after the last
// one taken is refused (OnRefused is called and it is counted in the
// trailer), so that no one can make the recorder write a file per
// request as often as they like.
type Trigger struct {
	Sink   event.Sink
	OnSave func()
	// OnRefused, when set, is called for each request refused.
	OnRefused func()
	// Delay bounds the wait for later events; 0 means DefaultSaveDelay.
	Delay time.Duration
	// Interval is the least time between two requests taken; 0 means
	// DefaultSaveInterval.
	Interval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	pending bool
	at      int64 // the pending request's time
	seq     uint64
	last    time.Time // when the last request was taken
	refused uint64
}

// Begin implements event.Sink.
func (t *Trigger) Begin(h *event.Header) error { return t.Sink.Begin(h) }

// Fact implements event.Sink.
func (t *Trigger) Fact(f *event.Fact) error { return t.Sink.Fact(f) }

// End implements event.Sink; a pending save is made before the end, and
// the requests refused are counted in the trailer.
func (t *Trigger) End(tr *event.Trailer) error {
	t.fire(0, true)
	t.mu.Lock()
	n := t.refused
	t.mu.Unlock()
	if n > 0 {
		c := *tr
		c.Stats = event.Stats{Counters: append([]event.Counter(nil), tr.Stats.Counters...)}
		c.Stats.Add(event.CountInfo, RefusedCounter, n)
		tr = &c
	}
	return t.Sink.End(tr)
}

// Refused returns how many save requests were refused.
func (t *Trigger) Refused() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

// take reports whether a save request arriving now is taken (not too
// soon after the last one taken), counting it when it is not.
func (t *Trigger) take() bool {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	interval := t.Interval
	if interval <= 0 {
		interval = DefaultSaveInterval
	}
	at := now()
	t.mu.Lock()
	ok := t.last.IsZero() || at.Sub(t.last) >= interval || at.Before(t.last)
	if ok {
		t.last = at
	} else {
		t.refused++
	}
	t.mu.Unlock()
	if !ok && t.OnRefused != nil {
		t.OnRefused()
	}
	return ok
}

// Event implements event.Sink.
func (t *Trigger) Event(e *event.Event) error {
	if e.Op != event.OpMarker {
		t.fire(e.Time, false)
	}
	if err := t.Sink.Event(e); err != nil {
		return err
	}
	if t.OnSave != nil && IsSaveRequest(e) && t.take() {
		t.mu.Lock()
		t.pending, t.at = true, e.Time
		t.seq++
		seq := t.seq
		t.mu.Unlock()
		delay := t.Delay
		if delay <= 0 {
			delay = DefaultSaveDelay
		}
		time.AfterFunc(delay, func() {
			t.mu.Lock()
			late := t.pending && t.seq == seq
			t.pending = t.pending && !late
			t.mu.Unlock()
			if late {
				t.OnSave()
			}
		})
	}
	return nil
}

// fire saves when a request is pending and the stream has passed its time
// (or always).
func (t *Trigger) fire(now int64, always bool) {
	if t.OnSave == nil {
		return
	}
	t.mu.Lock()
	due := t.pending && (always || now > t.at)
	if due {
		t.pending = false
	}
	t.mu.Unlock()
	if due {
		t.OnSave()
	}
}
