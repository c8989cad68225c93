package output

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/termesc"
)

// Column widths of the text format.
const (
	wTime    = 12
	wWall    = 15 // 15:04:05.000000
	wID      = 12 // eBPF IDs (backend/ebpf/blockio) reach 12 digits at 60 M calls per CPU
	wProcess = 26
	wOp      = 8
	wNative  = 18
	wOffset  = 12
	wSize    = 9
	wResult  = 10
	wLatency = 10
)

// Text renders one aligned line per event (see the package doc) and a
// summary of the trailer's counters.
type Text struct {
	out     writer
	opts    Options
	h       event.Header
	windows bool
	devices map[event.Device]string
	counts  [4]uint64 // events per layer
	events  uint64
}

// NewText returns a text sink writing to w.
func NewText(w io.Writer, opts Options) *Text {
	return &Text{
		out:     writer{w: w, buf: make([]byte, 0, flushSize+4096)},
		opts:    opts,
		devices: make(map[event.Device]string),
	}
}

// Begin implements event.Sink: it prints the header as comment lines and
// the column titles.
func (t *Text) Begin(h *event.Header) error {
	t.h = *h
	t.windows = h.OS == "windows"
	b := t.out.buf
	b = append(b, "# iotrace trace from "...)
	b = append(b, h.Source.String()...)
	if h.OS != "" {
		b = append(b, ": "...)
		b = appendSafe(b, h.OS)
		if h.OSVersion != "" {
			b = append(b, ' ')
			b = appendSafe(b, h.OSVersion)
		}
	}
	if h.Hostname != "" {
		b = append(b, " on "...)
		b = appendPath(b, h.Hostname)
	}
	if h.CPUs != 0 {
		b = append(b, ", "...)
		b = strconv.AppendUint(b, uint64(h.CPUs), 10)
		b = append(b, " CPUs"...)
	}
	b = append(b, '\n')
	if h.StartWall != 0 {
		b = append(b, "# started "...)
		b = h.Start().AppendFormat(b, time.RFC3339Nano)
	}
	if h.Clock.Kind != event.ClockUnknown {
		if h.StartWall != 0 {
			b = append(b, ", "...)
		} else {
			b = append(b, "# "...)
		}
		b = append(b, "clock "...)
		b = append(b, h.Clock.Kind.String()...)
		if h.Clock.Freq != 0 {
			b = append(b, " at "...)
			b = strconv.AppendUint(b, h.Clock.Freq, 10)
			b = append(b, " Hz"...)
		}
	}
	if h.StartWall != 0 || h.Clock.Kind != event.ClockUnknown {
		b = append(b, '\n')
	}
	if h.Command != "" {
		b = append(b, "# command: "...)
		b = appendSafe(b, h.Command)
		b = append(b, '\n')
	}
	b = append(b, '#')
	if t.opts.WallClock {
		b = appendLeft(b, "TIME (UTC)", wWall-1)
	} else {
		b = appendPad(b, wTime-8-1)
		b = append(b, "TIME (s)"...)
	}
	s := len(b)
	b = append(b, "ID"...)
	b = alignRight(b, s, wID+1)
	b = append(b, ' ')
	b = appendLeft(b, "PROCESS[PID/TID]", wProcess)
	b = append(b, ' ')
	b = appendLeft(b, "OP", wOp)
	b = append(b, ' ')
	b = appendLeft(b, "NATIVE", wNative)
	b = appendPad(b, wOffset-6+1)
	b = append(b, "OFFSET"...)
	b = appendPad(b, wSize-4+1)
	b = append(b, "SIZE"...)
	b = appendPad(b, wResult-6+1)
	b = append(b, "RESULT"...)
	b = appendPad(b, wLatency-7+1)
	b = append(b, "LATENCY  PATH / DETAIL\n"...)
	t.out.buf = b
	return t.out.maybeFlush()
}

// appendTime appends the event time column.
func (t *Text) appendTime(b []byte, ts int64) []byte {
	if t.opts.WallClock {
		return time.Unix(0, t.h.StartWall+ts).UTC().AppendFormat(b, "15:04:05.000000")
	}
	s := len(b)
	b = appendSeconds(b, ts)
	return alignRight(b, s, wTime)
}

