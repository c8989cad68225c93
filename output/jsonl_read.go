package output

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	gojson "github.com/goccy/go-json"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/event"
)

// JSONLMagic is how iotrace's writer begins every jsonl trace: its
// header object. A header written by another tool (other spacing or key
// order) is found by [ClassifyJSONLLine] and read by the generic path.
const JSONLMagic = `{"type":"header"`

// hexNum is a number that jsonl may hold as a JSON number or as a "0x..."
// string (kernel addresses).
type hexNum uint64

func (h *hexNum) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return fmt.Errorf("not a number or 0x string: %s", b)
	}
	*h = hexNum(v)
	return nil
}

// idNum is an event ID: a JSON number, or its decimal digits in a
// string (as IDs from 2^53 on are written).
type idNum uint64

func (n *idNum) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an id: %s", b)
	}
	*n = idNum(v)
	return nil
}

// jsonRecord holds every field of every jsonl object type.
type jsonRecord struct {
	Type string `json:"type"`

	// header
	OS          string `json:"os"`
	OSB64       string `json:"os_b64"`
	OSVersion   string `json:"os_version"`
	VersionB64  string `json:"os_version_b64"`
	Hostname    string `json:"hostname"`
	HostnameB64 string `json:"hostname_b64"`
	CPUs        uint32 `json:"cpus"`
	PointerSize uint8  `json:"pointer_size"`
	StartWall   int64  `json:"start_wall"`
	Clock       string `json:"clock"`
	ClockFreq   uint64 `json:"clock_freq"`
	ClockOrigin int64  `json:"clock_origin"`
	Command     string `json:"command"`
	CommandB64  string `json:"command_b64"`
	Tool        string `json:"tool"`
	ToolB64     string `json:"tool_b64"`
	// header and trailer
	Layers []string `json:"layers"`

	// event
	ID          idNum    `json:"id"`
	Source      string   `json:"source"`
	Layer       string   `json:"layer"`
	Op          string   `json:"op"`
	Native      string   `json:"native"`
	NativeB64   string   `json:"native_b64"`
	Time        int64    `json:"time"`
	Duration    int64    `json:"duration"`
	Wait        int64    `json:"wait"`
	CPU         uint32   `json:"cpu"`
	Pid         uint32   `json:"pid"`
	Tid         uint32   `json:"tid"`
	ProcStart   int64    `json:"proc_start"`
	Comm        string   `json:"comm"`
	CommB64     string   `json:"comm_b64"`
	Path        string   `json:"path"`
	PathB64     string   `json:"path_b64"`
	Path2       string   `json:"path2"`
	Path2B64    string   `json:"path2_b64"`
	FD          *int32   `json:"fd"`
	FileObject  hexNum   `json:"file_object"`
	FileKey     hexNum   `json:"file_key"`
	Inode       uint64   `json:"inode"`
	Offset      *int64   `json:"offset"`
	Size        uint64   `json:"size"`
	Bytes       *int64   `json:"bytes"`
	Status      string   `json:"status"`
	Code        uint32   `json:"code"`
	Flags       []string `json:"flags"`
	OpenFlags   uint32   `json:"open_flags"`
	Mode        uint32   `json:"mode"`
	Disposition uint8    `json:"disposition"`
	Priority    uint8    `json:"priority"`
	IOFlags     uint32   `json:"io_flags"`
	Info        uint32   `json:"info"`
	Dev         string   `json:"dev"`
	Sector      uint64   `json:"sector"`
	Request     hexNum   `json:"request"`
	Cause       idNum    `json:"cause"`
	CausedIOs   uint32   `json:"caused_ios"`
	CausedBytes uint64   `json:"caused_bytes"`
	ReadCached  uint64   `json:"read_cached"`
	ReadAhead   uint64   `json:"read_ahead"`
	ReadDisk    uint64   `json:"read_disk"`
	ReadWaited  uint64   `json:"read_waited"`
	AheadFrom   idNum    `json:"read_ahead_from"`
	Note        string   `json:"note"`
	NoteB64     string   `json:"note_b64"`
	Stack       uint64   `json:"stack"`

	// fact
	Kind      string `json:"kind"`
	Rundown   bool   `json:"rundown"`
	Ended     bool   `json:"ended"`
	Space     string `json:"space"`
	PPid      uint32 `json:"ppid"`
	Handle    hexNum `json:"handle"`
	Name      string `json:"name"`
	NameB64   string `json:"name_b64"`
	Image     string `json:"image"`
	ImageB64  string `json:"image_b64"`
	Detail    string `json:"detail"`
	DetailB64 string `json:"detail_b64"`
	// stack, module and kernel symbol facts (also size and flags)
	FileOffset hexNum   `json:"file_offset"`
	Vaddr      hexNum   `json:"vaddr"`
	Kernel     []hexNum `json:"kernel"`
	User       []hexNum `json:"user"`

	// trailer
	End      int64 `json:"end"`
	Counters []struct {
		Kind    string `json:"kind"`
		Name    string `json:"name"`
		NameB64 string `json:"name_b64"`
		Value   uint64 `json:"value"`
	} `json:"counters"`
}

