package etl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/backend/etw/xpress"
	"github.com/iotrace/iotrace/event"
)

// Records is one pass over the records of a file. Get one from
// Reader.Records; it is not safe for concurrent use.
type Records struct {
	r       *Reader
	streams []*cpuStream
	heap    []*cpuStream
	// pending is the stream whose head record Next returned last; it is
	// advanced on the following call, so that the record stays valid
	// until then.
	pending *cpuStream
	// keep, when set, leaves out the records it rejects before the merge.
	keep func(*record.Record) bool
	// sel, when set, lets the pass use buffers the cache keeps compacted
	// to sel; dropped is told about the records they leave out.
	sel     *Selection
	dropped func(*record.Record, uint64)
	dropRec record.Record
	// partial is set once the pass used a compacted buffer (it did not
	// see every record); descent once a processor's stream went back in
	// time.
	partial bool
	descent bool
	win     window
	started bool
	lastTS  int64
	counts  counts
	errs    []error
	nerrs   int
	final   error
	// ctx, when set (WithContext), stops the pass: steps counts the
	// walk's steps between two looks at it, stop is its error.
	ctx   context.Context
	steps uint32
	stop  error
	// lo and span bound the records' timestamps: from lo to lo+span
	// (as unsigned: one comparison a record).
	lo   int64
	span uint64
}

// counts are the pass's counters, kept as plain integers on the hot path
// and turned into event.Stats on demand.
type counts struct {
	records       uint64
	byType        [256]uint64
	skipped       [256]uint64
	buffers       uint64
	compressed    uint64
	bytes         uint64 // decompressed bytes of the buffers read
	eventsLostBuf uint64
	bufferLostBuf uint64
	rtCorrupt     uint64
	badBuffers    uint64 // buffers that could not be read at all
	cutBuffers    uint64 // buffers whose rest was skipped after a bad record
	cutBytes      uint64
	outOfOrder    uint64
	fillerBuffers uint64 // buffers whose used part ends in filler
	fillerBytes   uint64
	overlapping   uint64 // buffers that begin before the one before them
	clamped       uint64 // records whose timestamp was outside the trace's range
}

// cpuStream walks the buffers of one processor in order.
type cpuStream struct {
	bufs []int
	next int
	info *BufferInfo
	// data is the current buffer: own, or a buffer of the Reader's cache.
	data   []byte
	own    []byte
	pos    int
	order  int
	lastTS int64
	parser recordParser
	head   record.Record
	// pos32 holds the positions in the whole buffer of the records of a
	// compacted buffer being walked (nil otherwise); k indexes it.
	pos32 []uint32
	k     int
	// compacting is set while the buffer being walked is being compacted
	// into the cache by comp.
	compacting bool
	comp       compactor
	// prevTS is the timestamp of the stream's previous record.
	prevTS int64
	// hint is the memory the stream's buffer needs (its largest).
	hint int
	// The time span of the stream's buffers: atFirst until the first
	// record of the buffer being walked is met (hadRecord after),
	// curFirst its timestamp; span the first and last record timestamps
	// of the buffer before it (spanSet once there is one).
	atFirst, hadRecord  bool
	curFirst            int64
	spanFirst, spanLast int64
	spanSet             bool
}

func newRecords(r *Reader) *Records {
	rs := &Records{r: r, lastTS: -1 << 63, win: window{ra: r.ra, size: r.size, buf: r.getWindow(), mapped: r.mappedBytes()},
		lo: r.lo, span: uint64(r.hi) - uint64(r.lo)}
	for i, g := range r.groups {
		rs.streams = append(rs.streams, &cpuStream{
			own:    r.getBuf(),
			bufs:   g,
			order:  i,
			lastTS: r.header.HeaderTimestamp,
			prevTS: math.MinInt64,
			hint:   r.hints[i],
			parser: recordParser{filePointerSize: int(r.header.PointerSize)},
		})
	}
	return rs
}

// WithContext makes the pass stop when ctx is done: Next then returns
// ctx's error. The pass looks at ctx every few thousand steps of its walk
// (records, those a keep function rejects included, and buffers), so it
// stops within milliseconds whatever the records. Read and its kin set
// it. It returns rs.
func (rs *Records) WithContext(ctx context.Context) *Records {
	rs.ctx = ctx
	return rs
}

