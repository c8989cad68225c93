package tracefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/iotrace/iotrace/event"
)

// WriterOptions configure a Writer.
type WriterOptions struct {
	// ChunkSize is the encoded size in bytes at which the pending events
	// and facts are written as a chunk; 0 means DefaultChunkSize. Memory
	// use is about twice this.
	ChunkSize int
	// ChunkRecords is the number of events and facts after which a chunk
	// is written; 0 means DefaultChunkRecords.
	ChunkRecords int
	// FirstChunkSize is the size at which the first records chunk is
	// written; each chunk after it may be twice the size of the one
	// before, up to ChunkSize. Small chunks early let a short recording
	// cut short (a crash, a full disk) keep most of what it had written:
	// only the chunk being written at the cut is lost. 0 means
	// DefaultFirstChunkSize; a negative value, or one of ChunkSize or
	// more, makes every chunk ChunkSize.
	FirstChunkSize int
	// Version is the format version to write: 0 means Version (the
	// newest); 2 writes a file that iotrace releases before stacks
	// (format version 3) can read, and refuses stacks; 1 one that
	// releases before format version 2 can read (larger and slower to
	// read). Begin fails on any other value.
	Version int
}

// Defaults for WriterOptions.
const (
	DefaultChunkSize      = 256 << 10
	DefaultChunkRecords   = 32768
	DefaultFirstChunkSize = 16 << 10
)

// Writer writes a trace as a .iot file. It is an event.Sink: Begin writes
// the file and trace headers, Event and Fact buffer records and write a
// chunk whenever one is full, End writes the last chunk and the trailer.
// Flush writes the pending records at any time (a live recorder calls it
// periodically so that a crash loses little). After the first write
// error every call returns it.
type Writer struct {
	w      io.Writer
	closer io.Closer
	opts   WriterOptions
	enc    *chunkEnc
	v1     bool // writing format version 1
	old    bool // writing a format version without stacks (1 or 2)
	out    []byte
	off    int64

	began, ended bool
	events       uint64
	facts        uint64
	err          error

	// whole is where the last chunk written whole ends; wholeEvents the
	// events in the chunks up to there (see Written).
	whole       int64
	wholeEvents uint64

	// limit is the size at which the next records chunk is written: it
	// grows from FirstChunkSize to ChunkSize, doubling with each chunk.
	limit int
}

// NewWriter returns a Writer that writes to w. It does not close w.
func NewWriter(w io.Writer, opts WriterOptions) *Writer {
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.ChunkSize > MaxChunkSize/2 {
		opts.ChunkSize = MaxChunkSize / 2
	}
	if opts.ChunkRecords <= 0 {
		opts.ChunkRecords = DefaultChunkRecords
	}
	switch {
	case opts.FirstChunkSize == 0:
		opts.FirstChunkSize = min(DefaultFirstChunkSize, opts.ChunkSize)
	case opts.FirstChunkSize < 0 || opts.FirstChunkSize > opts.ChunkSize:
		opts.FirstChunkSize = opts.ChunkSize
	}
	if opts.Version == 0 {
		opts.Version = Version
	}
	return &Writer{w: w, opts: opts, enc: newChunkEnc(), v1: opts.Version == 1, old: opts.Version < 3,
		limit: opts.FirstChunkSize}
}

// Create creates (or truncates) the file at path and returns a Writer to
// it; Close closes the file.
func Create(path string, opts WriterOptions) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := NewWriter(f, opts)
	w.closer = f
	return w, nil
}

// Offset returns the number of bytes written so far.
func (w *Writer) Offset() int64 { return w.off }

// Written returns the events in the chunks written whole and the offset
// where the last of them ends: after a write error, what a file cut there
// holds (a reader reads it to that chunk, then says it was cut short).
func (w *Writer) Written() (events uint64, offset int64) { return w.wholeEvents, w.whole }

// writeChunks writes b, whole chunks holding events events.
func (w *Writer) writeChunks(b []byte, events int) error {
	if err := w.write(b); err != nil {
		return err
	}
	w.whole = w.off
	w.wholeEvents += uint64(events)
	return nil
}

func (w *Writer) write(b []byte) error {
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(b)
	w.off += int64(n)
	if err != nil {
		w.err = fmt.Errorf("write .iot at offset %d: %w", w.off, err)
	}
	return w.err
}