// appendProcess appends "comm[pid/tid]" padded to its column.
func appendProcess(b []byte, e *event.Event) []byte {
	s := len(b)
	if e.Comm != "" {
		b = appendSafe(b, e.Comm)
	} else if e.Pid == 0 && e.Tid == 0 {
		b = append(b, "<idle>"...)
	} else {
		b = append(b, '?')
	}
	b = append(b, '[')
	b = strconv.AppendUint(b, uint64(e.Pid), 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(e.Tid), 10)
	if e.Tid == 0 {
		b = append(b, "@cpu"...)
		b = strconv.AppendUint(b, uint64(e.CPU), 10)
	}
	b = append(b, ']')
	return appendPad(b, wProcess-(len(b)-s))
}

// Event implements event.Sink.
func (t *Text) Event(e *event.Event) error {
	t.events++
	if int(e.Layer) < len(t.counts) {
		t.counts[e.Layer]++
	}
	b := t.appendTime(t.out.buf, e.Time)
	s := len(b)
	b = appendTextID(b, e.ID)
	if e.ID >= maxTextID {
		b = alignRight(b, s, wID+1+len("…")-1) // "…" is 3 bytes, one column
	} else {
		b = alignRight(b, s, wID+1)
	}
	b = append(b, ' ')
	b = appendProcess(b, e)
	b = append(b, ' ')
	if e.Layer == event.LayerMarker || e.Op == event.OpMarker {
		b = append(b, "===== marker"...)
		if e.Note != "" {
			b = append(b, ": "...)
			b = appendSafe(b, e.Note)
		}
		b = append(b, " =====\n"...)
		t.out.buf = b
		return t.out.maybeFlush()
	}
	b = appendLeft(b, e.Op.String(), wOp)
	b = append(b, ' ')
	s = len(b)
	b = appendSafe(b, e.Native)
	b = appendPad(b, wNative-(len(b)-s))
	// Offset: the file offset, or the byte offset on the device. Each
	// right-aligned column starts with a space so that an overlong value
	// never runs into its neighbour.
	b = append(b, ' ')
	s = len(b)
	switch {
	case e.Layer == event.LayerBlock && (e.Sector != 0 || e.Size != 0):
		b = strconv.AppendUint(b, e.Sector*512, 10)
	case e.Offset >= 0:
		b = strconv.AppendInt(b, e.Offset, 10)
	default:
		b = append(b, '-')
	}
	b = alignRight(b, s, wOffset)
	b = append(b, ' ')
	s = len(b)
	if e.Size != 0 || e.Op.IsRead() || e.Op.IsWrite() {
		b = strconv.AppendUint(b, e.Size, 10)
	} else {
		b = append(b, '-')
	}
	b = alignRight(b, s, wSize)
	b = append(b, ' ')
	s = len(b)
	b = appendResult(b, e, t.windows)
	b = alignRight(b, s, wResult)
	b = append(b, ' ')
	s = len(b)
	if e.Flags&event.FlagNoCompletion != 0 && e.Duration == 0 {
		b = append(b, '-')
	} else {
		b = appendDuration(b, e.Duration)
	}
	b = alignRight(b, s, wLatency)
	b = append(b, "  "...)
	if e.Layer == event.LayerBlock {
		b = t.appendBlock(b, e)
	} else {
		b = appendEventPath(b, e)
		b = appendFileDetail(b, e, t.windows)
	}
	if e.Note != "" {
		b = append(b, " note="...)
		b = appendPath(b, e.Note)
	}
	b = append(b, '\n')
	if t.opts.Frames != nil && e.Stack != 0 {
		b = t.appendFrames(b, e)
	}
	t.out.buf = b
	return t.out.maybeFlush()
}

// appendFrames appends the event's stack frames, one indented line each
// ("    at inner_fn (a.c:12)"); names from the traced system's files follow
// the terminal rule.
func (t *Text) appendFrames(b []byte, e *event.Event) []byte {
	frames := t.opts.Frames(e)
	if frames == nil {
		return append(b, "    (stack not in the trace)\n"...)
	}
	for _, f := range frames {
		b = append(b, "    at "...)
		b = appendSafe(b, f)
		b = append(b, '\n')
	}
	return b
}