// ReadJSONL reads a jsonl trace written by [NewJSONL] from r and replays
// it into sink: Begin, the events and facts in file order, End. A damaged
// or truncated file delivers everything before the damage, then End with
// what the trailer would have held so far, and returns an error naming
// the line and byte offset. name names r in errors.
//
// Event and fact lines are decoded by a decoder written for this schema
// (eventDecoder); header and trailer lines, and any line that decoder
// declines, by go-json into jsonRecord.
func ReadJSONL(ctx context.Context, r io.Reader, name string, sink event.Sink) error {
	return readJSONL(ctx, r, name, sink, readFast)
}

// ScanJSONLFacts delivers the facts of the jsonl trace in r to fn, in file
// order, for a pre-pass over the facts before [ReadJSONL] replays the
// trace. Event lines are passed over without being decoded where that is
// certain not to change what is read (see [plainEventLine]); the others
// are decoded as ReadJSONL decodes them. Damage is not reported here:
// the error is fn's, ctx's, or a read error, and the replay counts and
// names every damaged line once.
func ScanJSONLFacts(ctx context.Context, r io.Reader, name string, fn func(*event.Fact) error) error {
	return scanFactsErr(ctx, readJSONL(ctx, r, name, factFunc(fn), readFacts))
}

// scanFactsErr is what ScanJSONLFacts returns for the reading's err.
func scanFactsErr(ctx context.Context, err error) error {
	var fe factErr
	if errors.As(err, &fe) {
		return fe.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// factFunc is a sink that passes facts to a function and ignores the rest;
// the function's error comes back from readJSONL as a factErr.
type factFunc func(*event.Fact) error

func (factFunc) Begin(*event.Header) error { return nil }
func (factFunc) Event(*event.Event) error  { return nil }
func (f factFunc) Fact(x *event.Fact) error {
	if err := f(x); err != nil {
		return factErr{err}
	}
	return nil
}
func (factFunc) End(*event.Trailer) error { return nil }

type factErr struct{ err error }

func (e factErr) Error() string { return e.err.Error() }
func (e factErr) Unwrap() error { return e.err }

// eventLinePrefix is how the writer begins every event line: only such
// lines are offered to the fast decoder.
var eventLinePrefix = []byte(`{"type":"event"`)

// plainEventLine reports whether text (a line without its surrounding
// space) is certainly an event line for the generic path too, so that a
// pass that needs only the other lines may skip it: it begins with the
// writer's eventLinePrefix, has no backslash (so every '"' delimits a
// string and no key is spelled with escapes), and holds no other string
// "type" in any ASCII letter case (go-json, like encoding/json, takes the
// last of repeated keys and matches keys without regard to case; no rune
// outside ASCII folds to t, y, p or e). A line that fails the test is
// decoded; one that passes may still be damaged, which the replay reports.
func plainEventLine(text []byte) bool {
	if !bytes.HasPrefix(text, eventLinePrefix) {
		return false
	}
	rest := text[len(eventLinePrefix):]
	if bytes.IndexByte(rest, '\\') >= 0 {
		return false
	}
	// A "type" string in any case holds a y or Y two bytes after its
	// opening quote: look at those few places only.
	for _, y := range [2]byte{'y', 'Y'} {
		for at := 0; ; {
			k := bytes.IndexByte(rest[at:], y)
			if k < 0 {
				break
			}
			k += at
			at = k + 1
			if k >= 2 && k+3 < len(rest) && rest[k-2] == '"' && rest[k+3] == '"' &&
				rest[k-1]|0x20 == 't' && rest[k+1]|0x20 == 'p' && rest[k+2]|0x20 == 'e' {
				return false
			}
		}
	}
	return true
}

// readMode says how readJSONL decodes lines.
type readMode int

const (
	readFast    readMode = iota // event lines through the schema decoder
	readGeneric                 // every line through go-json (differential tests, benchmarks)
	readFacts                   // fast, and plain event lines skipped (ScanJSONLFacts)
)

// lineSource hands out a trace's lines one at a time, as
// bufio.Reader.ReadSlice('\n') does: the line with its '\n'; the last
// line without one and io.EOF; nil and io.EOF at the end. A line is valid
// until the next call.
type lineSource interface {
	next() ([]byte, error)
}

// bufLines reads lines through a buffer, gathering a line longer than it.
type bufLines struct{ br *bufio.Reader }

func (b bufLines) next() ([]byte, error) {
	raw, err := b.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer: gather it.
		long := append([]byte(nil), raw...)
		for errors.Is(err, bufio.ErrBufferFull) {
			raw, err = b.br.ReadSlice('\n')
			long = append(long, raw...)
		}
		raw = long
	}
	return raw, err
}

// byteLines hands out the lines of a trace held in memory (a mapped
// file), without copying them. release, when set, is told every
// releaseEvery bytes that the lines before upto are done with.
type byteLines struct {
	data    []byte
	pos     int
	done    int
	release func(upto int)
}

// releaseEvery is how often byteLines calls release.
const releaseEvery = 16 << 20

func (b *byteLines) next() ([]byte, error) {
	if b.release != nil && b.pos-b.done >= releaseEvery {
		b.release(b.pos)
		b.done = b.pos
	}
	rest := b.data[b.pos:]
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		b.pos += i + 1
		return rest[:i+1], nil
	}
	b.pos = len(b.data)
	if len(rest) == 0 {
		return nil, io.EOF
	}
	return rest, io.EOF
}

