// Package rotate records a long trace as a series of self-contained .iot
// files: a new file every interval or every size (or both, whichever comes
// first), each named with the host and its UTC start time, each beginning
// with the facts its events need (the open descriptors and their names,
// the processes, threads, devices and volumes that hold at its start, as
// rundown facts), closed and fsynced before the next one starts. Old files
// of the series are removed to keep at most Keep files or MaxTotal bytes.
//
// Events and facts go to exactly one file: the series switches files
// between two of them, so nothing is lost or written twice at a boundary.
package rotate

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/factset"
	"github.com/iotrace/iotrace/tracefile"
)

// Options configure a Series.
type Options struct {
	// Dir is the directory the files go to.
	Dir string
	// Prefix starts every file name: PREFIX-HOST-20060102T150405.000Z.iot
	// (HOST-... alone when empty).
	Prefix string
	// Host is the host name in file names; the trace header's when empty.
	Host string
	// Every starts a new file when the current one is this old (0: never).
	Every time.Duration
	// MaxBytes starts a new file when the current one is this large
	// (0: never).
	MaxBytes int64
	// Keep removes the oldest files of the series (this recording's and
	// earlier ones' in Dir) beyond the newest Keep (0: keep all).
	Keep int
	// MaxTotal removes the oldest files of the series while they take
	// more than MaxTotal bytes together (0: no limit). The current file is
	// never removed.
	MaxTotal int64
	// FlushEvery writes pending records to the current file at this
	// interval, so that a crash loses at most that much (0: 1 s).
	FlushEvery time.Duration
	// Writer configures each file's tracefile.Writer.
	Writer tracefile.WriterOptions
	// Now is the clock (time.Now when nil); tests set it.
	Now func() time.Time
	// OnFile is called with each file's path once it is complete (closed
	// and fsynced), and with its event count.
	OnFile func(path string, events uint64)
}

// Counter names in the trailers of a series' files.
const (
	// CounterPart is an info counter: the file's position in the series
	// (1 for the first file of this recording).
	CounterPart = "rotate: part of a rotated recording (number)"
	// CounterEvents is an info counter: the events in this file.
	CounterEvents = "rotate: events in this file"
	// CounterRemoved is an info counter: old files of the series removed
	// so far to keep within Keep or MaxTotal.
	CounterRemoved = "rotate: older files removed (--keep / --max-total)"
)

// Series is an event.Sink that writes a rotated series of .iot files.
type Series struct {
	opts  Options
	hdr   event.Header
	facts *factset.Set

	cur       *tracefile.Writer
	curFile   *os.File
	curPath   string
	curStart  time.Time
	curEvents uint64
	part      int
	nextFlush time.Time
	lastTime  int64
	removed   uint64
	err       error
	// closedBytes is the size of the files closed so far; written that
	// plus the current file's at its last flush, for Written.
	closedBytes uint64
	written     atomic.Uint64
	// mine are the files this Series wrote, oldest first (the current
	// one last).
	mine []string
}

