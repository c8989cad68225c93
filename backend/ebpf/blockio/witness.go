package blockio

import (
	"fmt"

	"github.com/iotrace/iotrace/backend/ebpf/ftrace"
	"github.com/iotrace/iotrace/event"
)

// The witness: the kernel's own trace buffer (a tracefs instance recording
// block_rq_complete and block_bio_complete) keeps the completions no BPF
// program saw (docs/block.md, "Completions the kernel does not deliver").
// A bio found in the in-flight map without its completion is looked up
// there by disk, sector, size, direction and time. This file is the pure
// part: decoding the instance's records and the lookup; witness_linux.go
// runs the instance.

// WitnessEvents are the events the witness records.
var WitnessEvents = []string{"block/block_rq_complete", "block/block_bio_complete"}

// DefaultWitnessKeep is how many completions the witness remembers: a
// lookup reaches back this many completions of the whole system.
const DefaultWitnessKeep = 1 << 17

// Stats counter names of the witness.
const (
	// StatWitnessed counts bios whose completion no program saw and
	// whose completion time was taken from the kernel's trace buffer
	// (flagged event.FlagFtraceCompletion).
	StatWitnessed = "block completions not seen by the programs, taken from the kernel's trace buffer"
	// StatWitnessLost counts the completions the witness's own buffer
	// lost (overwritten before read): bios completing then cannot be
	// looked up.
	StatWitnessLost = "block completion witness: kernel trace buffer events lost"
	// StatWitnessSeenDropped counts completions the programs saw whose
	// witness records could not be set aside (too many waited for a
	// read): a bio no program saw complete could take one of those.
	StatWitnessSeenDropped = "block completion witness: completions the programs saw, not set aside (backlog full)"
	// StatWitnessMalformed counts pages or records of the instance that
	// did not decode.
	StatWitnessMalformed = "block completion witness: malformed trace pages"
)

// Why a bio's completion was not found in the witness (StatUnseen and
// StatInFlight say how many were not; these say why).
var witnessMissNames = [...]string{
	missNoRecord: "block completions not seen, nor in the kernel's trace buffer",
	missLoss:     "block completions not seen, the kernel's trace buffer lost events meanwhile",
	missOld:      "block completions not seen, queued before the oldest completion the witness keeps",
	missRemapped: "block completions not seen, of bios a stacking driver moved (not looked up)",
}

type witnessMiss uint8

const (
	missNone witnessMiss = iota
	missNoRecord
	missLoss
	missOld
	missRemapped
	numMisses
)

// witnessRec is one completion as the kernel's trace buffer has it.
type witnessRec struct {
	ts     uint64 // trace clock (the tracer's clock), ns
	sector uint64 // first sector on the disk
	nr     uint32 // sectors completed
	dev    uint32 // the disk (kernel dev_t)
	errno  int32  // negative errno, 0 for success
	op     byte   // operation letter of rwbs: R W D F N
	used   bool   // taken by a bio already
}

// witnessFormat reads one event's records (block_rq_complete and
// block_bio_complete have the same fields).
type witnessFormat struct {
	dev, sector, nr, errno, rwbs ftrace.Field
}

// newWitnessFormat checks that an event's format has the fields the
// witness reads.
func newWitnessFormat(f *ftrace.Format) (witnessFormat, error) {
	var w witnessFormat
	for _, x := range []struct {
		name string
		dst  *ftrace.Field
		ok   func(ftrace.Field) bool
	}{
		{"dev", &w.dev, func(fd ftrace.Field) bool { return fd.Size == 4 }},
		{"sector", &w.sector, func(fd ftrace.Field) bool { return fd.Size == 8 }},
		{"nr_sector", &w.nr, func(fd ftrace.Field) bool { return fd.Size == 4 }},
		{"error", &w.errno, func(fd ftrace.Field) bool { return fd.Size == 4 }},
		{"rwbs", &w.rwbs, func(fd ftrace.Field) bool { return fd.Size >= 1 }},
	} {
		fd, ok := f.Field(x.name)
		if !ok || !x.ok(fd) {
			return w, fmt.Errorf("event %s: field %s missing or of another size (%+v)", f.Name, x.name, fd)
		}
		*x.dst = fd
	}
	return w, nil
}

// decode reads a record; ok is false when it is too short.
func (w *witnessFormat) decode(ts uint64, rec []byte) (witnessRec, bool) {
	dev, ok1 := w.dev.Uint(rec)
	sector, ok2 := w.sector.Uint(rec)
	nr, ok3 := w.nr.Uint(rec)
	errno, ok4 := w.errno.Int(rec)
	rwbs := w.rwbs.Bytes(rec)
	if !ok1 || !ok2 || !ok3 || !ok4 || rwbs == nil {
		return witnessRec{}, false
	}
	return witnessRec{ts: ts, sector: sector, nr: uint32(nr), dev: uint32(dev), errno: int32(errno), op: opLetter(rwbs)}, true
}

