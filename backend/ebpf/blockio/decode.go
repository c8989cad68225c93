package blockio

import (
	"math"
	"strconv"
	"sync/atomic"

	"github.com/iotrace/iotrace/event"
)

// Event IDs of the eBPF backend are below 2^53, so that jq, JavaScript
// and Perfetto (IEEE doubles) read them exactly, and grow smoothly (text
// columns stay aligned). The low two bits say the kind of event: 0 a
// system call, 1 a marker, 2 a block I/O. A system call's ID holds its
// per-CPU sequence number and its CPU (the kernel numbers calls per CPU,
// without a shared counter): ((seq << 12) | cpu) << 2. Block I/Os and
// markers are numbered in user space: seq << 2 | kind.
const (
	KindSyscall = 0
	KindMarker  = 1
	KindBlock   = 2
)

// SyscallID turns the ID the BPF program gives a call (CPU in bits 48-62,
// per-CPU sequence in bits 0-47) into the event's ID (see the constants).
func SyscallID(raw uint64) uint64 {
	if raw == 0 {
		return 0
	}
	cpu, seq := (raw>>48)&0xfff, raw&0xffffffffffff
	return (seq<<12|cpu)<<2 | KindSyscall
}

// IDKind returns the kind bits of an event ID of this backend.
func IDKind(id uint64) uint64 { return id & 3 }

// IDBit was the bit of block event IDs before IDs were made to fit
// JavaScript numbers; traces recorded then still have it.
// clear, so the two never collide in one trace.
const IDBit = uint64(1) << 63

// Decoder turns kernel records into block events. It allocates only the
// first time it meets a new comm, rwbs string or file-system device; the
// per-event path does not allocate. The zero value is not usable: build
// one with [NewDecoder].
type Decoder struct {
	// Layout decodes bi_opf.
	Layout OpfLayout
	// Origin is the kernel clock value (ns) of trace time 0.
	Origin int64
	// Stacks makes Event put the record's stack IDs in Event.Stack,
	// packed by RawStack, for the owner of the stacks map to translate.
	Stacks bool

	seq   uint64
	comms map[[16]byte]string
	rwbs  map[uint32]string
	notes map[uint32]string
	buf   []byte
	reqs  requests
}

// NewDecoder returns a decoder for a kernel with opf layout l, with trace
// time 0 at kernel clock value origin.
func NewDecoder(l OpfLayout, origin int64) *Decoder {
	return &Decoder{
		Layout: l,
		Origin: origin,
		comms:  make(map[[16]byte]string),
		rwbs:   make(map[uint32]string),
		notes:  make(map[uint32]string),
	}
}

// maxInterned bounds each string cache; a cache that fills is emptied.
const maxInterned = 4096

// Event fills e from r. The submitter recorded at queue time becomes the
// event's thread; the completing context (often a CPU's idle thread in
// interrupt context) never does. A record whose bio was never seen queued
// gets Pid and Tid 0 with CPU event.NoCPU (an unknown thread, not an idle
// one) and FlagNoStart.
func (d *Decoder) Event(r *Record, e *event.Event) {
	e.Reset()
	d.seq++
	e.ID = d.seq<<2 | KindBlock
	e.Source = event.SourceEBPF
	e.Layer = event.LayerBlock
	e.Op = d.Layout.Op(r.Opf, r.Bytes)
	e.Native = d.rwbsString(r.Opf)

	// Times are unsigned kernel clock values; differences are taken in
	// uint64 and clamped, so a corrupt record cannot make them negative.
	start := r.DoneTS
	switch {
	case r.Flags&RecNoStart == 0 && r.QueueTS != 0:
		start = r.QueueTS
		if r.IssueTS >= r.QueueTS {
			e.Wait = clampNs(r.IssueTS - r.QueueTS)
		}
	case r.IssueTS != 0:
		start = r.IssueTS
	}
	e.Time = int64(start) - d.Origin
	if r.DoneTS > start {
		e.Duration = clampNs(r.DoneTS - start)
	}
	if e.Wait > e.Duration {
		e.Wait = e.Duration
	}

	if r.Flags&RecNoStart != 0 {
		e.CPU = event.NoCPU
		e.Flags |= event.FlagNoStart
	} else {
		e.Pid, e.Tid, e.CPU = r.Pid, r.Tid, r.CPU
		e.Comm = d.comm(&r.Comm)
	}

	maj, min := KernelDev(r.Dev)
	e.Dev = event.Device{Major: maj, Minor: min}
	e.Sector = r.Sector
	e.Offset = int64(r.Sector) * 512
	e.Size = uint64(r.Bytes)
	e.IOFlags = r.Opf
	e.Info = uint32(r.Status)
	e.Code = StatusErrno(r.Status)
	e.Status = event.FromErrno(e.Code)
	if r.Status == 0 {
		e.Bytes = int64(r.Bytes)
	}
	e.Request = r.Bio
	e.Cause = SyscallID(r.Cause)
	if d.Stacks && (r.UStack != -1 || r.KStack != -1) {
		e.Stack = RawStack(r.UStack, r.KStack)
	}
	e.Inode = r.Inode
	if r.Inode != 0 && r.InoDev != r.Dev {
		e.Note = d.note(r.InoDev)
	}

	if r.Flags&RecNoIssue == 0 {
		d.reqs.see(r.Rq, r.IssueTS)
	}

	e.Flags |= d.Layout.Flags(r.Opf)
	if r.Flags&RecPinned != 0 {
		e.Flags |= event.FlagDirect
	}
	if r.Flags&RecKthread != 0 && (e.Op == event.OpBlockWrite || e.Op == event.OpBlockDiscard) {
		e.Flags |= event.FlagWriteback
	}
}

