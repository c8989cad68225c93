package output

import (
	"io"
	"strconv"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/termesc"
)

// CSVColumns are the columns of the csv format, in order.
var CSVColumns = []string{
	"id", "time_s", "time_of_day", "process", "pid", "tid", "cpu", "layer",
	"operation", "native", "path", "path2", "result", "status", "code",
	"duration_ns", "wait_ns", "offset", "size", "bytes", "fd", "device",
	"sector", "request", "cause", "flags", "detail",
}

// CSV renders a header row and one row per event with Process Monitor-like
// columns ([CSVColumns]). Times are seconds from the trace start with
// nanosecond digits; time_of_day is the UTC wall-clock time when the trace
// has a wall-clock anchor. Facts and the trailer have no rows; a caller
// that must show the trailer's problems does so elsewhere.
type CSV struct {
	out     writer
	opts    Options
	h       event.Header
	windows bool
	devices map[event.Device]string
	tmp     []byte
}

// NewCSV returns a csv sink writing to w.
func NewCSV(w io.Writer, opts Options) *CSV {
	return &CSV{
		out:     writer{w: w, buf: make([]byte, 0, flushSize+4096)},
		opts:    opts,
		devices: make(map[event.Device]string),
	}
}

// Begin implements event.Sink: it writes the header row.
func (c *CSV) Begin(h *event.Header) error {
	c.h = *h
	c.windows = h.OS == "windows"
	b := c.out.buf
	for i, col := range CSVColumns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, col...)
	}
	c.out.buf = append(b, '\r', '\n')
	return c.out.maybeFlush()
}

// field appends the scratch buffer as one CSV field followed by a comma.
func (c *CSV) field(b []byte) []byte {
	b = appendCSVBytes(b, c.tmp)
	c.tmp = c.tmp[:0]
	return append(b, ',')
}

// A text cell that starts like a formula (=, +, -, @, a tab or a carriage
// return) is written with a single quote before it, as OWASP's CSV
// injection guidance says: a spreadsheet then shows it as text instead
// of evaluating it (a process named "=cmd|' /C calc'!A0"). Number
// columns are numbers and are written as they are.

// formulaStart reports whether a cell starting with c is read as a
// formula.
func formulaStart(c byte) bool {
	return c == '=' || c == '+' || c == '-' || c == '@' || c == '\t' || c == '\r'
}

// appendCSVText appends s as one text field, neutralised when it starts
// like a formula.
func appendCSVText(b []byte, s string) []byte {
	if len(s) > 0 && formulaStart(s[0]) {
		return appendCSV(b, "'"+s)
	}
	return appendCSV(b, s)
}

func appendCSVBytes(b, s []byte) []byte {
	if len(s) > 0 && formulaStart(s[0]) {
		return appendCSV(b, "'"+string(s))
	}
	for _, ch := range s {
		if ch == ',' || ch == '"' || ch == '\n' || ch == '\r' {
			return appendCSV(b, string(s))
		}
	}
	if len(s) > 0 && (s[0] == ' ' || s[len(s)-1] == ' ') {
		return appendCSV(b, string(s))
	}
	return append(b, s...)
}

// name returns a name from the traced system as written: by the terminal
// rule (internal/termesc) when Options.Terminal, else as it is.
func (c *CSV) name(s string) string {
	if c.opts.Terminal {
		return termesc.String(s)
	}
	return s
}