// appendEventPath appends the path (and a rename's new name), or the
// unresolved handle in angle brackets.
func appendEventPath(b []byte, e *event.Event) []byte {
	switch {
	case e.Path != "":
		b = appendPath(b, e.Path)
	case e.FD >= 0:
		b = append(b, "<fd "...)
		b = strconv.AppendInt(b, int64(e.FD), 10)
		b = append(b, '>')
	case e.FileKey != 0:
		b = append(b, "<filekey "...)
		b = appendHex(b, e.FileKey)
		b = append(b, '>')
	case e.FileObject != 0:
		b = append(b, "<fileobject "...)
		b = appendHex(b, e.FileObject)
		b = append(b, '>')
	default:
		b = append(b, '-')
	}
	if e.Path2 != "" {
		b = append(b, " → "...)
		b = appendPath(b, e.Path2)
	}
	return b
}

// appendBlock appends the detail of a block event: device, sector, rwbs,
// queue wait and service time, the causing event and the file when known.
func (t *Text) appendBlock(b []byte, e *event.Event) []byte {
	b = append(b, "dev="...)
	if name := t.devices[e.Dev]; name != "" {
		b = appendPath(b, name)
		b = append(b, '(')
		b = append(b, e.Dev.String()...)
		b = append(b, ')')
	} else if e.Dev.IsZero() {
		b = append(b, '?')
	} else {
		b = append(b, e.Dev.String()...)
	}
	if e.Sector != 0 || e.Op != event.OpBlockFlush {
		b = append(b, " sector="...)
		b = strconv.AppendUint(b, e.Sector, 10)
	}
	b = append(b, " rwbs="...)
	b = appendRWBS(b, e)
	if e.Wait > 0 {
		b = append(b, " wait="...)
		b = appendDuration(b, e.Wait)
		b = append(b, " svc="...)
		b = appendDuration(b, e.Duration-e.Wait)
	}
	if e.Priority != 0 {
		b = append(b, " prio="...)
		b = strconv.AppendUint(b, uint64(e.Priority), 10)
	}
	if e.IOFlags != 0 {
		b = append(b, " ioflags="...)
		b = appendHex(b, uint64(e.IOFlags))
	}
	if other := e.Flags &^ (event.FlagPreflush | event.FlagFUA | event.FlagReadahead | event.FlagSync | event.FlagMeta); other != 0 {
		b = append(b, " ["...)
		b = appendFlags(b, other, '|')
		b = append(b, ']')
	}
	if e.Path != "" {
		b = append(b, " file="...)
		b = appendPath(b, e.Path)
	}
	if e.Cause != 0 {
		b = append(b, " ← "...)
		b = appendTextID(b, e.Cause)
	}
	return b
}

// Fact implements event.Sink: it remembers device names and, with
// Options.Facts, prints the fact as a comment line.
func (t *Text) Fact(f *event.Fact) error {
	if f.Kind == event.FactDevice && f.Name != "" {
		t.devices[f.Dev] = f.Name
	}
	if !t.opts.Facts {
		return nil
	}
	b := append(t.out.buf, "# fact "...)
	b = appendSeconds(b, f.Time)
	b = append(b, ' ')
	b = append(b, f.Kind.String()...)
	switch f.Kind {
	case event.FactName:
		b = append(b, ' ')
		b = append(b, f.Space.String()...)
		b = append(b, ' ')
		if f.Space == event.SpaceFileObject || f.Space == event.SpaceFileKey {
			b = appendHex(b, f.Handle)
		} else {
			b = strconv.AppendUint(b, f.Handle, 10)
		}
		if f.Pid != 0 {
			b = append(b, " pid="...)
			b = strconv.AppendUint(b, uint64(f.Pid), 10)
		}
	case event.FactProcess, event.FactThread:
		b = append(b, " pid="...)
		b = strconv.AppendUint(b, uint64(f.Pid), 10)
		if f.Kind == event.FactThread {
			b = append(b, " tid="...)
			b = strconv.AppendUint(b, uint64(f.Tid), 10)
		} else if f.PPid != 0 {
			b = append(b, " ppid="...)
			b = strconv.AppendUint(b, uint64(f.PPid), 10)
		}
	case event.FactDevice:
		b = append(b, ' ')
		b = append(b, f.Dev.String()...)
	}
	if f.Name != "" {
		b = append(b, " → "...)
		b = appendPath(b, f.Name)
	}
	if f.Image != "" {
		b = append(b, " image="...)
		b = appendPath(b, f.Image)
	}
	if f.Detail != "" {
		b = append(b, " detail="...)
		b = appendPath(b, f.Detail)
	}
	if f.Rundown {
		b = append(b, " (rundown)"...)
	}
	if f.End {
		b = append(b, " (end)"...)
	}
	b = append(b, '\n')
	t.out.buf = b
	return t.out.maybeFlush()
}