// Merges returns how many bios of the events so far joined a request
// another of them started (StatMerge); safe to call while Event runs.
func (d *Decoder) Merges() uint64 { return d.reqs.merges.Load() }

// requests counts merges from the records themselves: the bios of one
// request share its address and its issue time, which no other request
// issued at that address has, so a bio whose (request, issue time) an
// earlier one had joined that request. A merge of a traced bio with an
// untraced one is not counted (the untraced one has no record). The bios
// of a request complete together, in one walk of its chain (or a few, for
// a request completed in parts), so one slot per request address, 1,024
// of them, is enough: a collision can only miss a merge, never invent
// one. Counted here, not by programs on block_bio_backmerge and
// frontmerge, whose attach and detach cost about 5 ms of every start-up
// and stop (kernel text patching).
type requests struct {
	slot   [1024]struct{ rq, issue uint64 }
	merges atomic.Uint64
}

// see notes a bio of request rq issued at issue (0: never issued, or
// bio-based: not a request).
func (q *requests) see(rq, issue uint64) {
	if rq == 0 || issue == 0 {
		return
	}
	s := &q.slot[(rq*0x9e3779b97f4a7c15)>>54]
	if s.rq == rq && s.issue == issue {
		q.merges.Add(1)
		return
	}
	s.rq, s.issue = rq, issue
}

// InFlight fills e for a bio still in flight when tracing stopped (or
// whose completion was never seen): FlagNoCompletion, no duration.
func (d *Decoder) InFlight(r *Record, e *event.Event) {
	d.Event(r, e)
	e.Time = int64(r.QueueTS) - d.Origin
	e.Duration, e.Wait = 0, 0
	e.Bytes = -1
	e.Status, e.Code, e.Info = event.StatusUnknown, 0, 0
	e.Flags |= event.FlagNoCompletion
}

func (d *Decoder) comm(c *[16]byte) string {
	if s, ok := d.comms[*c]; ok {
		return s
	}
	n := 0
	for n < len(c) && c[n] != 0 {
		n++
	}
	s := string(c[:n])
	if len(d.comms) >= maxInterned {
		clear(d.comms)
	}
	d.comms[*c] = s
	return s
}

func (d *Decoder) rwbsString(opf uint32) string {
	k := d.Layout.rwbsKey(opf)
	if s, ok := d.rwbs[k]; ok {
		return s
	}
	d.buf = d.Layout.RWBS(d.buf[:0], k)
	s := string(d.buf)
	if len(d.rwbs) >= maxInterned {
		clear(d.rwbs)
	}
	d.rwbs[k] = s
	return s
}

// note names the file system device of an inode that lives on another
// device than the bio's (stacked devices, btrfs).
func (d *Decoder) note(dev uint32) string {
	if s, ok := d.notes[dev]; ok {
		return s
	}
	maj, min := KernelDev(dev)
	s := "inode-dev " + strconv.FormatUint(uint64(maj), 10) + ":" + strconv.FormatUint(uint64(min), 10)
	if len(d.notes) >= maxInterned {
		clear(d.notes)
	}
	d.notes[dev] = s
	return s
}

func clampNs(d uint64) int64 {
	if d > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(d)
}

// RawStack packs the stack IDs of a record (IDs in the stacks map, or
// -errno; -1: not asked) into an Event.Stack value with bit 63 set: a
// placeholder that the owner of the stacks map replaces by the trace's
// stack ID before the event goes out (SplitRawStack undoes it). The
// kernel ID takes 31 bits (map IDs are below the map's size, errors small
// negatives).
func RawStack(user, kernel int32) uint64 {
	return 1<<63 | uint64(uint32(kernel)&0x7fffffff)<<32 | uint64(uint32(user))
}

// SplitRawStack returns the stack IDs RawStack packed; ok is false for a
// value RawStack did not make.
func SplitRawStack(s uint64) (user, kernel int32, ok bool) {
	if s>>63 == 0 {
		return 0, 0, false
	}
	return int32(uint32(s)), int32(uint32(s>>32)<<1) >> 1, true
}