// stepsPerLook is how many steps of the walk go between two looks at the
// pass's context (a power of two): a step costs at most the
// decompression of a buffer (MaxBufferSize, about 10 ms at most), mostly
// a record (tens of ns).
const stepsPerLook = 1024

// stopped reports whether the pass's context is done, looking at it
// every stepsPerLook calls.
func (rs *Records) stopped() bool {
	rs.steps++
	return rs.steps%stepsPerLook == 0 && rs.look()
}

// look looks at the pass's context.
func (rs *Records) look() bool {
	if rs.ctx == nil {
		return false
	}
	if err := rs.ctx.Err(); err != nil {
		rs.stop = err
		return true
	}
	return false
}

// Next returns the next record, or io.EOF after the last one. When the
// file is damaged, Next still delivers every intact record and then, in
// place of io.EOF, an error describing the damage (a *FormatError, or
// several joined); each call after that returns the same error.
//
// The record and everything it points to (UserData, Ext) alias the pass's
// buffers and are valid only until the next call to Next.
func (rs *Records) Next() (*record.Record, error) {
	if rs.final != nil {
		return nil, rs.final
	}
	if !rs.started {
		rs.started = true
		for _, s := range rs.streams {
			if rs.advance(s) {
				rs.heap = append(rs.heap, s)
			}
			if rs.stop != nil {
				break
			}
		}
		for i := len(rs.heap)/2 - 1; i >= 0; i-- {
			rs.down(i)
		}
	} else if s := rs.pending; s != nil {
		rs.pending = nil
		if rs.advance(s) {
			rs.down(0)
		} else {
			n := len(rs.heap) - 1
			rs.heap[0] = rs.heap[n]
			rs.heap[n] = nil
			rs.heap = rs.heap[:n]
			if n > 0 {
				rs.down(0)
			}
		}
	}
	if rs.stop != nil {
		rs.final = rs.stop
		rs.release()
		return nil, rs.final
	}
	if len(rs.heap) == 0 {
		rs.final = rs.finish()
		rs.release()
		return nil, rs.final
	}
	s := rs.heap[0]
	rs.pending = s
	rec := &s.head
	if rec.Timestamp < rs.lastTS {
		rs.counts.outOfOrder++
	} else {
		rs.lastTS = rec.Timestamp
	}
	rs.counts.records++
	rs.counts.byType[rec.HeaderType]++
	return rec, nil
}

// less orders streams by their head record's timestamp, then by processor.
func less(a, b *cpuStream) bool {
	if a.head.Timestamp != b.head.Timestamp {
		return a.head.Timestamp < b.head.Timestamp
	}
	return a.order < b.order
}