// End implements event.Sink: it prints the summary (one line of the
// events shown, the informational counters that are not zero, all of
// them with Options.Counters, and every problem counter that is not zero)
// and flushes.
func (t *Text) End(tr *event.Trailer) error {
	b := append(t.out.buf, "# ---\n# "...)
	b = strconv.AppendUint(b, t.events, 10)
	b = append(b, " events"...)
	sep := " ("
	for l, n := range t.counts {
		if n == 0 {
			continue
		}
		b = append(b, sep...)
		b = append(b, event.Layer(l).String()...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, n, 10)
		sep = ", "
	}
	// A layer the source did not trace has no events for that reason.
	if traced := event.TracedLayers(&t.h, tr); traced != 0 {
		for _, l := range []event.Layer{event.LayerFile, event.LayerBlock} {
			if !traced.Has(l) {
				if sep == " (" {
					b = append(b, sep...)
				} else {
					b = append(b, "; "...)
				}
				b = append(b, l.String()...)
				b = append(b, " not traced"...)
				sep = ", "
			}
		}
	}
	if sep == ", " {
		b = append(b, ')')
	}
	b = append(b, " in "...)
	b = appendSeconds(b, tr.End)
	b = append(b, " s\n"...)
	info := false
	for _, c := range tr.Stats.Sorted() {
		if c.Kind != event.CountInfo || (c.Value == 0 && !t.opts.Counters) {
			continue
		}
		if !info {
			b = append(b, "# counters:\n"...)
			info = true
		}
		b = append(b, "#   "...)
		b = appendSafe(b, c.Name)
		b = append(b, ": "...)
		b = strconv.AppendUint(b, c.Value, 10)
		b = append(b, '\n')
	}
	problems := tr.Stats.Problems()
	if len(problems) == 0 {
		b = append(b, "# no events lost, unpaired, unresolved or dropped\n"...)
	} else {
		b = append(b, "# PROBLEMS (events missing or incomplete in this output):\n"...)
		for _, c := range problems {
			b = append(b, "#   "...)
			b = appendLeft(b, c.Kind.String(), 11)
			b = appendSafe(b, c.Name)
			b = append(b, ": "...)
			b = strconv.AppendUint(b, c.Value, 10)
			b = append(b, '\n')
		}
	}
	t.out.buf = b
	return t.out.flush()
}

// maxTextID is the first event ID too long for the text column (13
// digits): such IDs (traces from before IDs were kept below 2^53) show
// as "#…" and their last 10 digits, so that the columns stay aligned;
// jsonl and csv have them whole.
const maxTextID = 1e12

// appendTextID appends "#" and the event ID id, shortened when it has more
// than 12 digits (see maxTextID).
func appendTextID(b []byte, id uint64) []byte {
	b = append(b, '#')
	if id < maxTextID {
		return strconv.AppendUint(b, id, 10)
	}
	var d [20]byte
	digits := strconv.AppendUint(d[:0], id, 10)
	b = append(b, "…"...)
	return append(b, digits[len(digits)-10:]...)
}

// appendTextQuote appends s in double quotes for a person to read: a
// double quote is doubled ("" as in cmd, PowerShell and CSV), everything
// else follows the terminal rule (internal/termesc): a backslash stays one
// backslash (C:\Program Files\x.dll reads as it is spelled), a control
// character shows as its Unicode control picture (a newline as ␊, a tab
// as ␉), another character that does not print as <U+XXXX>, and a byte
// that is not UTF-8 as <0xNN>.
func appendTextQuote(b []byte, s string) []byte {
	b = append(b, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		b = termesc.Append(b, s[:i])
		b = append(b, '"', '"')
		s = s[i+1:]
	}
	b = termesc.Append(b, s)
	return append(b, '"')
}

// hexDigit returns the upper-case hex digit of v (0-15).
func hexDigit(v byte) byte {
	if v < 10 {
		return '0' + v
	}
	return 'A' + v - 10
}