// opLetter returns the operation letter of an rwbs string (R W D F N),
// past a leading F that says a preflush (FWS: a write).
func opLetter(rwbs []byte) byte {
	if len(rwbs) == 0 {
		return 0
	}
	if rwbs[0] == 'F' && len(rwbs) > 1 {
		switch rwbs[1] {
		case 'W', 'D', 'R', 'F', 'N':
			return rwbs[1]
		}
	}
	return rwbs[0]
}

// witnessLog remembers the last completions the witness read (keep of
// them), and when its buffer last lost some. Its ring and index grow as
// completions come, up to keep: allocating them whole (6.7 MiB at
// DefaultWitnessKeep) took 3-44 ms at start-up on a loaded 2-CPU machine,
// and a short trace keeps a few.
type witnessLog struct {
	formats map[uint16]*witnessFormat
	keep    int
	// ring holds the completions kept: it grows until it holds keep,
	// then next wraps (full) and each completion replaces the oldest.
	ring  []witnessRec
	next  int
	full  bool
	index sectorIndex
	// lossAt is the time of the latest page read after a loss: the lost
	// completions came before it.
	lossAt uint64
	// oldest is the time of the oldest completion overwritten in ring.
	oldest    uint64
	malformed uint64
	// pending are completions the programs saw, waiting for the log to
	// have read past them (settle); seenDropped counts those that found
	// it full (their witness records stay open to an unseen bio).
	pending     []seenRec
	seenDropped uint64
}

// The completions the programs saw. Two bios of one disk and direction
// ending at one sector can be in flight at once (every empty preflush
// ends at its disk's sector 0; overlapping direct I/O), and the witness
// search matches by disk, direction, end sector and time: a bio no
// program saw complete must not take the completion of one they did. So
// the witness record of each completion the programs saw is taken for
// it. Its record reaches user space before the witness's (Run reads the
// ring, then drains the instance), so it waits in pending until a read
// of the instance that began after its time (settle).

// seenRec is a completion a program saw: its bio (q's time bounds are
// unused) and the program's time.
type seenRec struct {
	q  witnessQuery
	ts uint64
}

const (
	// seenSlack bounds how long before a program's time the witness's
	// probe, which runs first on the same CPU, recorded that completion.
	seenSlack = 1_000_000 // ns
	// maxSeenPending bounds the completions waiting for a read.
	maxSeenPending = 1 << 16
)

// saw notes a completion the programs saw.
func (l *witnessLog) saw(s seenRec) {
	if len(l.pending) >= maxSeenPending {
		l.seenDropped++
		return
	}
	l.pending = append(l.pending, s)
}

// settle takes the witness records of the pending completions older than
// readAt, the time a read of the instance began: each has been read by
// then (if the instance kept it).
func (l *witnessLog) settle(readAt uint64) {
	keep := l.pending[:0]
	for _, s := range l.pending {
		if s.ts >= readAt {
			keep = append(keep, s)
			continue
		}
		l.takeSeen(s)
	}
	clear(l.pending[len(keep):])
	l.pending = keep
}

// takeSeen takes the witness record of s: the latest of its disk and
// direction that ends s's bio at most seenSlack before s's time (taken
// already when another bio of the same request came first).
func (l *witnessLog) takeSeen(s seenRec) {
	at, ok := s.q.last()
	if !ok {
		return
	}
	best := -1
	l.index.each(s.q.dev, s.q.op, at, func(i int32) {
		r := &l.ring[i]
		if r.ts > s.ts || s.ts-r.ts > seenSlack || !r.ends(&s.q) {
			return
		}
		if best < 0 || r.ts > l.ring[best].ts {
			best = int(i)
		}
	})
	if best >= 0 {
		l.ring[best].used = true
	}
}

func newWitnessLog(keep int) *witnessLog {
	if keep <= 0 {
		keep = DefaultWitnessKeep
	}
	return &witnessLog{formats: map[uint16]*witnessFormat{}, keep: keep, index: newSectorIndex()}
}

// witnessGrowFrom is the ring's first allocation, in completions.
const witnessGrowFrom = 1024

