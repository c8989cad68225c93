package tracefile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"io"
	"os"

	"github.com/iotrace/iotrace/event"
)

// Reader reads a .iot file. Create one with Open or NewReader, then call
// Run once.
type Reader struct {
	path   string
	src    io.Reader
	closer io.Closer
	win    window

	version   int
	header    event.Header
	hasHdr    bool
	pending   *chunk // the first chunk after the header, read by NewReader
	chunks    int    // chunks seen, intact or damaged
	damage    []Damage
	trailer   *trailerRec
	trailerAt int64 // file offset of the trailer chunk
	trailerIx int   // and its index
	ran       bool
	// seen holds a 64-bit hash of every records chunk read, with its
	// offset: a chunk that repeats one byte for byte (a duplicated
	// region of the file) is damage, its records skipped.
	seen map[[2]uint64]int64
	seed maphash.Seed
	// rc gives resync the CRCs of candidate chunks; ctx, when set (Run,
	// ScanFacts), stops it.
	rc  rangeCRC
	ctx context.Context

	dc      decoder
	events  uint64 // delivered
	facts   uint64
	lastEnd int64
}

// chunk is an intact chunk.
type chunk struct {
	typ     byte
	off     int64 // file offset of the chunk header
	index   int
	payload []byte // valid until the next chunk is read
}

// Open opens the .iot file at path. It fails when the file is not a trace
// or is of a newer format version; damage is reported by Run.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := newReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader returns a Reader of the trace in src. It reads the file header
// and the trace header; it fails when src is not a trace or is of a newer
// format version. When src is an io.Seeker positioned at the start of the
// trace, ScanFacts can be used before Run.
func NewReader(src io.Reader) (*Reader, error) { return newReader(src, "") }

// NewNamedReader is NewReader whose errors name the file: for a source
// that wraps the file at path (Open's file, with the bytes read counted).
func NewNamedReader(src io.Reader, path string) (*Reader, error) { return newReader(src, path) }

func newReader(src io.Reader, path string) (*Reader, error) {
	r := &Reader{path: path, src: src}
	r.win.r = src
	if err := r.start(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reader) errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if r.path != "" {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	return err
}

// start reads the file header and the first chunk.
func (r *Reader) start() error {
	w := &r.win
	w.fill(fileHeaderSize)
	head := w.avail()
	if w.err != nil && len(head) < fileHeaderSize {
		return r.errorf("read .iot file header: %w", w.err)
	}
	if len(head) == 0 {
		return r.errorf("%w (the file is empty)", ErrNotTrace)
	}
	if !Match(head) {
		return r.errorf("%w (bad magic at offset 0)", ErrNotTrace)
	}
	if len(head) < fileHeaderSize {
		r.addDamage(Damage{Offset: int64(len(head)), Reason: fmt.Sprintf("truncated: the file ends after %d bytes, inside the file header", len(head))})
		w.discard(len(head))
		return nil
	}
	r.version = int(binary.LittleEndian.Uint16(head[len(Magic):]))
	if r.version > Version {
		err := &VersionError{Version: r.version, Supported: Version}
		if r.path != "" {
			return fmt.Errorf("%s: %w", r.path, err)
		}
		return err
	}
	if r.version == 0 {
		return r.errorf("%w (format version 0 at offset %d)", ErrNotTrace, len(Magic))
	}
	w.discard(fileHeaderSize)
	c, ok := r.next()
	if !ok {
		return nil
	}
	if c.typ == chunkHeader {
		h, err := parseHeader(c.payload)
		if err != nil {
			r.addDamage(Damage{Offset: c.off, Chunk: c.index, Reason: "bad trace header: " + err.Error()})
		}
		r.header, r.hasHdr = h, true
		return nil
	}
	if len(r.damage) == 0 {
		r.addDamage(Damage{Offset: c.off, Chunk: c.index, Reason: "the trace header chunk is missing"})
	}
	cc := *c
	cc.payload = bytes.Clone(c.payload)
	r.pending = &cc
	return nil
}

// Header returns the trace header (zero when the header chunk is damaged).
func (r *Reader) Header() event.Header { return r.header }

// Version returns the file's format version.
func (r *Reader) Version() int { return r.version }

// Format returns "iot".
func (r *Reader) Format() string { return "iot" }

// Close closes the file when the Reader came from Open.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	err := r.closer.Close()
	r.closer = nil
	return err
}

