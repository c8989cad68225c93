package etl

import (
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/mmapfile"
)

// Order selects the order in which records are delivered.
type Order uint8

// Record orders.
const (
	// OrderTime merges the per-processor buffer streams by timestamp: the
	// order in which events happened, which pairing needs.
	OrderTime Order = iota
	// OrderFile delivers records buffer by buffer as they lie in the file.
	OrderFile
)

// indexWindowMax is the largest buffer size after which the index still
// reads headers through a window; after larger buffers it reads the
// header alone.
const indexWindowMax = 32 << 10

// DefaultMaxBufferSize is the largest buffer (decompressed) a Reader
// accepts unless Options say otherwise: ETW's largest (EVENT_TRACE_PROPERTIES
// BufferSize is at most 16 MiB; 64 KiB in every file seen).
const DefaultMaxBufferSize = 16 << 20

// MaxRatio is the most a compressed buffer may inflate: its decompressed
// records at most MaxRatio times its compressed ones. Windows' buffers
// inflate 1.2 to 13.6 times in the shared fixtures; a buffer that claims
// more was built to make the reader allocate far more than the file
// holds.
const MaxRatio = 64

// Options configure a Reader. The zero value is ready to use.
type Options struct {
	// Order of the records (default OrderTime).
	Order Order
	// MaxBufferSize is the largest buffer accepted, in bytes, before and
	// after decompression (default DefaultMaxBufferSize). A compressed
	// buffer is also held to the log-file header's BufferSize and to
	// MaxRatio times its compressed size. They bound memory on corrupt
	// input.
	MaxBufferSize int
	// CacheBudget is the memory, in bytes, the Reader may spend on keeping
	// the buffers a pass read (decompressed) for the passes after it, which
	// then neither read nor decompress them again (default
	// DefaultCacheBudget; negative: no cache). A file whose buffers do not
	// all fit has the rest read again by every pass. The memory is
	// allocated as buffers are read, up to the budget, and released by
	// Close.
	CacheBudget int64
	// Map makes Open map the file into memory instead of reading it
	// (where the OS allows: elsewhere it reads): buffers are parsed and
	// decompressed where they lie, without a copy. Every use of the
	// Reader's records must then run inside Reader.Guard, which turns a
	// file cut short while it is read into an error.
	Map bool
}

// Reader reads an ETL file. NewReader parses the log-file header and
// indexes the buffers (reading only their 0x48-byte headers); each call to
// Records then streams every record from the start, so a file can be read
// any number of times (two passes: names first, then events). A pass holds
// one buffer per processor; the buffers it reads are also kept, up to
// Options.CacheBudget bytes, so that the next pass finds them decompressed
// in memory. Memory is thus bounded by a constant, whatever the size of
// the file. A Reader is safe for concurrent use by passes that each have
// their own Records.
type Reader struct {
	ra      io.ReaderAt
	mapped  *mmapfile.Mapping // the file, when Options.Map mapped it
	size    int64
	opts    Options
	closer  io.Closer
	name    string // the path Open opened
	header  LogfileHeader
	buffers []BufferInfo
	// sums holds a hash of each buffer's records as they lie in the file
	// (0: none), which findDuplicates compares.
	sums []uint64
	// groups holds buffer indices per stream, in delivery order; hints
	// the largest buffer of each stream, decompressed (its memory).
	groups   [][]int
	hints    []int
	indexErr error
	dups     []error // duplicated buffers (findDuplicates)
	extraErr error   // more buffers than the logger wrote
	// lo and hi bound the records' timestamps: the trace's time range
	// (LogfileHeader.timeRange).
	lo, hi int64
	// free and freeWin hold the buffers and the read window of finished
	// passes for the next pass.
	freeMu  sync.Mutex
	free    [][]byte
	freeWin []byte
	// cache keeps decompressed buffers between passes (nil: off).
	cache *bufferCache
}

// getBuf returns a spare buffer from a finished pass, or nil.
func (r *Reader) getBuf() []byte {
	r.freeMu.Lock()
	defer r.freeMu.Unlock()
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free = r.free[:n-1]
		return b
	}
	return nil
}

// putBufs keeps the buffers of a finished pass (at most one set).
func (r *Reader) putBufs(bufs ...[]byte) {
	r.freeMu.Lock()
	defer r.freeMu.Unlock()
	for _, b := range bufs {
		if cap(b) > 0 && len(r.free) < len(r.groups)+1 {
			r.free = append(r.free, b[:0])
		}
	}
}