// slot returns the slot the next completion goes to, growing the ring
// (and the index) while it holds fewer than keep.
func (l *witnessLog) slot() int {
	if l.next < len(l.ring) {
		return l.next
	}
	if len(l.ring) == cap(l.ring) {
		grown := make([]witnessRec, len(l.ring), min(max(2*cap(l.ring), witnessGrowFrom), l.keep))
		copy(grown, l.ring)
		l.ring = grown
	}
	l.ring = l.ring[:len(l.ring)+1]
	l.index.grow(l.ring)
	return l.next
}

// addFormat registers an event the instance records.
func (l *witnessLog) addFormat(f *ftrace.Format) error {
	w, err := newWitnessFormat(f)
	if err != nil {
		return err
	}
	l.formats[f.ID] = &w
	return nil
}

// add decodes one record of the instance (common_type first).
func (l *witnessLog) add(ts uint64, rec []byte) {
	if len(rec) < 2 {
		l.malformed++
		return
	}
	w := l.formats[le16(rec)]
	if w == nil {
		return // another event
	}
	r, ok := w.decode(ts, rec)
	if !ok {
		l.malformed++
		return
	}
	i := l.slot()
	if l.full {
		l.oldest = max(l.oldest, l.ring[i].ts)
		l.index.remove(int32(i), &l.ring[i])
	}
	l.ring[i] = r
	l.index.add(int32(i), &l.ring[i])
	if l.next++; l.next == l.keep {
		l.next, l.full = 0, true
	}
}

// lost notes that the buffer lost completions before time ts.
func (l *witnessLog) lost(ts uint64) { l.lossAt = max(l.lossAt, ts) }

// witnessQuery is a bio whose completion no program saw.
type witnessQuery struct {
	dev    uint32 // its disk (kernel dev_t)
	sector uint64 // its first sector on that disk
	bytes  uint32
	op     byte   // opLetter of its rwbs
	after  uint64 // queued then: its completion came later
	before uint64 // its loss was found then: its completion came earlier
}

// last returns the sector a completion must cover to end q: its last, or
// its own for an empty bio (a preflush); false for a bio past the last
// sector (damage).
func (q *witnessQuery) last() (uint64, bool) {
	if q.bytes == 0 {
		return q.sector, true
	}
	end := q.sector + uint64(q.bytes>>9)
	return end - 1, end != 0
}

// ends reports whether r is a completion of q's disk and direction that
// covers q's last sector (for an empty q, an empty completion at its
// sector).
func (r *witnessRec) ends(q *witnessQuery) bool {
	if r.dev != q.dev || r.op != q.op {
		return false
	}
	if q.bytes == 0 {
		return r.nr == 0 && r.sector == q.sector
	}
	end := q.sector + uint64(q.bytes>>9)
	return r.sector < end && r.sector+uint64(r.nr) >= end
}

// find returns the earliest completion of q's disk and direction in
// (after, before) that ends q: it covers q's last sector (q's first, for
// an empty bio, a preflush). The record is taken: no other bio gets it.
func (l *witnessLog) find(q witnessQuery) (witnessRec, witnessMiss) {
	if q.after != 0 && q.after < l.oldest {
		return witnessRec{}, missOld
	}
	at, ok := q.last()
	if !ok {
		return witnessRec{}, missNoRecord
	}
	best := -1
	l.index.each(q.dev, q.op, at, func(i int32) {
		r := &l.ring[i]
		if r.used || r.ts <= q.after || r.ts >= q.before || !r.ends(&q) {
			return
		}
		if best < 0 || r.ts < l.ring[best].ts {
			best = int(i)
		}
	})
	if best >= 0 {
		l.ring[best].used = true
		return l.ring[best], missNone
	}
	// The completion may have been among those lost.
	if l.lossAt > q.after {
		return witnessRec{}, missLoss
	}
	return witnessRec{}, missNoRecord
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// Witnessed fills e for a bio whose completion no program saw, with the
// completion the kernel's trace buffer kept: its queue to that time,
// flagged event.FlagFtraceCompletion. Wait is unknown (0): the issue was
// not seen either.
func (d *Decoder) Witnessed(r *Record, w witnessRec, e *event.Event) {
	d.Event(r, e)
	e.Time = int64(r.QueueTS) - d.Origin
	e.Wait = 0
	e.Duration = 0
	if w.ts > r.QueueTS {
		e.Duration = clampNs(w.ts - r.QueueTS)
	}
	e.Info = 0
	e.Code = 0
	if w.errno < 0 && w.errno > -4096 {
		e.Code = uint32(-w.errno)
	}
	e.Status = event.FromErrno(e.Code)
	e.Bytes = -1
	if e.Code == 0 {
		e.Bytes = int64(r.Bytes)
	}
	e.Flags |= event.FlagFtraceCompletion
}