func (rs *Records) down(i int) {
	h := rs.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// advance moves s to its next record, loading buffers as needed. It
// returns false when the stream is exhausted, or the pass stopped
// (rs.stop).
func (rs *Records) advance(s *cpuStream) bool {
	for {
		if rs.stopped() {
			return false
		}
		if s.info == nil {
			if s.next >= len(s.bufs) {
				return false
			}
			info := &rs.r.buffers[s.bufs[s.next]]
			s.next++
			data, err := rs.load(info, s)
			if err != nil {
				rs.counts.badBuffers++
				rs.addErr(err)
				continue
			}
			s.data = data
			s.info = info
			s.pos = BufferHeaderSize
			if s.pos32 == nil { // else useCompacted set them
				s.atFirst, s.hadRecord = true, false
			}
		}
		size, res, fe := s.parser.parse(s.data, s.pos, &s.head, s.lastTS)
		if fe != nil {
			if s.compacting {
				// The cache keeps a damaged buffer whole: a later pass
				// meets the damage where this one did.
				rs.storeCompacted(s, nil, -1)
			}
			if !s.info.Truncated {
				rs.counts.cutBuffers++
				rs.counts.cutBytes += uint64(len(s.data) - s.pos)
				rs.addErr(&FormatError{Buffer: s.info.Index, BufferOffset: s.info.FileOffset, Pos: fe.pos,
					Compressed: s.info.Compressed(), Field: fe.field, Err: corruptf("%s; the rest of the buffer (%d bytes) is skipped", fe.msg, len(s.data)-s.pos)})
			}
			rs.endBuffer(s)
			continue
		}
		switch res {
		case resEnd:
			if s.compacting {
				rs.storeCompacted(s, &s.comp, -1)
			}
			rs.endBuffer(s)
			continue
		case resFiller:
			if s.compacting {
				rs.storeCompacted(s, &s.comp, len(s.data)-s.pos)
			}
			rs.counts.fillerBuffers++
			rs.counts.fillerBytes += uint64(len(s.data) - s.pos)
			rs.endBuffer(s)
			continue
		case resSkip:
			if s.compacting {
				s.comp.skipped(s.data[s.pos+2])
			}
			rs.counts.skipped[s.data[s.pos+2]]++
			s.pos += align8(size)
			continue
		}
		h := &s.head
		if uint64(h.Timestamp)-uint64(rs.lo) > rs.span {
			rs.clamp(h)
		}
		if s.atFirst {
			if rs.overlaps(s, h.Timestamp) {
				continue
			}
			s.atFirst, s.hadRecord, s.curFirst = false, true, h.Timestamp
		}
		h.CPU = s.info.Processor
		h.Buffer = s.info.Index
		if s.pos32 != nil {
			h.FileOffset = s.info.FileOffset + int64(s.pos32[s.k])
			s.k++
		} else {
			h.FileOffset = s.info.FileOffset + int64(s.pos)
		}
		if s.compacting {
			s.comp.record(h, s.data, s.pos, size)
		}
		if h.Timestamp < s.prevTS {
			rs.descent = true
		}
		s.prevTS = h.Timestamp
		s.lastTS = h.Timestamp
		s.pos += align8(size)
		if rs.keep != nil && !rs.keep(h) {
			rs.counts.records++
			rs.counts.byType[h.HeaderType]++
			continue
		}
		return true
	}
}

// clamp clamps the timestamp of h, outside the trace's time range, to it.
func (rs *Records) clamp(h *record.Record) {
	h.Timestamp = min(max(h.Timestamp, rs.r.lo), rs.r.hi)
	rs.counts.clamped++
}

// endBuffer ends the walk of the buffer s is on: its time span becomes
// the one the next buffer's is compared with (overlaps), when it had a
// record.
func (rs *Records) endBuffer(s *cpuStream) {
	if s.hadRecord {
		s.spanFirst, s.spanLast, s.spanSet = s.curFirst, s.lastTS, true
	}
	s.atFirst, s.hadRecord = false, false
	s.info = nil
}

// overlaps reports whether the buffer s is on, whose first record is at
// first, begins where the stream's buffer before it began, or earlier,
// while that one's records span some time: a processor's buffers follow
// each other in time (a record may come a little late, not a whole
// buffer late), so this one is a copy of an earlier buffer with changes,
// or another file's. It is damage: the buffer is not read, and the pass
// reports it. (A copy unchanged is found by the index: a duplicate.) In
// file order (OrderFile), where a stream is not one processor's, buffers
// are not compared.
func (rs *Records) overlaps(s *cpuStream, first int64) bool {
	if !s.spanSet || first > s.spanFirst || (first == s.spanFirst && s.spanLast == s.spanFirst) || rs.r.opts.Order != OrderTime {
		return false
	}
	info := s.info
	rs.counts.overlapping++
	rs.addErr(&FormatError{Buffer: info.Index, BufferOffset: info.FileOffset, Pos: -1, Field: "records' timestamps",
		Err: corruptf("buffer %d of processor %d begins at timestamp %d, not after the buffer before it on its processor began (%d, its records to %d): a copy of an earlier buffer with changes, or another file's; not read",
			info.Index, info.Processor, first, s.spanFirst, s.spanLast)})
	s.compacting = false // not kept in the cache: every pass meets it here
	s.atFirst = false
	s.info = nil
	return true
}

// storeCompacted ends the compaction of the buffer s walks: the cache
// keeps it as comp compacted it (filler: the size of the filler that
// ended it, or -1), or whole when comp is nil or could not compact it.
func (rs *Records) storeCompacted(s *cpuStream, comp *compactor, filler int) {
	s.compacting = false
	var buf []byte
	var m *compacted
	if comp != nil {
		buf, m = comp.finish(s.data, filler)
	}
	if m == nil {
		buf = s.data
	}
	rs.r.cache.store(s.info.Index, buf, m)
}

// useCompacted starts the walk of a compacted buffer: the records it
// left out are counted and reported now.
func (rs *Records) useCompacted(info *BufferInfo, s *cpuStream, m *compacted) {
	rs.partial = true
	s.pos32, s.k = m.pos, 0
	// The buffer's first record may be left out: its time was kept. (The
	// pass that compacted it found it does not overlap the buffer
	// before it.)
	s.atFirst, s.hadRecord, s.curFirst = false, m.hasFirst, m.first
	c := &rs.counts
	for i := range m.drops {
		d := &m.drops[i]
		c.records += d.n
		c.byType[d.k.ht] += d.n
		if rs.dropped != nil {
			rs.dropRec = d.k.record()
			rs.dropRec.CPU = info.Processor
			rs.dropRec.Buffer = info.Index
			rs.dropped(&rs.dropRec, d.n)
		}
	}
	for _, sk := range m.skipped {
		c.skipped[sk.ht] += sk.n
	}
	if m.filler {
		c.fillerBuffers++
		c.fillerBytes += uint64(m.fillerBytes)
	}
}

// load returns the data of one buffer, counting it: from the Reader's
// cache, else read (and decompressed) into the cache when it has room,
// else into the stream's own buffer. When the cache compacts buffers,
// a buffer is read into the stream's own buffer and compacted into the
// cache as the stream walks it.
func (rs *Records) load(info *BufferInfo, s *cpuStream) ([]byte, error) {
	var data []byte
	var err error
	size := -1
	s.pos32, s.compacting = nil, false
	if c := rs.r.cache; c == nil {
		data, err = rs.loadOwn(info, s)
	} else if e := c.get(info.Index); e.data != nil {
		if c.usable(e, rs.sel) {
			data = e.data
			if e.comp != nil {
				rs.useCompacted(info, s, e.comp)
				size = e.comp.size
			}
		} else {
			// Compacted for another selection, or for one this pass
			// cannot use yet: read the buffer again.
			data, err = rs.loadOwn(info, s)
		}
	} else if sel := c.compaction(info.Index); sel != nil {
		data, err = rs.loadOwn(info, s)
		if err == nil {
			s.comp.start(sel, data)
			s.compacting = true
		}
	} else {
		used := int64(info.Used())
		var mem []byte
		if used >= BufferHeaderSize && used <= int64(rs.r.usedLimit(info)) {
			mem = c.reserve(info.Index, int(used))
		}
		if mem != nil {
			data, err = rs.r.loadBuffer(info, mem, 0, &rs.win)
			if err == nil && len(data) > 0 && &data[0] == &mem[0] {
				c.commit(info.Index, data)
			} else {
				c.abandon(mem)
			}
		} else {
			data, err = rs.loadOwn(info, s)
		}
	}
	if err != nil {
		return data, err
	}
	if size < 0 {
		size = len(data)
	}
	c := &rs.counts
	c.buffers++
	c.bytes += uint64(size)
	if info.Compressed() {
		c.compressed++
	}
	if info.Flags&BufferFlagEventsLost != 0 {
		c.eventsLostBuf++
	}
	if info.Flags&BufferFlagBufferLost != 0 {
		c.bufferLostBuf++
	}
	if info.Flags&BufferFlagRTBackupCorrupt != 0 {
		c.rtCorrupt++
	}
	return data, nil
}

// loadOwn reads one buffer into the stream's own memory.
func (rs *Records) loadOwn(info *BufferInfo, s *cpuStream) ([]byte, error) {
	data, err := rs.r.loadBuffer(info, s.own, s.hint, &rs.win)
	s.own = data[:cap(data)]
	return data, err
}

// usedLimit returns the largest used size (decompressed, header included)
// buffer info may have: Options.MaxBufferSize, and for a compressed
// buffer the log-file header's BufferSize (once read: the session's
// buffers are that size) and MaxRatio times its compressed records. A
// pass holds one buffer per processor, so a file cannot make it hold more
// than MaxRatio times its own size, and a compressed buffer of a few
// bytes cannot claim 16 MiB.
func (r *Reader) usedLimit(info *BufferInfo) int {
	limit := r.opts.MaxBufferSize
	if info.Compressed() {
		if bs := int(r.header.BufferSize); bs >= BufferHeaderSize {
			limit = min(limit, bs)
		}
		limit = min(limit, BufferHeaderSize+MaxRatio*max(int(info.BufferSize)-BufferHeaderSize, 0))
	}
	return limit
}

// loadBuffer reads buffer info into dst (grown as needed, to at least
// hint bytes) and returns its used part, decompressed, header included.
// The file is read through w.
func (r *Reader) loadBuffer(info *BufferInfo, dst []byte, hint int, w *window) ([]byte, error) {
	fe := func(pos int, field string, err error) error {
		return &FormatError{Buffer: info.Index, BufferOffset: info.FileOffset, Pos: pos, Compressed: info.Compressed(), Field: field, Err: err}
	}
	used := int(info.Used())
	field := "SavedOffset"
	if info.SavedOffset == 0 {
		field = "Offset"
	}
	if used < BufferHeaderSize || used > r.opts.MaxBufferSize {
		return dst, fe(-1, field, corruptf("used size %d outside %d..%d", used, BufferHeaderSize, r.opts.MaxBufferSize))
	}
	if limit := r.usedLimit(info); used > limit {
		return dst, fe(-1, field, corruptf("a compressed buffer of %d bytes decompresses to %d, more than it may (%d: the log-file header's BufferSize %d, and %d times its compressed records)",
			info.BufferSize, used, limit, r.header.BufferSize, MaxRatio))
	}
	avail := int(min(int64(info.BufferSize), r.size-info.FileOffset))
	if !info.Compressed() {
		if used > int(info.BufferSize) {
			return dst, fe(-1, field, corruptf("used size %d exceeds BufferSize %d", used, info.BufferSize))
		}
		n := min(used, avail)
		dst = grow(dst, n, hint)
		if n > windowSize/4 {
			// A large buffer: straight into dst.
			if _, err := r.ra.ReadAt(dst, info.FileOffset); err != nil && !(err == io.EOF && info.Truncated) {
				return dst, fe(-1, "buffer", fmt.Errorf("read %d bytes: %w", n, err))
			}
			return dst, nil
		}
		src, err := w.slice(info.FileOffset, n)
		if err != nil && !info.Truncated {
			return dst, fe(-1, "buffer", err)
		}
		copy(dst, src)
		return dst, nil
	}
	src, err := w.slice(info.FileOffset, avail)
	if err != nil && !info.Truncated {
		return dst, fe(-1, "buffer", err)
	}
	if len(src) < BufferHeaderSize {
		return dst, fe(-1, "buffer", truncatedf("%d bytes of the buffer header in the file", len(src)))
	}
	dst = grow(dst, used, hint)
	copy(dst, src[:BufferHeaderSize])
	n, err := xpress.Decompress(dst[BufferHeaderSize:], src[BufferHeaderSize:])
	if info.Truncated {
		return dst[:BufferHeaderSize+n], nil
	}
	if err != nil {
		var ce *xpress.CorruptError
		pos := -1
		if errors.As(err, &ce) {
			// Report the position in the file: compressed data is not
			// addressable otherwise.
			return dst, &FormatError{Buffer: info.Index, BufferOffset: info.FileOffset, Pos: BufferHeaderSize + ce.Offset,
				Field: "compressed data (" + ce.Field + ")", Err: corruptf("%v", ce.Err)}
		}
		return dst, fe(pos, "compressed data", corruptf("%v", err))
	}
	if n != used-BufferHeaderSize {
		return dst, fe(-1, field, corruptf("buffer decompresses to %d bytes, SavedOffset says %d", n, used-BufferHeaderSize))
	}
	return dst, nil
}

// grow returns b resliced (or reallocated) to n bytes. A new buffer has
// room for hint bytes (the largest buffer of its stream), so that a
// stream allocates its buffer once, not again at every larger buffer,
// and no larger than its own buffers need.
func grow(b []byte, n, hint int) []byte {
	if cap(b) < n {
		return make([]byte, n, max(n, hint))
	}
	return b[:n]
}

func (rs *Records) addErr(err error) {
	rs.nerrs++
	if len(rs.errs) < maxListedErrors {
		rs.errs = append(rs.errs, err)
	}
}

// release hands the pass's buffers back to the Reader for the next pass.
func (rs *Records) release() {
	rs.r.putWindow(rs.win.buf)
	rs.win.buf = nil
	var bufs [][]byte
	for _, s := range rs.streams {
		bufs = append(bufs, s.own)
		s.own, s.data = nil, nil
	}
	rs.r.putBufs(bufs...)
}

// finish returns the end-of-pass result: io.EOF, or the damage found.
func (rs *Records) finish() error {
	if c := rs.r.cache; c != nil && !rs.partial {
		c.setOrdered(!rs.descent)
	}
	errs := rs.errs
	if more := rs.nerrs - len(rs.errs); more > 0 {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("etl: %d more damaged buffers not listed", more))
	}
	errs = append(errs[:len(errs):len(errs)], rs.r.dups...)
	if ee := rs.r.extraErr; ee != nil {
		errs = append(errs[:len(errs):len(errs)], ee)
	}
	if ie := rs.r.indexErr; ie != nil {
		errs = append(errs[:len(errs):len(errs)], ie)
	}
	switch len(errs) {
	case 0:
		return io.EOF
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// Counters of damage the pass met.
const (
	StatOverlapping = "etl: buffers beginning before the buffer before them on their processor (a copy with changes, or another file's: not read)"
	StatExtra       = "etl: buffers more than the log-file header says the logger wrote (read: their events may be another trace's or twice)"
	StatClamped     = "etl: records with a timestamp outside the trace's time range (clamped to it)"
)

// Count returns how many records of header type t the pass has delivered
// so far.
func (rs *Records) Count(t uint8) uint64 { return rs.counts.byType[t] }

// Stats returns the pass's counters together with the file's own loss
// counts (header EventsLost and BuffersLost). Use the Stats of one pass
// only: a second pass counts the same file again.
func (rs *Records) Stats() event.Stats {
	var s event.Stats
	c := &rs.counts
	h := &rs.r.header
	s.Set(event.CountInfo, "etl: records", c.records)
	for t, n := range c.byType {
		if n != 0 {
			s.Set(event.CountInfo, "etl: records "+HeaderTypeName(uint8(t)), n)
		}
	}
	s.Set(event.CountInfo, "etl: buffers", c.buffers)
	if c.compressed != 0 {
		s.Set(event.CountInfo, "etl: compressed buffers", c.compressed)
	}
	s.Set(event.CountInfo, "etl: bytes (decompressed)", c.bytes)
	s.Set(event.CountLost, "etl: events lost by the session (header EventsLost)", uint64(h.EventsLost))
	s.Set(event.CountLost, "etl: buffers lost by the session (header BuffersLost)", uint64(h.BuffersLost))
	s.Set(event.CountLost, "etl: buffers flagged EVENTS_LOST", c.eventsLostBuf)
	s.Set(event.CountLost, "etl: buffers flagged BUFFER_LOST", c.bufferLostBuf)
	if c.rtCorrupt != 0 {
		s.Set(event.CountLost, "etl: buffers flagged RTBACKUP_CORRUPT", c.rtCorrupt)
	}
	if c.badBuffers != 0 {
		s.Set(event.CountLost, "etl: unreadable buffers skipped (corrupt)", c.badBuffers)
	}
	if c.cutBuffers != 0 {
		s.Set(event.CountLost, "etl: buffers cut short by a corrupt record", c.cutBuffers)
		s.Set(event.CountLost, "etl: bytes skipped after corrupt records", c.cutBytes)
	}
	if n := len(rs.r.dups); n > 0 {
		// Counted, not as lost: their records were read once.
		s.Set(event.CountInfo, "etl: duplicated buffers not read again (no event lost)", uint64(n))
	}
	if c.overlapping != 0 {
		s.Set(event.CountLost, StatOverlapping, c.overlapping)
	}
	if ee := rs.r.extraErr; ee != nil {
		s.Set(event.CountInfo, StatExtra, uint64(len(rs.r.buffers)-len(rs.r.dups))-uint64(h.BuffersWritten))
	}
	if c.clamped != 0 {
		s.Set(event.CountDropped, StatClamped, c.clamped)
	}
	if ie := rs.r.indexErr; ie != nil {
		if errors.Is(ie, ErrTruncated) {
			s.Set(event.CountLost, "etl: file truncated (buffers or part of one missing at its end)", 1)
		} else {
			s.Set(event.CountLost, "etl: buffers after an invalid BufferSize not read", 1)
		}
	}
	if c.fillerBuffers != 0 {
		s.Set(event.CountLost, "etl: buffers with filler before SavedOffset (rest not read)", c.fillerBuffers)
		s.Set(event.CountLost, "etl: bytes of filler not read", c.fillerBytes)
	}
	for t, n := range c.skipped {
		if n != 0 {
			s.Set(event.CountDropped, "etl: records skipped (header type "+HeaderTypeName(uint8(t))+")", n)
		}
	}
	if c.outOfOrder != 0 {
		s.Set(event.CountInfo, "etl: records older than the record before them after the merge", c.outOfOrder)
	}
	return s
}
