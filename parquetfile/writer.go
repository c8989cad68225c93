package parquetfile

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/parquet-go/parquet-go/format"

	"github.com/iotrace/iotrace/event"
)

// Options configure a Writer.
type Options struct {
	// RowGroupRows is the number of rows per row group; 0 means
	// DefaultRowGroupRows. Memory grows with it.
	RowGroupRows int64
	// Stack names the frames of an event's stack, innermost first, for
	// the stack column (nil: the event has none). Nil leaves the column
	// null.
	Stack func(e *event.Event) []string
}

// DefaultRowGroupRows is the row group size when Options leave it 0:
// about 10 MB of buffered column data for a typical trace.
const DefaultRowGroupRows = 64 << 10

// endedProcs bounds how many exited processes keep their command line and
// image for events that arrive after the exit fact (writeback, late
// completions).
const endedProcs = 4096

// Metadata keys written to the file's key-value metadata.
const (
	// MetaSchema holds SchemaVersion.
	MetaSchema = "iotrace.schema"
	// MetaStats holds the trailer's counters as a JSON array of
	// {"kind", "name", "value"} objects: what was lost, unpaired and
	// unresolved in the trace the rows come from.
	MetaStats = "iotrace.stats"
	// MetaEnd holds the trailer's end time (ns from the trace start).
	MetaEnd = "iotrace.end_ns"
	// MetaLayers holds the layers the trace's source traced ("file,block"),
	// when the trace says: a layer not in it has no rows because it was
	// not traced.
	MetaLayers = "iotrace.layers"
)

type proc struct {
	image, cmdline string
}

// procCacheSize is the number of entries of Writer.procCache.
const procCacheSize = 256

type procSlot struct {
	k  event.ProcessKey
	p  proc
	ok bool
}

// procSlotOf returns k's entry of the cache.
func (w *Writer) procSlotOf(k event.ProcessKey) *procSlot {
	return &w.procCache[(k.Pid^uint32(k.Start)^uint32(k.Start>>32))%procCacheSize]
}

// uncache drops k from the process cache.
func (w *Writer) uncache(k event.ProcessKey) {
	if s := w.procSlotOf(k); s.k == k {
		s.ok = false
	}
}

type device struct {
	id, name string // "8:0", "sda"
}

// Writer is an event.Sink that writes a Parquet file to an io.Writer. Its
// End writes the footer; it never closes the io.Writer.
type Writer struct {
	f      *fileWriter
	rgRows int // rows per row group
	stack  func(*event.Event) []string
	n      int // rows in the row group being filled
	cols   columns
	all    []column
	start  int64
	layers event.Layers // the header's layers traced

	flags map[event.Flags]string // Flags.String, which allocates, once per value
	procs map[event.ProcessKey]proc
	// procCache caches procs by a hash of the key: events come in runs
	// of a handful of processes, and a map lookup was 7 % of the writer.
	procCache [procCacheSize]procSlot
	ended     []event.ProcessKey // ring of exited processes, oldest at endAt
	endAt     int
	devs      map[event.Device]device

	footer bool // End wrote the footer
	err    error
}

// New returns a Writer writing to w.
func New(w io.Writer, opts Options) *Writer {
	n := opts.RowGroupRows
	if n <= 0 {
		n = DefaultRowGroupRows
	}
	wr := &Writer{
		rgRows: int(n),
		stack:  opts.Stack,
		flags:  make(map[event.Flags]string),
		procs:  make(map[event.ProcessKey]proc),
		devs:   make(map[event.Device]device),
	}
	wr.all = wr.cols.init(int(min(n, 1<<20)))
	specs := make([]*colSpec, len(wr.all))
	for i, c := range wr.all {
		specs[i] = c.spec()
	}
	wr.f = newFileWriter(w, specs)
	return wr
}