func (w *Writer) check(call string) error {
	if w.err != nil {
		return w.err
	}
	if !w.began {
		return fmt.Errorf("tracefile.Writer: %s before Begin", call)
	}
	if w.ended {
		return fmt.Errorf("tracefile.Writer: %s after End", call)
	}
	return nil
}

// Begin implements event.Sink: it writes the file header and the trace
// header.
func (w *Writer) Begin(h *event.Header) error {
	if w.err != nil {
		return w.err
	}
	if w.began {
		return errors.New("tracefile.Writer: Begin called twice")
	}
	if w.opts.Version < 1 || w.opts.Version > Version {
		w.err = fmt.Errorf("tracefile.Writer: cannot write format version %d (versions 1 to %d)", w.opts.Version, Version)
		return w.err
	}
	w.began = true
	out := append(w.out[:0], Magic...)
	out = binary.LittleEndian.AppendUint16(out, uint16(w.opts.Version))
	out = binary.LittleEndian.AppendUint16(out, 0)
	out = appendChunk(out, chunkHeader, func(b []byte) []byte { return appendHeader(b, h) })
	w.out = out
	return w.writeChunks(out, 0)
}

// Event implements event.Sink.
func (w *Writer) Event(e *event.Event) error {
	if err := w.check("Event"); err != nil {
		return err
	}
	if w.old && e.Stack != 0 {
		return w.tooOld("an event's stack", 3)
	}
	if w.opts.Version < 4 && eventMask(e, 0)&mProvenance != 0 {
		return w.tooOld("a read's page-cache provenance", 4)
	}
	if w.v1 {
		w.enc.encodeEventV1(e)
	} else {
		w.enc.encodeEvent(e)
	}
	w.events++
	return w.maybeFlush()
}

// Fact implements event.Sink.
func (w *Writer) Fact(f *event.Fact) error {
	if err := w.check("Fact"); err != nil {
		return err
	}
	if w.old && factMask(f)&^fAllV2 != 0 {
		return w.tooOld("a "+f.Kind.String()+" fact's stack or module fields", 3)
	}
	if w.v1 {
		w.enc.encodeFactV1(f)
	} else {
		w.enc.encodeFact(f)
	}
	w.facts++
	return w.maybeFlush()
}

// tooOld is the error for a record the format version being written
// cannot hold. It is not sticky: the records written so far stay valid.
func (w *Writer) tooOld(what string, need int) error {
	return fmt.Errorf("tracefile.Writer: format version %d cannot hold %s (it needs version %d)", w.opts.Version, what, need)
}

func (w *Writer) maybeFlush() error {
	if w.enc.size() >= w.limit || w.enc.nevents+w.enc.nfacts >= w.opts.ChunkRecords {
		return w.flush()
	}
	return nil
}

func (w *Writer) flush() error {
	if w.enc.empty() {
		return w.err
	}
	if w.enc.size() > MaxChunkSize-64 {
		w.err = fmt.Errorf("tracefile.Writer: chunk of %d bytes exceeds the format's maximum of %d (a record too large)", w.enc.size(), MaxChunkSize)
		return w.err
	}
	records := w.enc.appendRecords
	if w.v1 {
		records = w.enc.appendRecordsV1
	}
	w.out = appendChunk(w.out[:0], chunkRecords, records)
	w.limit = min(2*w.limit, w.opts.ChunkSize)
	n := w.enc.nevents
	w.enc.reset()
	return w.writeChunks(w.out, n)
}

// Flush writes the pending events and facts as a chunk.
func (w *Writer) Flush() error {
	if err := w.check("Flush"); err != nil {
		return err
	}
	return w.flush()
}

// End implements event.Sink: it writes the pending records and the
// trailer. It does not close the underlying writer (see Close).
func (w *Writer) End(t *event.Trailer) error {
	if err := w.check("End"); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	w.ended = true
	w.out = appendChunk(w.out[:0], chunkTrailer, func(b []byte) []byte { return appendTrailer(b, t, w.events, w.facts) })
	return w.writeChunks(w.out, 0)
}

// Close writes pending records (without a trailer when End was not
// called: readers then report the trace as cut short) and closes the file
// when the Writer came from Create.
func (w *Writer) Close() error {
	var err error
	if w.began && !w.ended {
		err = w.flush()
	}
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil && cerr != nil {
			err = cerr
		}
		w.closer = nil
	}
	return err
}