func (r *Reader) addDamage(d Damage) { r.damage = append(r.damage, d) }

// cut reports whether the last damage recorded is the end of the file
// (a truncation or a read error).
func (r *Reader) cut() bool {
	if len(r.damage) == 0 {
		return false
	}
	d := r.damage[len(r.damage)-1]
	return d.Offset+d.Skipped >= r.win.off && (r.win.eof || r.win.err != nil)
}

// next returns the next intact chunk, skipping and recording damage; false
// at the end of the file.
func (r *Reader) next() (*chunk, bool) {
	w := &r.win
	for {
		if r.ctx != nil && r.ctx.Err() != nil {
			return nil, false // a search for an intact chunk stopped
		}
		if !w.fill(chunkHeaderSize) {
			n := len(w.avail())
			if w.err != nil {
				r.addDamage(Damage{Offset: w.off, Chunk: r.chunks, Reason: "read error: " + w.err.Error(), Skipped: int64(n)})
				return nil, false
			}
			if n > 0 {
				r.addDamage(Damage{Offset: w.off, Chunk: r.chunks, Skipped: int64(n),
					Reason: fmt.Sprintf("truncated: the file ends %d bytes into a chunk header", n)})
			}
			return nil, false
		}
		h := w.avail()[:chunkHeaderSize]
		off := w.off
		if string(h[:4]) != chunkSync {
			r.resync(off, fmt.Sprintf("no chunk header (found % x)", h[:4]))
			continue
		}
		length := int(binary.LittleEndian.Uint32(h[8:]))
		if length > MaxChunkSize {
			r.resync(off, fmt.Sprintf("chunk length %d exceeds the maximum of %d", length, MaxChunkSize))
			continue
		}
		if !w.fill(chunkHeaderSize + length) {
			n := len(w.avail())
			if w.err != nil {
				r.addDamage(Damage{Offset: off, Chunk: r.chunks, Reason: "read error: " + w.err.Error(), Skipped: int64(n)})
				r.chunks++
				w.discard(n)
				return nil, false
			}
			// Either the file is cut short or the length is corrupt: a
			// later intact chunk tells which.
			if r.resync(off, fmt.Sprintf("chunk length %d runs past the end of the file", length)) {
				continue
			}
			r.damage[len(r.damage)-1].Reason = fmt.Sprintf("truncated: chunk of %d bytes, the file ends %d bytes into it (the recording was cut short while writing it, or its length is damaged)", chunkHeaderSize+length, n)
			return nil, false
		}
		data := w.avail()[:chunkHeaderSize+length]
		h = data[:chunkHeaderSize] // fill may have moved the data
		want := binary.LittleEndian.Uint32(h[12:])
		crc := crc32.Update(0, castagnoli, h[4:12])
		crc = crc32.Update(crc, castagnoli, data[chunkHeaderSize:])
		if crc != want {
			r.resync(off, fmt.Sprintf("CRC mismatch in chunk of type %d, %d bytes (stored %08x, computed %08x)", h[4], length, want, crc))
			continue
		}
		c := &chunk{typ: h[4], off: off, index: r.chunks, payload: data[chunkHeaderSize:]}
		r.chunks++
		if c.typ == chunkRecords {
			if first, dup := r.repeated(c.payload, off); dup {
				r.addDamage(Damage{Offset: off, Chunk: c.index, Skipped: int64(chunkHeaderSize + length), Lossless: true,
					Reason: fmt.Sprintf("a records chunk that repeats the one at offset %d byte for byte (duplicated, its records skipped)", first)})
				w.discard(chunkHeaderSize + length)
				continue
			}
		}
		w.discard(chunkHeaderSize + length)
		return c, true
	}
}

