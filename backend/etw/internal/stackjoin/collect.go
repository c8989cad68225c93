package stackjoin

import (
	"context"
	"slices"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
)

// The first pass of a file tells the stacks no event takes apart: those of
// a record in the trace (a record iotrace does not decode) and those of
// none (their event was lost). The kernel logs a stack walk right after
// its event, on the event's processor: a stack's event is looked for
// among the latest records of the walk's processor (recentRecs), then,
// as a record with no thread in its header (a PERFINFO record: a sample,
// a context switch; the stack's thread is in its payload), on any
// processor (noTidLog: such records are logged on another processor at
// times). A record with a thread in its header is not looked for on
// other processors: its thread was running on that processor, not on the
// walk's. Both are filled in the order of each processor's stream, which
// is the same however the file is read (merged by time or not, cached or
// not): they tell the same stacks apart.

// NumRecent is how many of the latest records of its processor's stream
// a stack walk's event is looked for among (a power of 2).
const NumRecent = 32

// recentRecs is the time and thread of the latest records of one
// processor's stream but stack walks.
type recentRecs struct {
	ts    [NumRecent]int64
	tid   [NumRecent]uint32
	next  uint32
	noTid *noTidChunk // the last chunk of the processor's noTidLog
}

// noTidLog is the time of every record of one processor's stream with no
// thread in its header, in chunks (never copied).
type noTidLog struct {
	chunks []*noTidChunk
}

// noTidChunkLen is the length of a noTidLog's chunks.
const noTidChunkLen = 4096

// noTidChunk is times of records of one processor.
type noTidChunk struct {
	n  int
	ts [noTidChunkLen]int64
}

// NoteRecord notes a record other than a stack walk that a file's first
// pass sees: it must see every record once, in the order of its
// processor's stream.
func (s *Joiner) NoteRecord(r *record.Record) {
	c := int(r.CPU)
	if c >= len(s.recent) {
		s.growRecent(c)
	}
	g := &s.recent[c]
	i := g.next % NumRecent
	g.ts[i], g.tid[i] = r.Timestamp, r.ThreadID
	g.next++
	if r.ThreadID == record.NoID {
		if ch := g.noTid; ch != nil && ch.n < noTidChunkLen {
			ch.ts[ch.n] = r.Timestamp
			ch.n++
		} else {
			s.noteNoTid(c, r.Timestamp)
		}
	}
}

// growRecent makes room for processor c.
func (s *Joiner) growRecent(c int) {
	s.recent = append(s.recent, make([]recentRecs, c+1-len(s.recent))...)
	s.noTid = append(s.noTid, make([]noTidLog, c+1-len(s.noTid))...)
}

// noteNoTid logs the time of a record of processor c with no thread in
// its header that begins a chunk.
func (s *Joiner) noteNoTid(c int, ts int64) {
	g, l := &s.recent[c], &s.noTid[c]
	g.noTid = &noTidChunk{n: 1}
	g.noTid.ts[0] = ts
	l.chunks = append(l.chunks, g.noTid)
}

// followsRecord reports whether one of the latest records of processor
// cpu's stream is at ts on thread tid, or at ts with no thread in its
// header.
func (s *Joiner) followsRecord(cpu uint16, ts int64, tid uint32) bool {
	if int(cpu) >= len(s.recent) {
		return false
	}
	g := &s.recent[cpu]
	// The latest first: mostly the one right before the walk.
	for k := uint32(1); k <= NumRecent && k <= g.next; k++ {
		i := (g.next - k) % NumRecent
		if g.ts[i] == ts && (g.tid[i] == tid || g.tid[i] == record.NoID) {
			return true
		}
	}
	return false
}

// markNoTid tells, of the stacks not right after their event
// (followsRecord), those whose event may be a record with no thread in
// its header on another processor: the times asked about, sorted, are
// looked for once in the time of every such record, in
// O((records + stacks) log stacks). A user part alone is not looked for.
// The log of those records is let go.
func (s *Joiner) markNoTid(ctx context.Context) error {
	var ask []int64
	for _, chunk := range s.raw {
		for i := range chunk {
			if r := &chunk[i]; r.lookNoTid() {
				ask = append(ask, r.ts)
			}
		}
	}
	if len(ask) > 0 {
		if err := radixSort(ctx, ask, 8, func(x *int64, d int) byte { return byte((uint64(*x) ^ 1<<63) >> (8 * d)) }); err != nil {
			return err
		}
		ask = slices.Compact(ask)
		found := make([]bool, len(ask))
		lo, hi := ask[0], ask[len(ask)-1]
		for c := range s.noTid {
			for _, ch := range s.noTid[c].chunks {
				if err := ctx.Err(); err != nil {
					return err
				}
				for _, ts := range ch.ts[:ch.n] {
					if ts < lo || ts > hi {
						continue
					}
					if j, ok := slices.BinarySearch(ask, ts); ok {
						found[j] = true
					}
				}
			}
		}
		for _, chunk := range s.raw {
			for i := range chunk {
				if r := &chunk[i]; r.lookNoTid() {
					j, _ := slices.BinarySearch(ask, r.ts)
					r.seen = found[j]
				}
			}
		}
	}
	s.recent, s.noTid = nil, nil
	return nil
}