// Event implements event.Sink.
func (c *CSV) Event(e *event.Event) error {
	b := c.out.buf
	b = strconv.AppendUint(b, e.ID, 10)
	b = append(b, ',')
	if e.Time < 0 {
		b = append(b, '-')
		b = strconv.AppendInt(b, -e.Time/1e9, 10)
		b = append(b, '.')
		b = appendFrac(b, uint64(-e.Time%1e9), 9)
	} else {
		b = strconv.AppendInt(b, e.Time/1e9, 10)
		b = append(b, '.')
		b = appendFrac(b, uint64(e.Time%1e9), 9)
	}
	b = append(b, ',')
	if c.h.StartWall != 0 {
		b = time.Unix(0, c.h.StartWall+e.Time).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000Z")
	}
	b = append(b, ',')
	b = appendCSVText(b, c.name(e.Comm))
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(e.Pid), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(e.Tid), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(e.CPU), 10)
	b = append(b, ',')
	b = append(b, e.Layer.String()...)
	b = append(b, ',')
	b = append(b, e.Op.String()...)
	b = append(b, ',')
	b = appendCSVText(b, c.name(e.Native))
	b = append(b, ',')
	b = appendCSVText(b, c.name(e.Path))
	b = append(b, ',')
	b = appendCSVText(b, c.name(e.Path2))
	b = append(b, ',')
	c.tmp = appendResult(c.tmp[:0], e, c.windows)
	b = c.field(b)
	b = append(b, e.Status.String()...)
	b = append(b, ',')
	if e.Code != 0 {
		b = strconv.AppendUint(b, uint64(e.Code), 10)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, e.Duration, 10)
	b = append(b, ',')
	if e.Wait != 0 {
		b = strconv.AppendInt(b, e.Wait, 10)
	}
	b = append(b, ',')
	if e.Offset >= 0 {
		b = strconv.AppendInt(b, e.Offset, 10)
	}
	b = append(b, ',')
	b = strconv.AppendUint(b, e.Size, 10)
	b = append(b, ',')
	if e.Bytes >= 0 {
		b = strconv.AppendInt(b, e.Bytes, 10)
	}
	b = append(b, ',')
	if e.FD >= 0 {
		b = strconv.AppendInt(b, int64(e.FD), 10)
	}
	b = append(b, ',')
	if !e.Dev.IsZero() {
		c.tmp = append(c.tmp[:0], e.Dev.String()...)
		if name := c.devices[e.Dev]; name != "" {
			c.tmp = append(c.tmp, " ("...)
			c.tmp = append(c.tmp, c.name(name)...)
			c.tmp = append(c.tmp, ')')
		}
	}
	b = c.field(b)
	if e.Layer == event.LayerBlock {
		b = strconv.AppendUint(b, e.Sector, 10)
	}
	b = append(b, ',')
	if e.Request != 0 {
		b = appendHex(b, e.Request)
	}
	b = append(b, ',')
	if e.Cause != 0 {
		b = strconv.AppendUint(b, e.Cause, 10)
	}
	b = append(b, ',')
	c.tmp = appendFlags(c.tmp[:0], e.Flags, '|')
	b = c.field(b)
	if e.Layer == event.LayerBlock {
		c.tmp = append(c.tmp[:0], "rwbs="...)
		c.tmp = appendRWBS(c.tmp, e)
		if e.Priority != 0 {
			c.tmp = append(c.tmp, " prio="...)
			c.tmp = strconv.AppendUint(c.tmp, uint64(e.Priority), 10)
		}
		if e.IOFlags != 0 {
			c.tmp = append(c.tmp, " ioflags="...)
			c.tmp = appendHex(c.tmp, uint64(e.IOFlags))
		}
	} else {
		c.tmp = appendFileDetail(c.tmp[:0], e, c.windows)
		if len(c.tmp) > 0 && c.tmp[0] == ' ' {
			c.tmp = append(c.tmp[:0], c.tmp[1:]...)
		}
	}
	if e.Note != "" {
		if len(c.tmp) > 0 {
			c.tmp = append(c.tmp, ' ')
		}
		c.tmp = append(c.tmp, "note="...)
		c.tmp = append(c.tmp, c.name(e.Note)...)
	}
	b = appendCSVBytes(b, c.tmp)
	c.tmp = c.tmp[:0]
	c.out.buf = append(b, '\r', '\n')
	return c.out.maybeFlush()
}

// Fact implements event.Sink: it remembers device names for the device
// column.
func (c *CSV) Fact(f *event.Fact) error {
	if f.Kind == event.FactDevice && f.Name != "" {
		c.devices[f.Dev] = f.Name
	}
	return nil
}

// End implements event.Sink: it flushes.
func (c *CSV) End(*event.Trailer) error { return c.out.flush() }