// repeated reports whether a records chunk with this payload was read
// before, and where. Two chunks of one recording never hold the same bytes
// (their records differ in time or in the delta bases), so a repeat is a
// duplicated region; the key is the payload's length and a 64-bit hash.
func (r *Reader) repeated(payload []byte, off int64) (int64, bool) {
	if r.seen == nil {
		r.seen = map[[2]uint64]int64{}
		r.seed = maphash.MakeSeed()
	}
	k := [2]uint64{uint64(len(payload)), maphash.Bytes(r.seed, payload)}
	if first, ok := r.seen[k]; ok {
		return first, true
	}
	r.seen[k] = off
	return 0, false
}

// resync records damage at off and searches forward for the next intact
// chunk, leaving the window at it (or at the end of the file). It reports
// whether it found one. Every sync it finds is a candidate; a crafted file
// can hold one every few bytes, each with a length reaching far ahead, so
// the CRCs of the candidates' payloads come from one CRC pass over the
// region (rangeCRC): the search is linear in the bytes it reads. It stops
// when r.ctx is done (Run then returns the context's error).
func (r *Reader) resync(off int64, reason string) bool {
	w := &r.win
	d := Damage{Offset: off, Chunk: r.chunks, Reason: reason}
	r.chunks++
	r.rc.reset(w.off)
	r.skip(1)
	found := false
	for n := 0; ; n++ {
		if n%resyncCheck == 0 && r.ctx != nil && r.ctx.Err() != nil {
			break
		}
		data := w.avail()
		i := bytes.Index(data, []byte(chunkSync))
		if i < 0 {
			keep := min(len(data), len(chunkSync)-1)
			r.skip(len(data) - keep)
			if !w.more(len(chunkSync) + minWindow) {
				r.skip(len(w.avail()))
				break
			}
			continue
		}
		r.skip(i)
		if r.candidate() {
			found = true
			break
		}
		r.skip(1)
	}
	d.Skipped = w.off - off
	r.addDamage(d)
	return found
}

// resyncCheck is how many steps of the search go between two looks at
// the context: a step costs at most a few microseconds.
const resyncCheck = 1024

// skip moves the search n bytes on.
func (r *Reader) skip(n int) {
	r.rc.discard(r.win.avail()[:n])
	r.win.discard(n)
}

// candidate reports whether an intact chunk starts at the window.
func (r *Reader) candidate() bool {
	w := &r.win
	if !w.fill(chunkHeaderSize) {
		return false
	}
	h := w.avail()[:chunkHeaderSize]
	length := int(binary.LittleEndian.Uint32(h[8:]))
	if h[5]|h[6]|h[7] != 0 || length > MaxChunkSize || !knownType(h[4]) {
		return false
	}
	if !w.fill(chunkHeaderSize + length) {
		return false
	}
	data := w.avail()
	h = data[:chunkHeaderSize] // fill may have moved the data
	hcrc := crc32.Update(0, castagnoli, h[4:12])
	var crc uint32
	if length <= crcBlock {
		crc = crc32.Update(hcrc, castagnoli, data[chunkHeaderSize:chunkHeaderSize+length])
	} else {
		// The payload's CRC from the region's, F at its start and end:
		// shift(hcrc) ^ (F(end) ^ shift(F(start))), one shift for both.
		c := &r.rc
		from := crc32.Update(c.val, castagnoli, h)
		to := c.at(w.off+int64(chunkHeaderSize+length), data)
		crc = crcShift(hcrc^from, int64(length)) ^ to
	}
	return crc == binary.LittleEndian.Uint32(h[12:])
}

func knownType(t byte) bool {
	return t == chunkHeader || t == chunkRecords || t == chunkTrailer || t&chunkOptional != 0
}