// ReadJSONLBytes is ReadJSONL for a trace held in memory (data, such as a
// mapped file): lines are decoded where they lie. release, when not nil,
// is called from time to time with the length of data already read, so
// that a caller can let go of what it maps.
func ReadJSONLBytes(ctx context.Context, data []byte, name string, sink event.Sink, release func(upto int)) error {
	return readJSONLLines(ctx, &byteLines{data: data, release: release}, name, sink, readFast)
}

// ScanJSONLFactsBytes is ScanJSONLFacts for a trace held in memory, as
// ReadJSONLBytes is ReadJSONL.
func ScanJSONLFactsBytes(ctx context.Context, data []byte, name string, fn func(*event.Fact) error, release func(upto int)) error {
	return scanFactsErr(ctx, readJSONLLines(ctx, &byteLines{data: data, release: release}, name, factFunc(fn), readFacts))
}

// readJSONL is ReadJSONL in the given mode.
func readJSONL(ctx context.Context, r io.Reader, name string, sink event.Sink, mode readMode) error {
	return readJSONLLines(ctx, bufLines{bufio.NewReaderSize(r, 256<<10)}, name, sink, mode)
}

// Phrases of the jsonl reader's errors that say why a line stopped it.
const (
	errNotJSONL     = "not an iotrace jsonl trace"
	errAfterTrailer = "data after the trailer: another trace's header"
)

// readJSONLLines is ReadJSONL in the given mode, from src.
func readJSONLLines(ctx context.Context, src lineSource, name string, sink event.Sink, mode readMode) error {
	r := &jsonlReader{src: src, name: name, sink: sink, mode: mode, ids: recentIDs{seed: maphash.MakeSeed()},
		cut: event.NewCutter("")}
	if mode != readGeneric {
		r.dec = newEventDecoder()
	}
	r.readLines(ctx)
	return r.finish()
}

// jsonlReader reads one jsonl trace into a sink: a line at a time
// (readLines, take), the schema decoder's lines first (fast), the others
// through go-json (generic), then the trailer and what was damaged
// (finish). A damaged line (bad JSON, a bad field, a repeated event) is
// skipped and counted, a trailer before the end of the trace read past;
// reading goes on.
type jsonlReader struct {
	src  lineSource
	name string
	sink event.Sink
	mode readMode
	dec  *eventDecoder // nil: every line through go-json

	off  int64  // the byte offset of the current line
	line int    // its number (from 1)
	raw  []byte // the line, with its end

	begun   bool // the header was read
	sawEnd  bool // the last line read was a trailer
	trailer event.Trailer
	// trailerLine and trailerOff place the last trailer line.
	trailerLine int
	trailerOff  int64
	lastEnd     int64  // the latest end of an event
	headerSum   uint64 // the hash of the header line

	rec  jsonRecord
	ev   event.Event
	fact event.Fact
	ids  recentIDs
	// cut cuts events and facts to the limits of the trace's OS.
	cut *event.Cutter

	readErr, sinkErr, damageErr error
	damage                      JSONLDamageError
	repeats, strays             int
}