// getWindow returns the read window of a finished pass, or nil.
func (r *Reader) getWindow() []byte {
	r.freeMu.Lock()
	defer r.freeMu.Unlock()
	b := r.freeWin
	r.freeWin = nil
	return b
}

// putWindow keeps the read window of a finished pass.
func (r *Reader) putWindow(b []byte) {
	r.freeMu.Lock()
	defer r.freeMu.Unlock()
	if cap(b) > cap(r.freeWin) {
		r.freeWin = b[:0]
	}
}

// Open opens the ETL file at path; Close releases it.
func Open(path string, opts Options) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var m *mmapfile.Mapping
	if opts.Map {
		m, _ = mmapfile.Map(f, 0, st.Size())
	}
	r, err := newReader(f, m, st.Size(), opts)
	if err != nil {
		if m != nil {
			m.Close()
		}
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	r.name = path
	return r, nil
}

// Guard runs fn, which reads the Reader's records, and turns a fault on
// the mapped file (cut short by someone while it is read) into an error
// naming the offset. Without a mapping it just runs fn.
func (r *Reader) Guard(fn func() error) error {
	if r.mapped == nil {
		return fn()
	}
	return r.mapped.Guard(r.name, fn)
}

// NewReader reads the ETL data of size bytes in ra. It fails when the
// first buffer does not hold a log-file header. A file that is damaged or
// cut short further on is not an error here: every intact record is
// delivered, then the problem is returned by Records.Next.
func NewReader(ra io.ReaderAt, size int64, opts Options) (*Reader, error) {
	return newReader(ra, nil, size, opts)
}

// newReader is NewReader, reading the file from m when it is mapped.
func newReader(ra io.ReaderAt, m *mmapfile.Mapping, size int64, opts Options) (r *Reader, err error) {
	if m != nil {
		// Indexing reads every buffer header: inside the guard too.
		err = m.Guard("ETL file", func() error {
			r, err = newReaderFrom(ra, m, size, opts)
			return err
		})
		return r, err
	}
	return newReaderFrom(ra, nil, size, opts)
}

func newReaderFrom(ra io.ReaderAt, m *mmapfile.Mapping, size int64, opts Options) (*Reader, error) {
	if opts.MaxBufferSize <= 0 {
		opts.MaxBufferSize = DefaultMaxBufferSize
	}
	if opts.CacheBudget == 0 {
		opts.CacheBudget = DefaultCacheBudget
	}
	r := &Reader{ra: ra, mapped: m, size: size, opts: opts}
	w := window{ra: ra, size: size, mapped: r.mappedBytes()}
	r.index(&w)
	if len(r.buffers) == 0 {
		if r.indexErr != nil {
			return nil, fmt.Errorf("not an ETL file: %w", r.indexErr)
		}
		return nil, fmt.Errorf("not an ETL file: %w", &FormatError{Pos: -1, Field: "WMI_BUFFER_HEADER", Err: truncatedf("empty file")})
	}
	if err := r.readHeader(&w); err != nil {
		return nil, fmt.Errorf("not an ETL file: %w", err)
	}
	r.freeWin = w.buf[:0]
	r.findDuplicates()
	r.countBuffers()
	r.lo, r.hi = r.header.timeRange()
	r.group()
	if opts.CacheBudget > 0 {
		var total int64
		for i := range r.buffers {
			total += int64(r.buffers[i].Used())
		}
		r.cache = newBufferCache(opts.CacheBudget, len(r.buffers), total)
	}
	return r, nil
}