// Run delivers the trace to sink: Begin, the events and facts in recorded
// order, End. A damaged file delivers every intact chunk, then End with a
// trailer whose Stats count the damage, and returns a *DamageError. An
// error from the sink stops the replay and is returned as is (End is not
// called then). ctx is checked between chunks.
func (r *Reader) Run(ctx context.Context, sink event.Sink) error {
	if r.ran {
		return errors.New("tracefile.Reader: Run called twice")
	}
	r.ran = true
	r.ctx = ctx
	h := r.header
	if err := sink.Begin(&h); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var c *chunk
		if r.pending != nil {
			c, r.pending = r.pending, nil
		} else {
			var ok bool
			if c, ok = r.next(); !ok {
				if err := ctx.Err(); err != nil {
					return err // a search for an intact chunk stopped
				}
				break
			}
		}
		if r.trailer != nil && c.typ == chunkRecords {
			// Records after a trailer: that trailer was a stray one (two
			// recordings' bytes spliced, a writer's bug). The records are
			// read; the last trailer is the one that counts.
			r.addDamage(Damage{Offset: r.trailerAt, Chunk: c.index - 1, Lossless: true,
				Reason: fmt.Sprintf("a trailer before the end of the file (records follow it at offset %d: they are read, the last trailer's counts are kept)", c.off)})
			r.trailer = nil
		}
		if r.trailer != nil {
			r.addDamage(Damage{Offset: c.off, Chunk: c.index, Skipped: int64(len(c.payload) + chunkHeaderSize),
				Reason: "a chunk after the trailer (ignored)"})
			continue
		}
		switch {
		case c.typ == chunkRecords:
			if err := r.decodeRecords(c, sink, false, nil); err != nil {
				return err
			}
		case c.typ == chunkTrailer:
			t, err := parseTrailer(c.payload)
			if err != nil {
				r.addDamage(Damage{Offset: c.off, Chunk: c.index, Reason: "bad trailer: " + err.Error()})
			}
			r.trailer, r.trailerAt, r.trailerIx = &t, c.off, c.index
		case c.typ == chunkHeader:
			r.addDamage(Damage{Offset: c.off, Chunk: c.index, Skipped: int64(len(c.payload) + chunkHeaderSize), Lossless: true,
				Reason: "a second trace header (ignored)"})
		case c.typ&chunkOptional != 0:
			// An optional chunk of a newer writer: skipped by design.
		default:
			r.addDamage(Damage{Offset: c.off, Chunk: c.index, Skipped: int64(len(c.payload) + chunkHeaderSize),
				Reason: fmt.Sprintf("unknown chunk type %d (written by a newer iotrace?)", c.typ)})
		}
	}
	if r.cut() {
		// The last damage runs to the end of the file: reading stopped
		// there (unless it was a repeat).
		if d := &r.damage[len(r.damage)-1]; !d.Lossless {
			d.End = true
		}
	} else if r.trailer == nil {
		r.addDamage(Damage{Offset: r.win.off, Chunk: r.chunks, End: true,
			Reason: "truncated: the file ends without a trailer (the recording was cut short)"})
	}
	r.checkCounts()
	t := r.finalTrailer()
	if err := sink.End(&t); err != nil {
		return err
	}
	return r.damageError()
}

// Each event takes at least minEventBytes bytes of a records chunk (a
// template reference, a thread reference and a time), each fact at least
// minFactBytes (position, kind, mask, time): a trailer that counts more
// than the file before it could hold is not believed.
const (
	minEventBytes = 3
	minFactBytes  = 4
)

