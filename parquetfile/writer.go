package parquetfile

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/iotrace/iotrace/event"
)

// Options configure a Writer.
type Options struct {
	// RowGroupRows is the number of rows per row group; 0 means
	// DefaultRowGroupRows. Memory grows with it.
	RowGroupRows int64
}

// DefaultRowGroupRows is the row group size when Options leave it 0:
// about 10 MB of buffered column data for a typical trace.
const DefaultRowGroupRows = 64 << 10

// batchRows is how many rows are handed to the encoder at once.
const batchRows = 1024

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
)

type proc struct {
	image, cmdline string
}

type device struct {
	id, name string // "8:0", "sda"
}

// Writer is an event.Sink that writes a Parquet file to an io.Writer. Its
// End writes the footer; it never closes the io.Writer.
type Writer struct {
	w     *parquet.GenericWriter[row]
	id    row // identity columns, copied into every row
	start int64
	batch []row
	// Nullable column storage for the batch (rows point into these).
	fds     []int32
	offsets []int64
	bytes   []int64
	sectors []uint64

	flags map[event.Flags]string // Flags.String, which allocates, once per value
	procs map[event.ProcessKey]proc
	// lastKey and last cache the process of the previous event (events
	// come in runs of one process); lastOK says the cache is valid.
	lastKey event.ProcessKey
	last    proc
	lastOK  bool
	ended   []event.ProcessKey // ring of exited processes, oldest at endAt
	endAt   int
	devs    map[event.Device]device

	rows   uint64
	footer bool // End wrote the footer
	err    error
}

// New returns a Writer writing to w.
func New(w io.Writer, opts Options) *Writer {
	n := opts.RowGroupRows
	if n <= 0 {
		n = DefaultRowGroupRows
	}
	o := []parquet.WriterOption{
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.MaxRowsPerRowGroup(n),
		parquet.CreatedBy("iotrace", "", ""),
	}
	// Min/max bounds of free-text columns cost 10 % of the writer's time
	// and prune nothing (every page holds many paths); they are kept for
	// the columns queries filter on (host, op, layer, times, sizes).
	for _, c := range []string{"native", "flags", "comm", "image", "cmdline", "path", "path2", "dev_name", "note"} {
		o = append(o, parquet.SkipPageBounds(c))
	}
	// Bounds stay in the column index (what engines prune pages with);
	// repeating them in every data page header cost 11 % of the writer.
	// Ids and times are delta-encoded (increasing or slowly changing);
	// integers with few distinct values in a row group (pids, flags,
	// sizes, fds, inodes) are dictionary-encoded (the row tags): zstd
	// then has a half to a tenth of the bytes to compress
	// (docs/benchmarks.md).
	o = append(o, parquet.DataPageStatistics(false))
	pw := parquet.NewGenericWriter[row](w, o...)
	return &Writer{
		w:       pw,
		batch:   make([]row, 0, batchRows),
		fds:     make([]int32, batchRows),
		offsets: make([]int64, batchRows),
		bytes:   make([]int64, batchRows),
		sectors: make([]uint64, batchRows),
		flags:   make(map[event.Flags]string),
		procs:   make(map[event.ProcessKey]proc),
		devs:    make(map[event.Device]device),
	}
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
	w.id = row{
		Host:         h.Hostname,
		OS:           h.OS,
		OSVersion:    h.OSVersion,
		TraceID:      TraceID(h),
		TraceStart:   micros(h.StartWall),
		TraceStartNS: h.StartWall,
		Source:       h.Source.String(),
	}
	return nil
}

// Fact implements event.Sink: process facts give the cmdline and image
// columns, device facts the dev_name column.
func (w *Writer) Fact(f *event.Fact) error {
	switch f.Kind {
	case event.FactProcess:
		w.lastOK = false
		k := event.ProcessKey{Pid: f.Pid, Start: f.ProcStart}
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
	}
	w.ended[w.endAt] = k
	w.endAt = (w.endAt + 1) % endedProcs
}