// Stack keeps a stack record of a file's first pass, decoded (sw), for
// Assemble.
//
// The kernel walks the user part of a stack when the thread returns to
// user mode: a kernel event's stack comes as a kernel part at the event
// and a user part at the end of the system call, logged with the
// timestamp of one event of the call and shared by every kernel event of
// the thread since its last return to user mode, as TraceEvent assembles
// them. The user part may come after the event is complete (a disk I/O
// completes before its issuer returns to user mode): collecting them in
// the first pass gives each event its whole stack.
func (s *Joiner) Stack(r *record.Record, sw *kernel.StackWalk) {
	raw := rawStack{recTS: r.Timestamp, ts: sw.StackTime, pid: sw.Pid, tid: sw.Tid, cpu: r.CPU,
		seen: s.followsRecord(r.CPU, sw.StackTime, sw.Tid)}
	switch {
	case sw.Kind == kernel.KindStack:
		ptr := sw.Frames.PtrSize()
		fr := s.keepFrames(sw.Frames)
		f := s.frames(fr)
		i := 0
		for i < len(f) && KernelAddr(f[i], ptr) {
			i++
		}
		raw.off, raw.nk, raw.n = fr.off, uint32(i), fr.n
	case sw.Opcode == kernel.OpcodeStackKeyKernel:
		raw.key, raw.ref = sw.StackKey, refKernel
	default:
		raw.key, raw.ref = sw.StackKey, refUser
	}
	s.appendRaw(raw)
}

// appendRaw keeps a collected stack record.
func (s *Joiner) appendRaw(raw rawStack) {
	n := len(s.raw)
	if n == 0 || len(s.raw[n-1]) == cap(s.raw[n-1]) {
		s.raw = append(s.raw, make([]rawStack, 0, rawChunk))
		n++
	}
	s.raw[n-1] = append(s.raw[n-1], raw)
	s.nraw++
}

// rawChunk is the size of the chunks of collected stack records.
const rawChunk = 4096

// rawStack is a stack record as the first pass takes it, before the
// merge by time (Assemble orders them): n frames kept at off (keep), the
// first nk of them kernel frames, or a reference to a cache key.
type rawStack struct {
	recTS, ts int64 // the record's time; the event's
	key       uint64
	off, nk   uint32
	n, tid    uint32
	pid       uint32
	cpu       uint16 // the processor the walk ran on (the event's)
	ref       uint8
	seen      bool // its event is in the trace (followsRecord; loggedNoTid, but for a user part alone)
}

// lookNoTid reports whether r's event is to be looked for among the
// records with no thread in their header: a stack with a kernel part not
// right after a record of its time and thread.
func (r *rawStack) lookNoTid() bool {
	return !r.seen && (r.ref == refKernel || r.ref == refNone && r.nk > 0)
}

// Kinds of key references of a rawStack.
const (
	refNone uint8 = iota
	refKernel
	refUser
	refThreadEnd // not a stack: the Thread End of pid, tid at recTS
)

// ThreadEnd keeps a Thread End of a file's first pass (in time order) for
// Assemble: the kernel parts its thread's stacks wait with get no user
// part.
func (s *Joiner) ThreadEnd(ts int64, pid, tid uint32) {
	s.appendRaw(rawStack{recTS: ts, ts: ts, pid: pid, tid: tid, ref: refThreadEnd})
}

// arenaChunk is the size of the arena's chunks, in frames: the arena
// grows by chunks, never copied (a stack has at most a few hundred
// frames; a record's payload at most 16,384).
const arenaChunk = 1 << 16

// keepFrames copies the frames of a record into the arena of collected
// frames, decoded straight into it. A part's off is the chunk (high 16
// bits) and the offset in it (low 16 bits).
func (s *Joiner) keepFrames(fr kernel.Frames) part {
	n := len(s.arena)
	k := fr.Len()
	if n == 0 || len(s.arena[n-1])+k > cap(s.arena[n-1]) {
		s.arena = append(s.arena, make([]uint64, 0, max(arenaChunk, k)))
		n++
	}
	c := &s.arena[n-1]
	off := len(*c)
	*c = fr.AppendTo(*c)
	return part{off: uint32(n-1)<<16 | uint32(off), n: uint32(k), ok: true}
}

// frames returns the frames of a part that holds frames.
func (s *Joiner) frames(pt part) []uint64 {
	c := s.arena[pt.off>>16]
	off := pt.off & 0xffff
	return c[off : off+pt.n : off+pt.n]
}