// checkCounts compares the trailer's counts of events and facts written
// with those read, whether or not damage was met: fewer read, and no
// damaged region to hold them, is damage (chunks removed cleanly); more
// read is damage that lost nothing (chunks repeated with a change, or
// another recording's); counts more than the file could hold are damage
// and not believed.
func (r *Reader) checkCounts() {
	tr := r.trailer
	if tr == nil || !tr.hasCounts {
		return
	}
	d := Damage{Offset: r.trailerAt, Chunk: r.trailerIx}
	if room := uint64(r.trailerAt); tr.events > room/minEventBytes || tr.facts > room/minFactBytes {
		d.Reason = fmt.Sprintf("the trailer says %d events and %d facts were written, more than the %d bytes before it can hold: its counts are not believed",
			tr.events, tr.facts, room)
		tr.hasCounts = false
		r.addDamage(d)
		return
	}
	if tr.events > r.events || tr.facts > r.facts {
		for _, x := range r.damage {
			if !x.Lossless {
				return // that damage holds them (counted in finalTrailer)
			}
		}
		d.Reason = fmt.Sprintf("the trailer says %d events and %d facts were written, %d events and %d facts were read: %d events and %d facts are missing (chunks removed?)",
			tr.events, tr.facts, r.events, r.facts, tr.events-min(tr.events, r.events), tr.facts-min(tr.facts, r.facts))
		r.addDamage(d)
		return
	}
	if tr.events < r.events || tr.facts < r.facts {
		d.Lossless = true
		d.Reason = fmt.Sprintf("%d events and %d facts more than the trailer says were written (%d and %d): chunks repeated with a change, or another recording's?",
			r.events-tr.events, r.facts-tr.facts, tr.events, tr.facts)
		r.addDamage(d)
	}
}

// finalTrailer returns the trailer to deliver: the written one, or one
// made up for a file cut short, with counters for any damage.
func (r *Reader) finalTrailer() event.Trailer {
	var t event.Trailer
	if r.trailer != nil {
		t = r.trailer.t
		t.Stats.Counters = append([]event.Counter(nil), t.Stats.Counters...)
	} else {
		t.End = r.lastEnd
		t.Stats.Add(event.CountLost, "iotrace file cut short: no trailer, the recording's own counts are lost", 1)
	}
	r.dc.cut.AddTo(&t.Stats)
	if len(r.damage) == 0 {
		return t
	}
	var skipped int64
	for _, d := range r.damage {
		skipped += d.Skipped
	}
	if r.noneLost() {
		// Damage, but no event or fact is missing: counted, not as lost.
		t.Stats.Add(event.CountInfo, "iotrace file damaged regions (no event lost)", uint64(len(r.damage)))
		if skipped > 0 {
			t.Stats.Add(event.CountInfo, "iotrace file bytes skipped as damaged (no event lost)", uint64(skipped))
		}
		return t
	}
	t.Stats.Add(event.CountLost, "iotrace file damaged regions", uint64(len(r.damage)))
	if skipped > 0 {
		t.Stats.Add(event.CountLost, "iotrace file bytes skipped as damaged", uint64(skipped))
	}
	if tr := r.trailer; tr != nil && tr.hasCounts {
		if tr.events > r.events {
			t.Stats.Add(event.CountLost, "events in damaged iotrace file chunks", tr.events-r.events)
		}
		if tr.facts > r.facts {
			t.Stats.Add(event.CountLost, "facts in damaged iotrace file chunks", tr.facts-r.facts)
		}
	}
	return t
}

// noneLost reports whether the damage cost no event or fact: every
// region held nothing new, or the trailer counts what was written and
// all of it was read.
func (r *Reader) noneLost() bool {
	if tr := r.trailer; tr != nil && tr.hasCounts {
		return tr.events <= r.events && tr.facts <= r.facts
	}
	for _, d := range r.damage {
		if !d.Lossless {
			return false
		}
	}
	return true
}

func (r *Reader) damageError() error {
	if len(r.damage) == 0 {
		return nil
	}
	e := &DamageError{Path: r.path, Damage: r.damage[0], NoneLost: r.noneLost()}
	if len(r.damage) > 1 {
		e.More = append([]Damage(nil), r.damage[1:]...)
	}
	return e
}

// Damage returns the damaged regions seen so far.
func (r *Reader) Damage() []Damage { return append([]Damage(nil), r.damage...) }