// TraceID returns the id written in the trace_id column for a trace with
// header h: 16 hex digits of a SHA-256 over the host, OS, wall-clock start,
// command and tool, the same every time the same trace is converted.
func TraceID(h *event.Header) string {
	s := sha256.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(h.StartWall))
	for _, part := range []string{h.Hostname, h.OS, string(n[:]), h.Command, h.Tool} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(part)))
		s.Write(n[:])
		s.Write([]byte(part))
	}
	return hex.EncodeToString(s.Sum(nil)[:8])
}

// micros converts nanoseconds to microseconds, rounding down.
func micros(ns int64) int64 {
	if ns < 0 {
		return -((-ns + 999) / 1000)
	}
	return ns / 1000
}

// Begin implements event.Sink.
func (w *Writer) Begin(h *event.Header) error {
	w.start = h.StartWall
	w.layers = h.Layers
	c := &w.cols
	c.host.s, c.os.s, c.osVersion.s = h.Hostname, h.OS, h.OSVersion
	c.traceID.s = TraceID(h)
	c.traceStart.i, c.traceStartNS.i = micros(h.StartWall), h.StartWall
	c.source.s = h.Source.String()
	return nil
}

// Fact implements event.Sink: process facts give the cmdline and image
// columns, device facts the dev_name column.
func (w *Writer) Fact(f *event.Fact) error {
	switch f.Kind {
	case event.FactProcess:
		k := event.ProcessKey{Pid: f.Pid, Start: f.ProcStart}
		w.uncache(k)
		if f.End {
			w.forget(k)
			return nil
		}
		p := w.procs[k]
		if f.Image != "" {
			p.image = f.Image
		}
		if f.Detail != "" {
			p.cmdline = f.Detail
		}
		w.procs[k] = p
	case event.FactDevice:
		if f.Name != "" && !f.End {
			w.devs[f.Dev] = device{f.Dev.String(), f.Name}
		}
	}
	return nil
}

// forget keeps an exited process for a while (events may follow its exit)
// and drops the one that exited endedProcs exits ago.
func (w *Writer) forget(k event.ProcessKey) {
	if _, ok := w.procs[k]; !ok {
		return
	}
	if len(w.ended) < endedProcs {
		w.ended = append(w.ended, k)
		return
	}
	old := w.ended[w.endAt]
	if old != k {
		delete(w.procs, old)
		w.uncache(old)
	}
	w.ended[w.endAt] = k
	w.endAt = (w.endAt + 1) % endedProcs
}

