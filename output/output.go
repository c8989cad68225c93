package output

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/iotrace/iotrace/event"
)

// Options configure every output format.
type Options struct {
	// Facts includes the trace's facts (handle → path bindings,
	// processes, devices): as objects in jsonl, as comment lines in
	// text. csv has no place for them and ignores this.
	Facts bool
	// WallClock prints event times as UTC wall-clock times instead of
	// seconds from the trace start (text, csv).
	WallClock bool
	// Terminal says the output goes to a terminal: csv then shows names
	// from the traced system (paths, process names, notes) by the
	// terminal rule (internal/termesc), as text always does; written to a
	// file, csv keeps the exact bytes.
	Terminal bool
	// Frames, when set, gives the frames of an event's stack, innermost
	// first, each already rendered ("inner_fn (a.c:12)",
	// "libc.so.6+0x2a1f0"); text prints them under the event, one per
	// line (print --stacks). The other formats ignore it.
	Frames func(e *event.Event) []string
	// Counters lists every counter in text's footer, those that are 0
	// included; without it text lists only the counters that are not 0
	// (jsonl always carries them all).
	Counters bool
}

// formats maps a format name to its constructor.
var formats = map[string]func(io.Writer, Options) event.Sink{
	"text":  func(w io.Writer, o Options) event.Sink { return NewText(w, o) },
	"jsonl": func(w io.Writer, o Options) event.Sink { return newJSONL(w, o) },
	"csv":   func(w io.Writer, o Options) event.Sink { return NewCSV(w, o) },
}

// Formats returns the names of the output formats, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New returns the sink for format ("text", "jsonl" or "csv") writing to w.
// Its End flushes everything buffered; it never closes w.
func New(format string, w io.Writer, opts Options) (event.Sink, error) {
	f, ok := formats[strings.ToLower(format)]
	if !ok {
		return nil, fmt.Errorf("unknown output format %q (valid: %s)", format, strings.Join(Formats(), ", "))
	}
	return f(w, opts), nil
}

// FormatForPath returns the output format implied by a file name's
// extension (".jsonl", ".json", ".ndjson", ".csv", ".txt", ".log"), or "".
func FormatForPath(path string) string {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return ""
	}
	switch strings.ToLower(path[i+1:]) {
	case "jsonl", "ndjson", "json":
		return "jsonl"
	case "csv":
		return "csv"
	case "txt", "text", "log":
		return "text"
	}
	return ""
}

// flushSize is the buffered size above which sinks write to the writer.
const flushSize = 64 << 10

// writer is the buffered writer the sinks share: it keeps the first write
// error and reports it from every later call.
type writer struct {
	w   io.Writer
	buf []byte
	err error
}

func (w *writer) maybeFlush() error {
	if len(w.buf) >= flushSize {
		return w.flush()
	}
	return w.err
}

func (w *writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 {
		if _, err := w.w.Write(w.buf); err != nil {
			w.err = fmt.Errorf("write output: %w", err)
		}
		w.buf = w.buf[:0]
	}
	return w.err
}