// readLines reads lines until the end of the input, an error, or damage
// that stops reading.
func (r *jsonlReader) readLines(ctx context.Context) {
	for {
		if r.line&1023 == 0 {
			if err := ctx.Err(); err != nil {
				r.readErr = err
				return
			}
		}
		raw, err := r.src.next()
		if len(raw) == 0 && err != nil {
			if !errors.Is(err, io.EOF) {
				r.readErr = fmt.Errorf("%s: read at byte offset %d: %w", r.name, r.off, err)
			}
			return
		}
		r.raw = raw
		r.line++
		if text := bytes.TrimSpace(raw); len(text) > 0 && r.take(text) {
			return
		}
		r.off += int64(len(raw))
		if err != nil {
			return // EOF after a last line without '\n'
		}
	}
}

// take reads one line (text, without its surrounding space) and reports
// whether reading stops there.
func (r *jsonlReader) take(text []byte) (stop bool) {
	if r.sawEnd && r.afterTrailer(text) {
		return true
	}
	if !r.begun && (len(text) == 0 || text[0] != '{') {
		r.damageErr = r.fail("%s: it must begin with a header object (%s...)", errNotJSONL, JSONLMagic)
		return true
	}
	if r.mode == readFacts && r.begun && plainEventLine(text) {
		return false
	}
	if r.dec != nil && r.begun {
		if done, stop := r.fast(text); done {
			return stop
		}
	}
	return r.generic(text)
}

// afterTrailer handles a line after a trailer: another trace's header
// stops reading; anything else means the trailer came before the end of
// the trace (lines spliced, a writer's bug), which is read past: the
// lines after it are read, the last trailer's counts kept.
func (r *jsonlReader) afterTrailer(text []byte) (stop bool) {
	if ClassifyJSONLLine(text) == JSONLHeader {
		// Another trace (concatenated): OpenAll reads it as one.
		r.damageErr = r.fail("%s", errAfterTrailer)
		return true
	}
	r.strays++
	r.readPast(JSONLDamage{Line: r.trailerLine, Offset: r.trailerOff, Lossless: true,
		Err: fmt.Errorf("%s: line %d at byte offset %d: a trailer before the end of the trace (the lines after it are read, the last trailer's counts kept)", r.name, r.trailerLine, r.trailerOff)})
	r.sawEnd = false
	return false
}

// fast reads an event or fact line with the schema decoder; done is false
// when the decoder declines the line.
func (r *jsonlReader) fast(text []byte) (done, stop bool) {
	switch {
	case bytes.HasPrefix(text, eventLinePrefix) && r.dec.event(text, &r.ev):
		if err := r.accept(&r.ev); err != nil {
			r.badLine(err)
		}
	case bytes.HasPrefix(text, factLinePrefix) && r.dec.fact(text, &r.fact):
		r.cut.Fact(&r.fact)
		r.sinkErr = r.sink.Fact(&r.fact)
	default:
		return false, false
	}
	return true, r.sinkErr != nil
}

// generic reads a line through go-json, by its type.
func (r *jsonlReader) generic(text []byte) (stop bool) {
	r.rec = jsonRecord{}
	if err := unmarshalLine(text, &r.rec); err != nil {
		if !r.begun {
			r.damageErr = r.fail("%s: the first line is not a JSON object: %v", errNotJSONL, err)
			return true
		}
		r.badLine(r.fail("%v", err))
		return false
	}
	if err := r.rec.restoreBytes(); err != nil {
		r.badLine(r.fail("%v", err))
		return false
	}
	if !r.begun && r.rec.Type != "header" {
		// It begins as a header does, but a repeated "type" key makes it
		// another object: nothing may come before Begin.
		r.damageErr = r.fail("%s: the first line is a %q object, not the header", errNotJSONL, r.rec.Type)
		return true
	}
	var lineErr error
	switch r.rec.Type {
	case "header":
		lineErr = r.header()
	case "event":
		if lineErr = r.rec.event(&r.ev); lineErr != nil {
			lineErr = r.fail("%v", lineErr)
			break
		}
		lineErr = r.accept(&r.ev)
	case "fact":
		if lineErr = r.rec.fact(&r.fact); lineErr != nil {
			lineErr = r.fail("%v", lineErr)
			break
		}
		r.cut.Fact(&r.fact)
		r.sinkErr = r.sink.Fact(&r.fact)
	case "trailer":
		lineErr = r.trailerRec()
	default:
		lineErr = r.fail("unknown object type %q", r.rec.Type)
	}
	if lineErr != nil {
		r.badLine(lineErr)
	}
	return r.damageErr != nil || r.sinkErr != nil
}