// decodeRecords decodes a records chunk with the decoder of the file's
// format version (see records).
func (r *Reader) decodeRecords(c *chunk, sink event.Sink, factsOnly bool, keep keepFunc) error {
	r.dc.pathMax, r.dc.strMax = event.MaxPathLen(r.header.OS), event.MaxStringLen(r.header.OS)
	r.dc.mAll, r.dc.fAll = mAll, fAll
	switch {
	case r.version < 3:
		r.dc.mAll, r.dc.fAll = mAllV2, fAllV2
	case r.version == 3:
		r.dc.mAll = mAllV3
	}
	if r.version == 1 {
		return r.recordsV1(c, sink, factsOnly, keep)
	}
	return r.records(c, sink, factsOnly, keep)
}

// ScanFacts delivers every fact of the file to fn, in recorded order,
// without decoding events, then rewinds so that Run replays the whole
// trace. It lets a reader apply all facts (such as rundowns written at the
// end of a trace) before resolving any event. It needs a source that is an
// io.Seeker (Open gives one) and must be called before Run. Damage is
// reported by Run, not by ScanFacts.
func (r *Reader) ScanFacts(ctx context.Context, fn func(f *event.Fact) error) error {
	return r.ScanFactsWhere(ctx, nil, fn)
}

// ScanFactsWhere is ScanFacts that makes the strings (Name, Image,
// Detail) only of the facts that keep selects by kind and rundown flag
// (nil selects all): the others reach fn with those fields empty. Their
// strings are checked as thoroughly, so damage is found where ScanFacts
// would find it, but not copied, interned or looked up: a pre-pass that
// needs the names of a few facts and only the keys of the others (such as
// resolve.Tables.Prescan, which names rundowns) saves most of its work.
func (r *Reader) ScanFactsWhere(ctx context.Context, keep func(kind event.FactKind, rundown bool) bool, fn func(f *event.Fact) error) error {
	if r.ran {
		return errors.New("tracefile.Reader: ScanFacts after Run")
	}
	sk, ok := r.src.(io.Seeker)
	if !ok {
		return errors.New("tracefile.Reader: ScanFacts needs a seekable file")
	}
	// Both passes share one intern table: a name reads as the same string
	// in a fact and in the events (consumers may compare by pointer).
	if r.dc.intern == nil {
		r.dc.intern = new(interner)
	}
	scan := &Reader{path: r.path, src: r.src, ctx: ctx}
	scan.dc.intern = r.dc.intern
	if err := r.rewind(sk, scan); err != nil {
		return err
	}
	sink := factFunc(fn)
	var err error
	for err == nil {
		if err = ctx.Err(); err != nil {
			break
		}
		c := scan.pending
		scan.pending = nil
		if c == nil {
			var ok bool
			if c, ok = scan.next(); !ok {
				err = ctx.Err() // a search for an intact chunk stopped
				break
			}
		}
		if c.typ == chunkRecords {
			err = scan.decodeRecords(c, sink, true, keep)
		}
	}
	// Rewind for Run, which reports any damage.
	fresh := &Reader{path: r.path, src: r.src, closer: r.closer}
	fresh.dc.intern = r.dc.intern
	if rerr := r.rewind(sk, fresh); rerr != nil && err == nil {
		err = rerr
	}
	*r = *fresh
	return err
}

func (r *Reader) rewind(sk io.Seeker, into *Reader) error {
	if _, err := sk.Seek(0, io.SeekStart); err != nil {
		return r.errorf("rewind: %w", err)
	}
	into.win.reset(r.src, 0)
	return into.start()
}

type factFunc func(*event.Fact) error

func (factFunc) Begin(*event.Header) error  { return nil }
func (factFunc) Event(*event.Event) error   { return nil }
func (f factFunc) Fact(x *event.Fact) error { return f(x) }
func (factFunc) End(*event.Trailer) error   { return nil }