// Event implements event.Sink.
func (w *Writer) Event(e *event.Event) error {
	if w.err != nil {
		return w.err
	}
	i := len(w.batch)
	w.batch = append(w.batch, w.id)
	r := &w.batch[i]
	r.ID = int64(e.ID)
	r.TimeNS = e.Time
	r.TS = micros(w.start + e.Time)
	r.DurationNS = e.Duration
	r.WaitNS = e.Wait
	r.Layer = e.Layer.String()
	r.Op = e.Op.String()
	r.Native = e.Native
	r.Status = e.Status.String()
	r.Code = int64(e.Code)
	r.Failed = e.Failed()
	if e.Flags != 0 {
		s, ok := w.flags[e.Flags]
		if !ok {
			s = e.Flags.String()
			w.flags[e.Flags] = s
		}
		r.Flags = s
	}

	r.CPU = int64(e.CPU)
	r.Pid = int64(e.Pid)
	r.Tid = int64(e.Tid)
	r.ProcStartNS = e.ProcStart
	r.Comm = e.Comm
	if k := e.Process(); w.lastOK && k == w.lastKey {
		r.Image, r.Cmdline = w.last.image, w.last.cmdline
	} else {
		p := w.procs[k]
		w.lastKey, w.last, w.lastOK = k, p, true
		r.Image, r.Cmdline = p.image, p.cmdline
	}

	r.Path = e.Path
	r.Path2 = e.Path2
	if e.FD >= 0 {
		w.fds[i] = e.FD
		r.FD = &w.fds[i]
	}
	r.FileObject = e.FileObject
	r.FileKey = e.FileKey
	r.Inode = e.Inode
	if e.Offset >= 0 {
		w.offsets[i] = e.Offset
		r.Offset = &w.offsets[i]
	}
	r.Size = e.Size
	if e.Bytes >= 0 {
		w.bytes[i] = e.Bytes
		r.Bytes = &w.bytes[i]
	}
	r.OpenFlags = int64(e.OpenFlags)
	r.Mode = int64(e.Mode)
	r.IOFlags = int64(e.IOFlags)
	r.Info = int64(e.Info)
	r.Disposition = int32(e.Disposition)
	r.Priority = int32(e.Priority)

	if !e.Dev.IsZero() {
		d, ok := w.devs[e.Dev]
		if !ok {
			d.id = e.Dev.String()
			w.devs[e.Dev] = d
		}
		r.Dev, r.DevName = d.id, d.name
	}
	if e.Layer == event.LayerBlock {
		w.sectors[i] = e.Sector
		r.Sector = &w.sectors[i]
	}
	r.Request = e.Request
	r.Cause = int64(e.Cause)
	r.CausedIOs = int64(e.CausedIOs)
	r.CausedBytes = int64(e.CausedBytes)
	r.Note = e.Note

	if len(w.batch) == cap(w.batch) {
		return w.flush()
	}
	return nil
}

func (w *Writer) flush() error {
	if len(w.batch) == 0 {
		return w.err
	}
	n, err := w.w.Write(w.batch)
	w.rows += uint64(n)
	w.batch = w.batch[:0]
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("write parquet rows after row %d: %w", w.rows, err)
	}
	return w.err
}

// Rows returns the number of rows written so far.
func (w *Writer) Rows() uint64 { return w.rows + uint64(len(w.batch)) }

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
	w.w.SetKeyValueMetadata(MetaSchema, strconv.Itoa(SchemaVersion))
	w.w.SetKeyValueMetadata(MetaStats, string(stats))
	w.w.SetKeyValueMetadata(MetaEnd, strconv.FormatInt(t.End, 10))
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("write parquet footer after %d rows: %w", w.rows, err)
	}
	w.footer = true
	return nil
}

// Ended reports whether End wrote the footer: only then is the file one a
// Parquet reader can read.
func (w *Writer) Ended() bool { return w.footer }