// header begins the trace; the header line again is a repeated line, any
// other header stops reading.
func (r *jsonlReader) header() error {
	if r.begun {
		if r.lineSum() == r.headerSum {
			// The header line again (a duplicated line): the same trace
			// goes on.
			return repeatedLine{r.fail("the header again (first on line 1): a repeated line, skipped")}
		}
		r.damageErr = r.fail("second header")
		return nil
	}
	r.headerSum = r.lineSum()
	h, err := r.rec.header()
	if err != nil {
		r.damageErr = r.fail("%v", err)
		return nil
	}
	r.begun = true
	r.cut = event.NewCutter(h.OS)
	r.sinkErr = r.sink.Begin(&h)
	return nil
}

// trailerRec keeps a trailer's counts; the trace may go on after it
// (afterTrailer).
func (r *jsonlReader) trailerRec() error {
	r.trailer = event.Trailer{End: r.rec.End}
	r.trailerLine, r.trailerOff = r.line, r.off
	r.sawEnd = true
	layers, err := parseLayers(r.rec.Layers)
	if err != nil {
		return r.fail("%v", err)
	}
	r.trailer.Layers = layers
	for _, c := range r.rec.Counters {
		k, err := parseCounterKind(c.Kind)
		if err != nil {
			return r.fail("%v", err)
		}
		name := c.Name
		if c.NameB64 != "" {
			b, err := base64.StdEncoding.DecodeString(c.NameB64)
			if err != nil {
				return r.fail("counter name_b64: %v", err)
			}
			name = string(b)
		}
		r.trailer.Stats.Add(k, name, c.Value)
	}
	return nil
}

// accept delivers a decoded event unless its id was just seen with the
// same line.
func (r *jsonlReader) accept(ev *event.Event) error {
	if r.mode == readFacts {
		return nil
	}
	if first, dup := r.ids.seen(ev.ID, r.lineSum(), r.line); dup {
		return repeatedLine{r.fail("event %d again (first on line %d): a repeated line, skipped", ev.ID, first)}
	}
	if end := ev.End(); end > r.lastEnd {
		r.lastEnd = end
	}
	r.cut.Event(ev)
	r.sinkErr = r.sink.Event(ev)
	return nil
}

// fail is an error at the current line.
func (r *jsonlReader) fail(format string, args ...any) error {
	return fmt.Errorf("%s: line %d at byte offset %d: %s", r.name, r.line, r.off, fmt.Sprintf(format, args...))
}

// lineSum hashes the current line (without its end): a repeated line is
// the same bytes.
func (r *jsonlReader) lineSum() uint64 {
	return maphash.Bytes(r.ids.seed, bytes.TrimRight(r.raw, "\r\n"))
}

// readPast counts damage read past.
func (r *jsonlReader) readPast(d JSONLDamage) {
	if len(r.damage.Skipped) < maxListedDamage {
		r.damage.Skipped = append(r.damage.Skipped, d)
	}
	r.damage.Count++
	r.damage.Bytes += d.Bytes
	if !d.Lossless {
		r.damage.Lost++
	}
}

// badLine counts the current line as damaged (a repeated line loses
// nothing).
func (r *jsonlReader) badLine(err error) {
	var rep repeatedLine
	lossless := errors.As(err, &rep)
	if lossless {
		r.repeats++
	}
	r.readPast(JSONLDamage{Line: r.line, Offset: r.off, Bytes: int64(len(r.raw)), Lossless: lossless, Err: err})
}

// finish ends the trace: the damage counted into the trailer, the sink's
// End, and the error that says what was damaged and where reading
// stopped.
func (r *jsonlReader) finish() error {
	if r.damage.Lost > 0 {
		r.trailer.Stats.Add(event.CountLost, StatJSONLDamaged, uint64(r.damage.Lost))
	}
	r.cut.AddTo(&r.trailer.Stats)
	if r.repeats > 0 {
		r.trailer.Stats.Add(event.CountInfo, StatJSONLRepeated, uint64(r.repeats))
	}
	if r.strays > 0 {
		r.trailer.Stats.Add(event.CountInfo, StatJSONLStrayTrailers, uint64(r.strays))
	}
	if r.sinkErr != nil {
		return r.sinkErr
	}
	if !r.begun {
		switch {
		case r.damageErr != nil:
			return r.damageErr
		case r.readErr != nil:
			return r.readErr
		}
		return fmt.Errorf("%s: empty jsonl trace (no header)", r.name)
	}
	stopLine := r.line
	if !r.sawEnd {
		// Without a trailer at the end, a stray one's counts are kept.
		r.trailer.End = max(r.trailer.End, r.lastEnd)
		if r.damageErr == nil && r.readErr == nil {
			r.damageErr = fmt.Errorf("%s: ends at byte offset %d without a trailer (truncated?)", r.name, r.off)
			stopLine = 0
		}
	}
	if err := r.sink.End(&r.trailer); err != nil {
		return err
	}
	switch {
	case r.damageErr != nil:
		r.damage.Stop = &JSONLDamage{Line: stopLine, Offset: r.off, Err: r.damageErr}
	case r.damage.Count == 0:
		return r.readErr
	case r.readErr != nil:
		r.damage.Stop = &JSONLDamage{Offset: r.off, Err: r.readErr}
	}
	return &r.damage
}

