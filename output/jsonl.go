package output

import (
	"encoding/base64"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/iotrace/iotrace/event"
)

// JSONL renders one JSON object per line: the header, every event, the
// facts (with Options.Facts) and the trailer, told apart by their "type"
// field ("header", "event", "fact", "trailer"). Field names are stable and
// documented in docs/events.md; fields holding their "none" value are
// omitted.
type JSONL struct {
	out     writer
	opts    Options
	windows bool
	devices map[event.Device]string
	events  uint64
}

// NewJSONL returns a jsonl sink writing every event and fact to w, the
// lossless form [ReadJSONL] reads back.
func NewJSONL(w io.Writer) *JSONL { return newJSONL(w, Options{Facts: true}) }

func newJSONL(w io.Writer, opts Options) *JSONL {
	return &JSONL{
		out:     writer{w: w, buf: make([]byte, 0, flushSize+4096)},
		opts:    opts,
		devices: make(map[event.Device]string),
	}
}

// jsonObj builds one object; the first field opens it.
type jsonObj struct{ b []byte }

func (o *jsonObj) key(k string) {
	if o.b[len(o.b)-1] != '{' {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

// str writes a string field. A string that is not valid UTF-8 (a file
// name is bytes on Linux) is written as JSON must, with U+FFFD for each bad
// byte, and its exact bytes are kept beside it in KEY_b64 (base64), which
// the reader restores (docs/events.md).
func (o *jsonObj) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
	if !utf8.ValidString(v) {
		o.key(k + "_b64")
		o.b = append(o.b, '"')
		o.b = base64.StdEncoding.AppendEncode(o.b, []byte(v))
		o.b = append(o.b, '"')
	}
}

func (o *jsonObj) strNZ(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

// layers writes a "layers" list ("file", "block") unless s is empty.
func (o *jsonObj) layers(s event.Layers) {
	if s == 0 {
		return
	}
	o.key("layers")
	o.b = append(o.b, '[')
	n := 0
	for l := event.Layer(0); l < 8; l++ {
		if s.Has(l) {
			if n > 0 {
				o.b = append(o.b, ',')
			}
			o.b = append(o.b, '"')
			o.b = append(o.b, l.String()...)
			o.b = append(o.b, '"')
			n++
		}
	}
	o.b = append(o.b, ']')
}

func (o *jsonObj) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObj) intNZ(k string, v int64) {
	if v != 0 {
		o.int(k, v)
	}
}

func (o *jsonObj) uint(k string, v uint64) {
	o.key(k)
	o.b = strconv.AppendUint(o.b, v, 10)
}

// maxJSONID is 2^53, from where JSON readers that hold numbers as
// doubles (jq, JavaScript) round integers.
const maxJSONID = 1 << 53

// id writes an event ID: a number below 2^53, else its decimal digits in
// a string, so that no reader rounds it (IDs of older traces reach 2^64-1).
func (o *jsonObj) id(k string, v uint64) {
	o.key(k)
	if v < maxJSONID {
		o.b = strconv.AppendUint(o.b, v, 10)
		return
	}
	o.b = append(o.b, '"')
	o.b = strconv.AppendUint(o.b, v, 10)
	o.b = append(o.b, '"')
}

func (o *jsonObj) uintNZ(k string, v uint64) {
	if v != 0 {
		o.uint(k, v)
	}
}

// hexNZ writes a kernel address as a "0x..." string: JSON numbers above
// 2^53 lose precision in many readers.
func (o *jsonObj) hexNZ(k string, v uint64) {
	if v != 0 {
		o.key(k)
		o.b = append(o.b, '"')
		o.b = appendHex(o.b, v)
		o.b = append(o.b, '"')
	}
}

// addrs writes a list of addresses as "0x..." strings, when not empty.
func (o *jsonObj) addrs(k string, a []uint64) {
	if len(a) == 0 {
		return
	}
	o.key(k)
	o.b = append(o.b, '[')
	for i, v := range a {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = append(o.b, `"0x`...)
		o.b = strconv.AppendUint(o.b, v, 16)
		o.b = append(o.b, '"')
	}
	o.b = append(o.b, ']')
}

func (o *jsonObj) boolT(k string, v bool) {
	if v {
		o.key(k)
		o.b = append(o.b, "true"...)
	}
}

func (o *jsonObj) dev(k string, d event.Device) {
	if !d.IsZero() {
		o.key(k)
		o.b = append(o.b, '"')
		if d.IsDisk {
			o.b = append(o.b, "disk"...)
			o.b = strconv.AppendUint(o.b, uint64(d.Major), 10)
			if d.Minor != 0 {
				o.b = append(o.b, ':')
				o.b = strconv.AppendUint(o.b, uint64(d.Minor), 10)
			}
		} else {
			o.b = strconv.AppendUint(o.b, uint64(d.Major), 10)
			o.b = append(o.b, ':')
			o.b = strconv.AppendUint(o.b, uint64(d.Minor), 10)
		}
		o.b = append(o.b, '"')
	}
}

func (j *JSONL) open(typ string) jsonObj {
	o := jsonObj{b: append(j.out.buf, '{')}
	o.str("type", typ)
	return o
}

func (j *JSONL) close(o jsonObj) error {
	j.out.buf = append(o.b, '}', '\n')
	return j.out.maybeFlush()
}

// Begin implements event.Sink.
func (j *JSONL) Begin(h *event.Header) error {
	j.windows = h.OS == "windows"
	o := j.open("header")
	o.str("source", h.Source.String())
	o.strNZ("os", h.OS)
	o.strNZ("os_version", h.OSVersion)
	o.strNZ("hostname", h.Hostname)
	o.uintNZ("cpus", uint64(h.CPUs))
	o.uintNZ("pointer_size", uint64(h.PointerSize))
	if h.StartWall != 0 {
		o.int("start_wall", h.StartWall)
		o.key("start")
		o.b = append(o.b, '"')
		o.b = h.Start().AppendFormat(o.b, time.RFC3339Nano)
		o.b = append(o.b, '"')
	}
	if h.Clock.Kind != event.ClockUnknown {
		o.str("clock", h.Clock.Kind.String())
	}
	o.uintNZ("clock_freq", h.Clock.Freq)
	o.intNZ("clock_origin", h.Clock.Origin)
	o.strNZ("command", h.Command)
	o.strNZ("tool", h.Tool)
	o.layers(h.Layers)
	return j.close(o)
}

// Event implements event.Sink.
func (j *JSONL) Event(e *event.Event) error {
	j.events++
	o := j.open("event")
	o.id("id", e.ID)
	o.str("source", e.Source.String())
	o.str("layer", e.Layer.String())
	o.str("op", e.Op.String())
	o.strNZ("native", e.Native)
	o.int("time", e.Time)
	o.int("duration", e.Duration)
	o.intNZ("wait", e.Wait)
	o.uint("cpu", uint64(e.CPU))
	o.uint("pid", uint64(e.Pid))
	o.uint("tid", uint64(e.Tid))
	o.intNZ("proc_start", e.ProcStart)
	o.strNZ("comm", e.Comm)
	o.strNZ("path", e.Path)
	o.strNZ("path2", e.Path2)
	if e.FD != -1 {
		o.int("fd", int64(e.FD))
	}
	o.hexNZ("file_object", e.FileObject)
	o.hexNZ("file_key", e.FileKey)
	o.uintNZ("inode", e.Inode)
	if e.Offset != -1 {
		o.int("offset", e.Offset)
	}
	o.uintNZ("size", e.Size)
	if e.Bytes != -1 {
		o.int("bytes", e.Bytes)
	}
	o.str("status", e.Status.String())
	if e.Code != 0 {
		o.uint("code", uint64(e.Code))
		o.str("error", codeName(e.Code, j.windows))
	}
	if e.Flags != 0 {
		o.key("flags")
		o.b = append(o.b, '[')
		for i := 0; e.Flags>>i != 0; i++ {
			if e.Flags&(1<<i) == 0 {
				continue
			}
			if o.b[len(o.b)-1] != '[' {
				o.b = append(o.b, ',')
			}
			o.b = append(o.b, '"')
			o.b = append(o.b, flagNames[i]...)
			o.b = append(o.b, '"')
		}
		o.b = append(o.b, ']')
	}
	o.uintNZ("open_flags", uint64(e.OpenFlags))
	o.uintNZ("mode", uint64(e.Mode))
	o.uintNZ("disposition", uint64(e.Disposition))
	o.uintNZ("priority", uint64(e.Priority))
	o.uintNZ("io_flags", uint64(e.IOFlags))
	o.uintNZ("info", uint64(e.Info))
	o.dev("dev", e.Dev)
	if !e.Dev.IsZero() {
		o.strNZ("dev_name", j.devices[e.Dev])
	}
	o.uintNZ("sector", e.Sector)
	o.hexNZ("request", e.Request)
	if e.Cause != 0 {
		o.id("cause", e.Cause)
	}
	o.uintNZ("caused_ios", uint64(e.CausedIOs))
	o.uintNZ("caused_bytes", e.CausedBytes)
	o.uintNZ("read_cached", e.ReadCached)
	o.uintNZ("read_ahead", e.ReadAhead)
	o.uintNZ("read_disk", e.ReadDisk)
	o.uintNZ("read_waited", e.ReadWaited)
	if e.ReadAheadFrom != 0 {
		o.id("read_ahead_from", e.ReadAheadFrom)
	}
	o.strNZ("note", e.Note)
	o.uintNZ("stack", e.Stack)
	return j.close(o)
}

// Fact implements event.Sink: device names are remembered for
// "dev_name"; with Options.Facts the fact is written.
func (j *JSONL) Fact(f *event.Fact) error {
	if f.Kind == event.FactDevice && f.Name != "" {
		j.devices[f.Dev] = f.Name
	}
	if !j.opts.Facts {
		return nil
	}
	o := j.open("fact")
	o.str("kind", f.Kind.String())
	o.int("time", f.Time)
	o.boolT("rundown", f.Rundown)
	o.boolT("ended", f.End)
	if f.Space != event.SpaceNone {
		o.str("space", f.Space.String())
	}
	o.uintNZ("pid", uint64(f.Pid))
	o.intNZ("proc_start", f.ProcStart)
	o.uintNZ("tid", uint64(f.Tid))
	o.uintNZ("ppid", uint64(f.PPid))
	if f.Space == event.SpaceFileObject || f.Space == event.SpaceFileKey {
		o.hexNZ("handle", f.Handle)
	} else if f.Kind == event.FactName {
		o.uint("handle", f.Handle)
	} else {
		o.uintNZ("handle", f.Handle)
	}
	o.dev("dev", f.Dev)
	o.strNZ("name", f.Name)
	o.strNZ("image", f.Image)
	o.strNZ("detail", f.Detail)
	o.uintNZ("size", f.Size)
	o.hexNZ("file_offset", f.Offset)
	o.hexNZ("vaddr", f.Vaddr)
	if f.Flags != 0 {
		o.key("flags")
		o.b = append(o.b, '[')
		for i := 0; f.Flags>>i != 0; i++ {
			if f.Flags&(1<<i) == 0 {
				continue
			}
			if o.b[len(o.b)-1] != '[' {
				o.b = append(o.b, ',')
			}
			o.b = appendJSONString(o.b, (f.Flags & (1 << i)).String())
		}
		o.b = append(o.b, ']')
	}
	o.addrs("kernel", f.Kernel)
	o.addrs("user", f.User)
	return j.close(o)
}

// End implements event.Sink: it writes the trailer with every counter
// and the number of events written, and flushes.
func (j *JSONL) End(t *event.Trailer) error {
	o := j.open("trailer")
	o.int("end", t.End)
	o.uint("events", j.events)
	o.key("counters")
	o.b = append(o.b, '[')
	for i, c := range t.Stats.Counters {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = append(o.b, `{"kind":"`...)
		o.b = append(o.b, c.Kind.String()...)
		o.b = append(o.b, '"')
		o.str("name", c.Name)
		o.b = append(o.b, `,"value":`...)
		o.b = strconv.AppendUint(o.b, c.Value, 10)
		o.b = append(o.b, '}')
	}
	o.b = append(o.b, ']')
	o.layers(t.Layers)
	j.out.buf = append(o.b, '}', '\n')
	return j.out.flush()
}