// Close releases the buffer cache and closes the file opened by Open (not
// a reader given to NewReader).
func (r *Reader) Close() error {
	if r.cache != nil {
		r.cache = newBufferCache(0, len(r.buffers), 0)
	}
	if r.mapped != nil {
		r.mapped.Close()
		r.mapped = nil
	}
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

// Header returns the log-file header.
func (r *Reader) Header() *LogfileHeader { return &r.header }

// Buffers returns the buffer index in file order. Do not modify it.
func (r *Reader) Buffers() []BufferInfo { return r.buffers }

// Size returns the size of the file in bytes.
func (r *Reader) Size() int64 { return r.size }

// IndexError returns the error that ended the buffer index early (a file
// cut short or a buffer whose size is invalid), or nil. Records.Next
// returns it too, after the last record.
func (r *Reader) IndexError() error { return r.indexErr }

// index walks the buffer headers: each buffer says its own size. While
// buffers are small (compressed ones are a few KiB), the headers are read
// through a window of the file: a few large reads rather than one per
// buffer. The window then serves the first pass.
func (r *Reader) index(w *window) {
	var one [BufferHeaderSize]byte
	seed := maphash.MakeSeed()
	var scratch []byte
	off := int64(0)
	small := true
	for i := 0; off < r.size; i++ {
		fe := func(field string, err error) {
			r.indexErr = &FormatError{Buffer: i, BufferOffset: off, Pos: -1, Field: field, Err: err, RestUnread: true}
		}
		if r.size-off < BufferHeaderSize {
			fe("WMI_BUFFER_HEADER", truncatedf("%d bytes left, a buffer header needs %d", r.size-off, BufferHeaderSize))
			return
		}
		hdr := one[:]
		var err error
		if small {
			hdr, err = w.slice(off, BufferHeaderSize)
		} else {
			_, err = r.ra.ReadAt(hdr, off)
		}
		if err != nil {
			fe("WMI_BUFFER_HEADER", fmt.Errorf("read: %w", err))
			return
		}
		bi := BufferInfo{Index: i, FileOffset: off, BufferHeader: parseBufferHeader(hdr)}
		small = bi.BufferSize <= indexWindowMax
		size := int64(bi.BufferSize)
		if size < BufferHeaderSize || size > int64(r.opts.MaxBufferSize) {
			fe("BufferSize", corruptf("%d bytes (valid: %d to %d); the buffers after it cannot be located", size, BufferHeaderSize, r.opts.MaxBufferSize))
			return
		}
		if size > r.size-off {
			bi.Truncated = true
			r.buffers = append(r.buffers, bi)
			r.sums = append(r.sums, 0)
			fe("BufferSize", truncatedf("buffer of %d bytes, only %d left in the file", size, r.size-off))
			return
		}
		r.buffers = append(r.buffers, bi)
		r.sums = append(r.sums, r.sum(w, &bi, seed, &scratch))
		off += size
	}
}

// sum returns a hash of the records of buffer bi as they lie in the file
// (compressed or not), 0 when it has none: two buffers with the same are
// one buffer twice. The bytes are read through w while buffers are small,
// from the mapping when the file is mapped, else into scratch.
func (r *Reader) sum(w *window, bi *BufferInfo, seed maphash.Seed, scratch *[]byte) uint64 {
	end := int64(bi.BufferSize)
	if !bi.Compressed() {
		end = min(end, int64(bi.Used()))
	}
	n := int(end - BufferHeaderSize)
	if n <= 0 {
		return 0
	}
	var b []byte
	var err error
	if r.mapped != nil || bi.BufferSize <= indexWindowMax {
		b, err = w.slice(bi.FileOffset+BufferHeaderSize, n)
	} else {
		if cap(*scratch) < n {
			*scratch = make([]byte, n)
		}
		b = (*scratch)[:n]
		_, err = r.ra.ReadAt(b, bi.FileOffset+BufferHeaderSize)
	}
	if err != nil {
		return 0 // read again, and reported, by the pass
	}
	return maphash.Bytes(seed, b) | 1
}

// readHeader decodes the TRACE_LOGFILE_HEADER from the first record of
// the first buffer.
func (r *Reader) readHeader(w *window) error {
	b0 := &r.buffers[0]
	data, err := r.loadBuffer(b0, nil, 0, w)
	if err != nil {
		return err
	}
	p := recordParser{filePointerSize: 8}
	var rec record.Record
	_, res, fe := p.parse(data, BufferHeaderSize, &rec, 0)
	if fe != nil {
		return &FormatError{Buffer: 0, Pos: fe.pos, Compressed: b0.Compressed(), Field: fe.field, Err: corruptf("%s", fe.msg)}
	}
	if res != resRecord || (rec.HeaderType != HeaderSystem32 && rec.HeaderType != HeaderSystem64) ||
		rec.Group != record.GroupEventTrace || rec.Opcode != 0 {
		return &FormatError{Buffer: 0, Pos: BufferHeaderSize, Field: "header record",
			Err: corruptf("the first record is %s group %d opcode %d, not the SYSTEM EventTrace/Header record", HeaderTypeName(rec.HeaderType), rec.Group, rec.Opcode)}
	}
	h, err := parseLogfileHeader(rec.UserData, rec.PointerSize)
	if err != nil {
		return &FormatError{Buffer: 0, Pos: BufferHeaderSize + sizeSystem, Field: "TRACE_LOGFILE_HEADER", Err: corruptf("%v", err)}
	}
	h.HeaderTimestamp = rec.Timestamp
	if h.Compressed() {
		h.CompressionFormat = uint16(b0.State)
	}
	r.header = h
	return nil
}

// findDuplicates marks the buffers that repeat an earlier one: the same
// records, byte for byte (a duplicated region of the file, or one buffer
// copied with a new header: sequence number, time or processor). Their
// records are not delivered twice; each is reported as damage that lost
// nothing. A log-file header buffer past the first is marked too: a
// logger writes one, at the start of the file, so another is a stray copy
// of a file's start.
func (r *Reader) findDuplicates() {
	// The records' hash, length and compression: equal keys are equal
	// records (but for a 64-bit hash's collisions).
	type key struct {
		sum  uint64
		n    uint32
		comp bool
	}
	first := map[key]int{}
	for i := range r.buffers {
		b := &r.buffers[i]
		if i > 0 && b.Type == BufferTypeHeader {
			b.Duplicate = true
			err := corruptf("buffer %d is a log-file header buffer, which only the first buffer is: a stray copy of a file's start, not read", i)
			if h := &r.buffers[0]; b.Processor == h.Processor && b.TimeStamp == h.TimeStamp && b.Used() == h.Used() {
				// This file's own first buffer again: nothing is lost.
				err = fmt.Errorf("%w: buffer %d repeats buffer 0, the log-file header buffer, not read again", ErrDuplicate, i)
			}
			r.dups = append(r.dups, &FormatError{Buffer: i, BufferOffset: b.FileOffset, Pos: -1, Field: "BufferType", Err: err})
			continue
		}
		if r.sums[i] == 0 {
			continue // no records
		}
		k := key{r.sums[i], b.Used(), b.Compressed()}
		if b.Compressed() {
			k.n = b.BufferSize
		}
		j, ok := first[k]
		if !ok {
			first[k] = i
			continue
		}
		b.Duplicate = true
		o := &r.buffers[j]
		r.dups = append(r.dups, &FormatError{Buffer: i, BufferOffset: b.FileOffset, Pos: -1, Field: "records",
			Err: fmt.Errorf("%w: buffer %d repeats the records of buffer %d at file offset %#x (processor %d, sequence number %d; this copy: processor %d, sequence number %d), not read again",
				ErrDuplicate, i, j, o.FileOffset, o.Processor, o.SequenceNumber, b.Processor, b.SequenceNumber)})
	}
}

// countBuffers compares the buffers present, less the duplicates, with
// the log-file header's BuffersWritten: fewer (the file cut at a buffer
// boundary) is a truncation; more, buffers the logger did not write
// (repeated with changes, or another file's): they are read, and
// reported.
func (r *Reader) countBuffers() {
	written := r.header.BuffersWritten
	n := uint32(len(r.buffers) - len(r.dups))
	const fileModeCircular = 0x2
	switch {
	case r.indexErr == nil && written > n && r.header.LogFileMode&fileModeCircular == 0:
		// Every buffer present is whole, but the logger wrote more: the
		// file was cut exactly at a buffer boundary.
		r.indexErr = &FormatError{Buffer: len(r.buffers), BufferOffset: r.size, Pos: -1, Field: "file", RestUnread: true,
			Err: truncatedf("the log-file header says %d buffers were written, the file ends after %d (cut at a buffer boundary)", written, n)}
	case written > 0 && n > written:
		// The first buffer past the count, in file order.
		k := 0
		for i := range r.buffers {
			if r.buffers[i].Duplicate {
				continue
			}
			if k++; k > int(written) {
				r.extraErr = &FormatError{Buffer: i, BufferOffset: r.buffers[i].FileOffset, Pos: -1, Field: "BuffersWritten",
					Err: fmt.Errorf("%w: the file holds %d buffers (duplicates left out), the log-file header says %d were written: %d more, from buffer %d on in file order (repeated with changes, or another file's?); all are read",
						ErrExtra, n, written, n-written, i)}
				break
			}
		}
	}
}

// group builds the delivery order: one stream per processor, each in
// SequenceNumber order (file order breaks ties), or one stream in file
// order.
func (r *Reader) group() {
	if r.opts.Order == OrderFile {
		all := make([]int, 0, len(r.buffers))
		for i := range r.buffers {
			if !r.buffers[i].Duplicate {
				all = append(all, i)
			}
		}
		r.groups = [][]int{all}
		r.hintGroups()
		return
	}
	byCPU := map[uint16][]int{}
	var cpus []int
	for i := range r.buffers {
		if r.buffers[i].Duplicate {
			continue
		}
		c := r.buffers[i].Processor
		if _, ok := byCPU[c]; !ok {
			cpus = append(cpus, int(c))
		}
		byCPU[c] = append(byCPU[c], i)
	}
	sort.Ints(cpus)
	for _, c := range cpus {
		g := byCPU[uint16(c)]
		sort.SliceStable(g, func(a, b int) bool {
			return r.buffers[g[a]].SequenceNumber < r.buffers[g[b]].SequenceNumber
		})
		r.groups = append(r.groups, g)
	}
	r.hintGroups()
}

// hintGroups sets the memory hint of each stream: its largest buffer
// within the limits (usedLimit), so that a stream allocates its buffer
// once, and no larger than its own buffers need.
func (r *Reader) hintGroups() {
	r.hints = make([]int, len(r.groups))
	for k, g := range r.groups {
		for _, i := range g {
			if u := int(r.buffers[i].Used()); u <= r.usedLimit(&r.buffers[i]) {
				r.hints[k] = max(r.hints[k], u)
			}
		}
	}
}

// Records starts a pass over every record of the file.
func (r *Reader) Records() *Records { return newRecords(r) }

// RecordsKept starts a pass that delivers only the records keep accepts.
// keep sees every record once, in the order of its processor's stream
// (not merged by time), before the merge: rejected records cost the
// merge nothing. They are counted by Stats like delivered ones, except in
// the count of records out of time order. The record keep sees is valid
// only during the call.
func (r *Reader) RecordsKept(keep func(*record.Record) bool) *Records {
	rs := newRecords(r)
	rs.keep = keep
	return rs
}

// Compact tells the Reader that later passes will ask for the records sel
// keeps (RecordsSelected with sel): from now on, the buffers its passes
// load into the cache are kept there compacted to those records, plus
// their last record, with a count of the others; the pass that loads a
// buffer decompresses it into memory of its own, which stays in the
// processor's cache, and the cache holds a fraction of the file. Only
// passes selected with sel use the compacted buffers, and only once a
// pass over every record has found each processor's stream in time
// order; every other pass reads them from the file again, so that no pass
// misses a record it asked for. A nil sel stops the compaction. It does
// nothing when the cache is off.
func (r *Reader) Compact(sel *Selection) {
	if c := r.cache; c != nil {
		c.mu.Lock()
		c.compact = sel
		c.mu.Unlock()
	}
}

// RecordsSelected starts a pass over every record of the file that may
// leave out the records sel does not keep, which it then reports to
// dropped instead, with their count (not to Next; Stats count them like
// delivered ones). The record dropped gets has only the fields that
// identify its kind set: Kind, HeaderType, Provider, Group, Opcode,
// Version, ID, PointerSize, CPU and Buffer; it is valid only during the
// call. Records the pass delivers come in the same order as in a pass
// over every record. dropped may be nil.
func (r *Reader) RecordsSelected(sel *Selection, dropped func(rec *record.Record, n uint64)) *Records {
	rs := newRecords(r)
	rs.sel, rs.dropped = sel, dropped
	return rs
}

// ReadSelected is Read over a pass from RecordsSelected.
func (r *Reader) ReadSelected(ctx context.Context, sel *Selection, dropped func(*record.Record, uint64), fn func(*record.Record) error) (event.Stats, error) {
	return r.read(ctx, r.RecordsSelected(sel, dropped), fn)
}

// Read calls fn for every record of the file, in the Reader's order, and
// returns the pass's statistics. It stops at the first error fn returns
// or when ctx is done. A damaged file is read to its end (every intact
// record is delivered) and the damage is returned as the error.
func (r *Reader) Read(ctx context.Context, fn func(*record.Record) error) (event.Stats, error) {
	return r.read(ctx, r.Records(), fn)
}

// ReadKept is Read over the records keep accepts (see RecordsKept).
func (r *Reader) ReadKept(ctx context.Context, keep func(*record.Record) bool, fn func(*record.Record) error) (event.Stats, error) {
	return r.read(ctx, r.RecordsKept(keep), fn)
}

func (r *Reader) read(ctx context.Context, rs *Records, fn func(*record.Record) error) (event.Stats, error) {
	rs.WithContext(ctx)
	for n := 0; ; n++ {
		if n&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return rs.Stats(), err
			}
		}
		rec, err := rs.Next()
		if err == io.EOF {
			return rs.Stats(), nil
		}
		if err != nil {
			return rs.Stats(), err
		}
		if err := fn(rec); err != nil {
			return rs.Stats(), err
		}
	}
}

// mappedBytes returns the mapped file, or nil.
func (r *Reader) mappedBytes() []byte {
	if r.mapped == nil {
		return nil
	}
	return r.mapped.Bytes()
}