// repeatedLine is the error of a line that repeats an event already read:
// damage, but nothing is missing for it.
type repeatedLine struct{ error }

func (r repeatedLine) Unwrap() error { return r.error }

func parseCounterKind(s string) (event.CounterKind, error) {
	for k := event.CountInfo; k <= event.CountDropped; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	for k := event.CountDropped + 1; k != 0; k++ { // kind(N), as a kind without a name is written
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown counter kind %q", s)
}

func parseClockKind(s string) (event.ClockKind, error) {
	if s == "" {
		return event.ClockUnknown, nil
	}
	for k := event.ClockUnknown; ; k++ { // clock(N) too, as a clock without a name is written
		if k.String() == s {
			return k, nil
		}
		if k == 255 {
			break
		}
	}
	return 0, fmt.Errorf("unknown clock %q", s)
}

func parseDevice(s string) (event.Device, error) {
	if s == "" {
		return event.Device{}, nil
	}
	n, disk := strings.CutPrefix(s, "disk")
	maj, min, colon := strings.Cut(n, ":")
	a, err1 := strconv.ParseUint(maj, 10, 32)
	var b uint64
	var err2 error
	if colon {
		b, err2 = strconv.ParseUint(min, 10, 32)
	}
	if err1 != nil || err2 != nil || (!disk && !colon) {
		return event.Device{}, fmt.Errorf("bad device %q (want major:minor or diskN)", s)
	}
	return event.Device{Major: uint32(a), Minor: uint32(b), IsDisk: disk}, nil
}

func (r *jsonRecord) header() (event.Header, error) {
	src, err := event.ParseSource(r.Source)
	if err != nil {
		return event.Header{}, err
	}
	ck, err := parseClockKind(r.Clock)
	if err != nil {
		return event.Header{}, err
	}
	layers, err := parseLayers(r.Layers)
	if err != nil {
		return event.Header{}, err
	}
	return event.Header{
		Source: src, OS: r.OS, OSVersion: r.OSVersion, Hostname: r.Hostname,
		CPUs: r.CPUs, PointerSize: r.PointerSize, StartWall: r.StartWall,
		Clock:   event.Clock{Kind: ck, Freq: r.ClockFreq, Origin: r.ClockOrigin},
		Command: r.Command, Tool: r.Tool, Layers: layers,
	}, nil
}

// parseLayers reads a "layers" list ("file", "block").
func parseLayers(names []string) (event.Layers, error) {
	var s event.Layers
	for _, n := range names {
		l, err := event.ParseLayer(n)
		if n == "unknown" { // event.LayersNone
			l, err = event.LayerUnknown, nil
		}
		if err != nil {
			return 0, fmt.Errorf("layers: %w", err)
		}
		s = s.With(l)
	}
	return s, nil
}

func (r *jsonRecord) event(e *event.Event) error {
	var err error
	e.Reset()
	if e.Source, err = event.ParseSource(r.Source); err != nil {
		return err
	}
	if e.Layer, err = event.ParseLayer(r.Layer); err != nil {
		if r.Layer != "unknown" {
			return err
		}
		e.Layer = event.LayerUnknown
	}
	if e.Op, err = event.ParseOp(r.Op); err != nil {
		return err
	}
	if e.Status, err = event.ParseStatus(r.Status); err != nil {
		return err
	}
	if e.Dev, err = parseDevice(r.Dev); err != nil {
		return err
	}
	for _, f := range r.Flags {
		bit, ok := parseFlag(f)
		if !ok {
			return fmt.Errorf("unknown flag %q", f)
		}
		e.Flags |= bit
	}
	e.ID, e.Native, e.Time, e.Duration, e.Wait = uint64(r.ID), r.Native, r.Time, r.Duration, r.Wait
	e.CPU, e.Pid, e.Tid, e.ProcStart = r.CPU, r.Pid, r.Tid, r.ProcStart
	e.Comm, e.Path, e.Path2 = r.Comm, r.Path, r.Path2
	if r.FD != nil {
		e.FD = *r.FD
	}
	e.FileObject, e.FileKey, e.Inode = uint64(r.FileObject), uint64(r.FileKey), r.Inode
	if r.Offset != nil {
		e.Offset = *r.Offset
	}
	e.Size = r.Size
	if r.Bytes != nil {
		e.Bytes = *r.Bytes
	}
	e.Code, e.OpenFlags, e.Mode, e.Disposition = r.Code, r.OpenFlags, r.Mode, r.Disposition
	e.Priority, e.IOFlags, e.Info = r.Priority, r.IOFlags, r.Info
	e.Sector, e.Request, e.Cause = r.Sector, uint64(r.Request), uint64(r.Cause)
	e.CausedIOs, e.CausedBytes, e.Note = r.CausedIOs, r.CausedBytes, r.Note
	e.Stack = r.Stack
	e.ReadCached, e.ReadAhead, e.ReadDisk, e.ReadWaited = r.ReadCached, r.ReadAhead, r.ReadDisk, r.ReadWaited
	e.ReadAheadFrom = uint64(r.AheadFrom)
	return nil
}

func (r *jsonRecord) fact(f *event.Fact) error {
	*f = event.Fact{}
	names := factNames()
	k, found := names.kinds[r.Kind]
	if !found {
		return fmt.Errorf("unknown fact kind %q", r.Kind)
	}
	f.Kind = k
	if r.Space != "" {
		s, found := names.spaces[r.Space]
		if !found {
			return fmt.Errorf("unknown handle space %q", r.Space)
		}
		f.Space = s
	}
	dev, err := parseDevice(r.Dev)
	if err != nil {
		return err
	}
	f.Time, f.Rundown, f.End = r.Time, r.Rundown, r.Ended
	f.Pid, f.ProcStart, f.Tid, f.PPid = r.Pid, r.ProcStart, r.Tid, r.PPid
	f.Handle, f.Dev = uint64(r.Handle), dev
	f.Name, f.Image, f.Detail = r.Name, r.Image, r.Detail
	f.Size, f.Offset, f.Vaddr = r.Size, uint64(r.FileOffset), uint64(r.Vaddr)
	for _, name := range r.Flags {
		bit, ok := event.ParseFactFlag(name)
		if !ok {
			return fmt.Errorf("unknown fact flag %q", name)
		}
		f.Flags |= bit
	}
	f.Kernel, f.User = addrList(r.Kernel), addrList(r.User)
	return nil
}

// addrList converts a jsonl list of addresses (nil when empty).
func addrList(a []hexNum) []uint64 {
	if len(a) == 0 {
		return nil
	}
	out := make([]uint64, len(a))
	for i, v := range a {
		out[i] = uint64(v)
	}
	return out
}

// factNames maps the names of the fact kinds and handle spaces (those of
// every value) back to their values, built once: String() of a
// value without a name formats one, too slow for every fact line.
var factNames = sync.OnceValue(func() (t struct {
	kinds  map[string]event.FactKind
	spaces map[string]event.HandleSpace
}) {
	t.kinds = make(map[string]event.FactKind)
	t.spaces = make(map[string]event.HandleSpace)
	for k := event.FactKind(255); ; k-- { // the first value of a name wins
		t.kinds[k.String()] = k
		if k == event.FactUnknown {
			break
		}
	}
	for s := event.SpaceNone; ; s++ { // the last value of a name wins, as before
		t.spaces[s.String()] = s
		if s == 255 {
			break
		}
	}
	return t
})

// recentIDs remembers the event IDs of the last recentIDWindow events, with
// their lines: a line repeated within the window (a duplicated line or
// block of lines) is caught without memory growing with the trace.
//
// It is a hash table chained through a ring of the window's entries,
// written for this job because it is on the path of every event line and
// a map of the window cost more than the rest of the line's bookkeeping
// (a lookup, a delete and an insert per event, all cache misses). Entry n
// (counted from 1) lives in ring[n%recentIDWindow] and links to the
// previous entry of its bucket, always an older one, so a chain ends at
// the first link that left the window: nothing is ever deleted, and an
// insert writes one ring slot and one bucket head.
//
// The bucket of an ID is first a fold of its bits that keeps IDs that
// count up (in their low bits, or above eBPF's CPU and kind bits) in
// neighbouring buckets, which keeps the table's working set small. A chain
// longer than maxRecentChain (IDs chosen to collide) switches the table to
// a multiplicative hash with a random odd multiplier, rebuilt from the
// ring, so that no input makes every lookup walk the window.
type recentIDs struct {
	head []uint64 // per bucket: the newest entry's number, 0 for none
	ring []recentID
	n    uint64       // entries so far
	mult uint64       // 0: the fold; else the multiplier
	seed maphash.Seed // hashes the lines
}

type recentID struct {
	id, prev uint64 // prev: the number of the bucket's previous entry
	sum      uint64 // the line's hash: a repeat is the same line, not only the same id
	line     int
}

const (
	recentIDWindow = 1 << 16
	recentIDBits   = 16 // log2 of the number of buckets
	maxRecentChain = 32
)

func (r *recentIDs) bucket(id uint64) uint64 {
	if r.mult != 0 {
		return (id * r.mult) >> (64 - recentIDBits)
	}
	return (id ^ id>>14 ^ id>>28 ^ id>>42 ^ id>>56) & (1<<recentIDBits - 1)
}

// seen records id, of a line whose hash is sum, at line; it reports the
// earlier line when the same id on the same line is among the recent
// ones. Two events of one id on different lines are two events (a trace
// may give one id to several, as old eBPF traces did).
func (r *recentIDs) seen(id, sum uint64, line int) (int, bool) {
	if r.head == nil {
		r.head = make([]uint64, 1<<recentIDBits)
		r.ring = make([]recentID, recentIDWindow)
	}
	b := r.bucket(id)
	// Entries numbered above oldest are in the window.
	oldest := uint64(0)
	if r.n > recentIDWindow {
		oldest = r.n - recentIDWindow
	}
	steps := 0
	for e := r.head[b]; e > oldest; steps++ {
		x := &r.ring[e%recentIDWindow]
		if x.id == id && x.sum == sum {
			return x.line, true
		}
		e = x.prev
	}
	r.n++
	r.ring[r.n%recentIDWindow] = recentID{id: id, prev: r.head[b], sum: sum, line: line}
	r.head[b] = r.n
	if steps > maxRecentChain && r.mult == 0 {
		r.rehash()
	}
	return 0, false
}

// rehash switches to the multiplicative hash and rebuilds the chains of
// the entries in the window, oldest first.
func (r *recentIDs) rehash() {
	r.mult = rand.Uint64() | 1
	clear(r.head)
	first := uint64(1)
	if r.n > recentIDWindow {
		first = r.n - recentIDWindow + 1
	}
	for e := first; e <= r.n; e++ {
		x := &r.ring[e%recentIDWindow]
		b := r.bucket(x.id)
		x.prev = r.head[b]
		r.head[b] = e
	}
}

// restoreBytes puts back the exact bytes of the strings that were not valid
// UTF-8, kept in their KEY_b64 fields by the writer.
func (r *jsonRecord) restoreBytes() error {
	for _, f := range []struct {
		dst *string
		b64 string
		key string
	}{{&r.OS, r.OSB64, "os"}, {&r.OSVersion, r.VersionB64, "os_version"}, {&r.Tool, r.ToolB64, "tool"},
		{&r.Hostname, r.HostnameB64, "hostname"}, {&r.Command, r.CommandB64, "command"}, {&r.Native, r.NativeB64, "native"},
		{&r.Comm, r.CommB64, "comm"}, {&r.Path, r.PathB64, "path"}, {&r.Path2, r.Path2B64, "path2"}, {&r.Note, r.NoteB64, "note"},
		{&r.Name, r.NameB64, "name"}, {&r.Image, r.ImageB64, "image"}, {&r.Detail, r.DetailB64, "detail"}} {
		if f.b64 == "" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(f.b64)
		if err != nil {
			return fmt.Errorf("%s_b64: %v", f.key, err)
		}
		*f.dst = string(b)
	}
	return nil
}

// unmarshalLine decodes one line with go-json, about five times faster
// than encoding/json on these records (docs/benchmarks.md).
func unmarshalLine(text []byte, rec *jsonRecord) error { return unmarshalGuarded(text, rec) }

// unmarshalGuarded decodes text into v with go-json; a panic in the
// decoder on malformed input is turned into an error for that line.
func unmarshalGuarded(text []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed JSON (decoder: %v)", p)
		}
	}()
	return gojson.Unmarshal(text, v)
}