// Event implements event.Sink.
func (w *Writer) Event(e *event.Event) error {
	if w.err != nil {
		return w.err
	}
	c := &w.cols
	c.id.add(int64(e.ID))
	c.timeNS.add(e.Time)
	c.ts.add(micros(w.start + e.Time))
	c.durationNS.add(e.Duration)
	c.waitNS.add(e.Wait)
	c.layer.add(e.Layer.String())
	c.op.add(e.Op.String())
	c.native.add(e.Native)
	c.status.add(e.Status.String())
	c.code.add(int64(e.Code))
	c.failed.add(e.Failed())
	flags := ""
	if e.Flags != 0 {
		s, ok := w.flags[e.Flags]
		if !ok {
			s = e.Flags.String()
			w.flags[e.Flags] = s
		}
		flags = s
	}
	c.flags.add(flags)

	c.cpu.add(int64(e.CPU))
	c.pid.add(int64(e.Pid))
	c.tid.add(int64(e.Tid))
	c.procStartNS.add(e.ProcStart)
	c.comm.add(e.Comm)
	k := e.Process()
	ps := w.procSlotOf(k)
	if !ps.ok || ps.k != k {
		*ps = procSlot{k, w.procs[k], true}
	}
	c.image.addOpt(ps.p.image)
	c.cmdline.addOpt(ps.p.cmdline)

	c.path.addOpt(e.Path)
	c.path2.addOpt(e.Path2)
	c.fd.addOpt(int64(e.FD), e.FD >= 0)
	c.fileObject.addOpt(int64(e.FileObject), e.FileObject != 0)
	c.fileKey.addOpt(int64(e.FileKey), e.FileKey != 0)
	c.inode.addOpt(int64(e.Inode), e.Inode != 0)
	c.offset.addOpt(e.Offset, e.Offset >= 0)
	c.size.add(int64(e.Size))
	c.bytes.addOpt(e.Bytes, e.Bytes >= 0)
	c.openFlags.add(int64(e.OpenFlags))
	c.mode.add(int64(e.Mode))
	c.ioFlags.add(int64(e.IOFlags))
	c.info.add(int64(e.Info))
	c.disposition.add(int64(int32(e.Disposition)))
	c.priority.add(int64(int32(e.Priority)))

	var d device
	if !e.Dev.IsZero() {
		var ok bool
		if d, ok = w.devs[e.Dev]; !ok {
			d.id = e.Dev.String()
			w.devs[e.Dev] = d
		}
	}
	c.dev.addOpt(d.id)
	c.devName.addOpt(d.name)
	c.sector.addOpt(int64(e.Sector), e.Layer == event.LayerBlock)
	c.request.addOpt(int64(e.Request), e.Request != 0)
	c.cause.addOpt(int64(e.Cause), e.Cause != 0)
	c.causedIOs.add(int64(e.CausedIOs))
	c.causedBytes.add(int64(e.CausedBytes))
	c.note.addOpt(e.Note)
	// A read classified by page-cache provenance has its four parts (0
	// included); every other event has them null.
	classified := e.ReadKnown() != 0
	c.readCached.addOpt(int64(e.ReadCached), classified)
	c.readAhead.addOpt(int64(e.ReadAhead), classified)
	c.readDisk.addOpt(int64(e.ReadDisk), classified)
	c.readWaited.addOpt(int64(e.ReadWaited), classified)
	c.readAheadFrom.addOpt(int64(e.ReadAheadFrom), e.ReadAheadFrom != 0)
	var frames []string
	if e.Stack != 0 && w.stack != nil {
		frames = w.stack(e)
	}
	c.stack.addList(frames)

	w.n++
	if w.n == w.rgRows {
		return w.flush()
	}
	return nil
}

// flush writes the rows buffered as a row group.
func (w *Writer) flush() error {
	if w.n == 0 || w.err != nil {
		return w.err
	}
	w.f.rowGroup(w.all, w.n)
	for _, c := range w.all {
		c.reset()
	}
	w.n = 0
	if w.f.err != nil {
		w.err = fmt.Errorf("write parquet rows after row %d: %w", w.f.rows, w.f.err)
	}
	return w.err
}

// Rows returns the number of rows written so far.
func (w *Writer) Rows() uint64 { return uint64(w.f.rows) + uint64(w.n) }

type counter struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// End implements event.Sink: it writes the last rows, the trailer's
// counters as metadata, and the footer.
func (w *Writer) End(t *event.Trailer) error {
	if err := w.flush(); err != nil {
		return err
	}
	cs := make([]counter, 0, len(t.Stats.Counters))
	for _, c := range t.Stats.Sorted() {
		cs = append(cs, counter{c.Kind.String(), c.Name, c.Value})
	}
	stats, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	kv := []format.KeyValue{
		{Key: MetaSchema, Value: strconv.Itoa(SchemaVersion)},
		{Key: MetaStats, Value: string(stats)},
		{Key: MetaEnd, Value: strconv.FormatInt(t.End, 10)},
	}
	if l := event.TracedLayers(&event.Header{Layers: w.layers}, t); l != 0 {
		kv = append(kv, format.KeyValue{Key: MetaLayers, Value: l.String()})
	}
	w.f.footer(kv)
	if w.f.err != nil {
		w.err = fmt.Errorf("write parquet footer after %d rows: %w", w.f.rows, w.f.err)
		return w.err
	}
	w.footer = true
	return nil
}

// Ended reports whether End wrote the footer: only then is the file one a
// Parquet reader can read.
func (w *Writer) Ended() bool { return w.footer }