// New returns a Series writing to opts.Dir. The first file is created by
// Begin.
func New(opts Options) (*Series, error) {
	if opts.Every < 0 || opts.MaxBytes < 0 || opts.Keep < 0 || opts.MaxTotal < 0 {
		return nil, errors.New("rotate: negative interval, size or limit")
	}
	if opts.Every == 0 && opts.MaxBytes == 0 {
		return nil, errors.New("rotate: neither an interval nor a size to rotate at")
	}
	st, err := os.Stat(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("rotate: output directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("rotate: %s is not a directory", opts.Dir)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = time.Second
	}
	if strings.ContainsAny(opts.Prefix, `/\`) {
		return nil, fmt.Errorf("rotate: prefix %q holds a path separator", opts.Prefix)
	}
	return &Series{opts: opts, facts: factset.New()}, nil
}

// Path returns the current file's path.
func (s *Series) Path() string { return s.curPath }

// Begin implements event.Sink: it creates the first file.
func (s *Series) Begin(h *event.Header) error {
	s.hdr = *h
	if s.opts.Host == "" {
		s.opts.Host = cmp.Or(h.Hostname, "unknown-host")
	}
	return s.open()
}

// Fact implements event.Sink.
func (s *Series) Fact(f *event.Fact) error {
	if s.err != nil {
		return s.err
	}
	s.facts.Apply(f)
	if err := s.cur.Fact(f); err != nil {
		return s.fail(err)
	}
	return s.tick()
}

// Event implements event.Sink.
func (s *Series) Event(e *event.Event) error {
	if s.err != nil {
		return s.err
	}
	if err := s.cur.Event(e); err != nil {
		return s.fail(err)
	}
	s.curEvents++
	s.lastTime = max(s.lastTime, e.Time)
	return s.tick()
}

// End implements event.Sink: the last file gets the recording's trailer
// (its losses cover the whole recording) and is closed.
func (s *Series) End(t *event.Trailer) error {
	if s.err != nil {
		return s.err
	}
	tr := *t
	tr.Stats = event.Stats{Counters: append([]event.Counter(nil), t.Stats.Counters...)}
	return s.close(&tr)
}

// Close closes the current file without a trailer when End was not
// called (readers report it as cut short, and read all it holds).
func (s *Series) Close() error {
	if s.cur == nil {
		return nil
	}
	err := s.cur.Close()
	if cerr := s.curFile.Close(); err == nil && cerr != nil {
		err = cerr
	}
	s.cur = nil
	return err
}

func (s *Series) fail(err error) error {
	s.err = fmt.Errorf("%s (part %d, %d events, %d bytes written): %w", s.curPath, s.part, s.curEvents, s.cur.Offset(), err)
	return s.err
}

// tick flushes the current file once per FlushEvery and starts the next
// file when the current one is old or large enough.
func (s *Series) tick() error {
	now := s.opts.Now()
	if (s.opts.Every > 0 && now.Sub(s.curStart) >= s.opts.Every) ||
		(s.opts.MaxBytes > 0 && s.cur.Offset() >= s.opts.MaxBytes) {
		return s.rotate()
	}
	if now.After(s.nextFlush) {
		s.nextFlush = now.Add(s.opts.FlushEvery)
		if err := s.cur.Flush(); err != nil {
			return s.fail(err)
		}
		s.written.Store(s.closedBytes + uint64(s.cur.Offset()))
	}
	return nil
}

// Written returns the bytes the series has written: its closed files and
// the current one as of its last flush (about once per FlushEvery). It may
// be called from any goroutine (a status line) while the stream runs.
func (s *Series) Written() uint64 { return s.written.Load() }

// rotate ends the current file and starts the next.
func (s *Series) rotate() error {
	var tr event.Trailer
	tr.End = s.lastTime
	if err := s.close(&tr); err != nil {
		return err
	}
	if err := s.open(); err != nil {
		return err
	}
	return s.prune()
}

// close writes the trailer with the file's own counts, fsyncs and closes
// the current file.
func (s *Series) close(tr *event.Trailer) error {
	tr.Stats.Set(event.CountInfo, CounterPart, uint64(s.part))
	tr.Stats.Set(event.CountInfo, CounterEvents, s.curEvents)
	if s.removed > 0 {
		tr.Stats.Set(event.CountInfo, CounterRemoved, s.removed)
	}
	if err := s.cur.End(tr); err != nil {
		return s.fail(err)
	}
	if err := s.cur.Close(); err != nil {
		return s.fail(err)
	}
	s.closedBytes += uint64(s.cur.Offset())
	s.written.Store(s.closedBytes)
	if err := s.curFile.Sync(); err != nil {
		return s.fail(fmt.Errorf("fsync: %w", err))
	}
	if err := s.curFile.Close(); err != nil {
		return s.fail(err)
	}
	s.cur = nil
	if s.opts.OnFile != nil {
		s.opts.OnFile(s.curPath, s.curEvents)
	}
	return nil
}

// open creates the next file: the trace header, then every fact that
// holds now as a rundown.
func (s *Series) open() error {
	now := s.opts.Now().UTC()
	var path string
	var f *os.File
	for range 1000 {
		path = filepath.Join(s.opts.Dir, s.name(now))
		var err error
		// O_EXCL: never an existing file, never through a symlink (a
		// symlink at the path makes the create fail too).
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			s.err = fmt.Errorf("create %s: %w", path, err)
			return s.err
		}
		now = now.Add(time.Millisecond) // a name taken: the next millisecond
		f = nil
	}
	if f == nil {
		s.err = fmt.Errorf("create %s: every name in the next second is taken", path)
		return s.err
	}
	s.part++
	s.mine = append(s.mine, path)
	s.cur, s.curFile, s.curPath = tracefile.NewWriter(f, s.opts.Writer), f, path
	s.curStart, s.curEvents = s.opts.Now(), 0
	s.nextFlush = s.curStart.Add(s.opts.FlushEvery)
	if err := s.cur.Begin(&s.hdr); err != nil {
		return s.fail(err)
	}
	if err := s.facts.Snapshot(s.lastTime, s.cur.Fact); err != nil {
		return s.fail(err)
	}
	return nil
}

// Ext is the extension of a series' files.
const Ext = ".iot"

// timeLayout is the UTC start time in a file name: sortable as text.
const timeLayout = "20060102T150405.000Z"

func (s *Series) name(t time.Time) string {
	n := s.opts.Host + "-" + t.Format(timeLayout) + Ext
	if s.opts.Prefix != "" {
		n = s.opts.Prefix + "-" + n
	}
	return n
}

// Files returns the files of a series in dir, oldest first: those named
// [PREFIX-]HOST-TIME.iot.
func Files(dir, prefix, host string) ([]string, error) {
	head := host + "-"
	if prefix != "" {
		head = prefix + "-" + head
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, head) || !strings.HasSuffix(n, Ext) {
			continue
		}
		if _, err := time.Parse(timeLayout, strings.TrimSuffix(strings.TrimPrefix(n, head), Ext)); err != nil {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	slices.Sort(out)
	return out, nil
}

// prune removes the oldest files of the series beyond Keep and MaxTotal.
// Only files the series owns count and may go (see owned): the earlier
// recordings' files, oldest first by their header's start, then this
// recording's own, in the order it wrote them; never the current file.
func (s *Series) prune() error {
	if s.opts.Keep == 0 && s.opts.MaxTotal == 0 {
		return nil
	}
	earlier, err := s.earlier()
	if err != nil {
		return fmt.Errorf("rotate: list %s: %w", s.opts.Dir, err)
	}
	files := earlier
	mine := s.mine[:0]
	for _, p := range s.mine {
		// A file of ours that is gone, or is no longer a regular file,
		// is no longer ours.
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			mine = append(mine, p)
			files = append(files, ownedFile{path: p, size: st.Size()})
		}
	}
	s.mine = mine
	var total int64
	for _, f := range files {
		total += f.size
	}
	for i, f := range files {
		if f.path == s.curPath {
			break
		}
		over := (s.opts.Keep > 0 && len(files)-i > s.opts.Keep) || (s.opts.MaxTotal > 0 && total > s.opts.MaxTotal)
		if !over {
			break
		}
		if err := os.Remove(f.path); err != nil {
			return fmt.Errorf("rotate: remove %s: %w", f.path, err)
		}
		total -= f.size
		s.removed++
		if len(s.mine) > 0 && s.mine[0] == f.path {
			s.mine = s.mine[1:]
		}
	}
	return nil
}

// ownedFile is a file of the series that retention may remove.
type ownedFile struct {
	path  string
	size  int64
	start int64 // its trace header's StartWall
}

// earlier returns the files of earlier recordings of the series that it
// owns, oldest first. A file named like the series is one of its files
// only when it is a regular file owned by this process's user whose
// trace header names the same host and starts before this recording:
// a file of another kind, another user's, one that cannot be read, or
// one dated after this recording (a planted name, a clock stepped back)
// is left alone and not counted.
func (s *Series) earlier() ([]ownedFile, error) {
	names, err := Files(s.opts.Dir, s.opts.Prefix, s.opts.Host)
	if err != nil {
		return nil, err
	}
	var out []ownedFile
	for _, p := range names {
		if slices.Contains(s.mine, p) {
			continue
		}
		h, size, ok := readOwned(p)
		if ok && h.Hostname == s.hdr.Hostname && h.StartWall < s.hdr.StartWall {
			out = append(out, ownedFile{path: p, size: size, start: h.StartWall})
		}
	}
	slices.SortStableFunc(out, func(a, b ownedFile) int { return cmp.Compare(a.start, b.start) })
	return out, nil
}

// readOwned reads the trace header of the file at path when it is a
// regular file of this process's user (opened without following a
// symbolic link or waiting on a FIFO).
func readOwned(path string) (event.Header, int64, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNoFollow|openNonBlock, 0)
	if err != nil {
		return event.Header{}, 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || !ownedByMe(st) {
		return event.Header{}, 0, false
	}
	r, err := tracefile.NewReader(io.LimitReader(f, maxHeaderRead))
	if err != nil {
		return event.Header{}, 0, false
	}
	return r.Header(), st.Size(), true
}

// maxHeaderRead bounds what is read of a file to find its trace header.
const maxHeaderRead = 1 << 20
