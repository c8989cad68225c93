package etl

import (
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
}

func newRecords(r *Reader) *Records {
	rs := &Records{r: r, lastTS: -1 << 63, win: window{ra: r.ra, size: r.size, buf: r.getWindow(), mapped: r.mappedBytes()}}
	for i, g := range r.groups {
		rs.streams = append(rs.streams, &cpuStream{
			own:    r.getBuf(),
			bufs:   g,
			order:  i,
			lastTS: r.header.HeaderTimestamp,
			prevTS: math.MinInt64,
			parser: recordParser{filePointerSize: int(r.header.PointerSize)},
		})
	}
	return rs
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
// returns false when the stream is exhausted.
func (rs *Records) advance(s *cpuStream) bool {
	for {
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
			s.info = nil
			continue
		}
		switch res {
		case resEnd:
			if s.compacting {
				rs.storeCompacted(s, &s.comp, -1)
			}
			s.info = nil
			continue
		case resFiller:
			if s.compacting {
				rs.storeCompacted(s, &s.comp, len(s.data)-s.pos)
			}
			rs.counts.fillerBuffers++
			rs.counts.fillerBytes += uint64(len(s.data) - s.pos)
			s.info = nil
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
		if used >= BufferHeaderSize && used <= int64(rs.r.opts.MaxBufferSize) {
			mem = c.reserve(info.Index, int(used))
		}
		if mem != nil {
			data, err = rs.r.loadBuffer(info, mem, &rs.win)
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
	data, err := rs.r.loadBuffer(info, s.own, &rs.win)
	s.own = data[:cap(data)]
	return data, err
}

// loadBuffer reads buffer info into dst (grown as needed) and returns its
// used part, decompressed, header included. The file is read through w.
func (r *Reader) loadBuffer(info *BufferInfo, dst []byte, w *window) ([]byte, error) {
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
	avail := int(min(int64(info.BufferSize), r.size-info.FileOffset))
	if !info.Compressed() {
		if used > int(info.BufferSize) {
			return dst, fe(-1, field, corruptf("used size %d exceeds BufferSize %d", used, info.BufferSize))
		}
		n := min(used, avail)
		dst = r.grow(dst, n)
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
	dst = r.grow(dst, used)
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
// room for the file's largest buffer (up to maxGrowHint: ETW's buffers
// are at most 1 MiB in practice, a larger one is allocated as it comes),
// so that a stream allocates its buffer once, not again at every larger
// buffer.
func (r *Reader) grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n, max(n, min(r.maxUsed, maxGrowHint)))
	}
	return b[:n]
}

// maxGrowHint bounds the room grow leaves for larger buffers.
const maxGrowHint = 1 << 20

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
