package ebpf

import (
	"fmt"
	"sort"

	"github.com/iotrace/iotrace/backend/ebpf/blockio"
	"github.com/iotrace/iotrace/event"
)

// Page-cache provenance: where each read's bytes came from.
//
// The block programs report every bio that fills page-cache pages of a
// file from disk when it is queued and when it completes, and the syscall
// programs report pages of such files leaving the cache (pcRec,
// bpf/pagecache.h), all through the syscall ring buffer, which is read in
// the order its records were reserved: a read's record comes after the
// completion of every fill whose pages it returned. pageCache keeps the
// byte ranges those fills brought in, per file, and classifies each read
// by the ranges it returned (classify).

// StatWitnessedFills counts the page-cache fills whose completion no
// program saw, timed from the block tracer's witness when a read returned
// their pages (info).
const StatWitnessedFills = "page-cache fills no program saw complete, timed from the kernel's trace buffer for a read of their pages"

// pcRec is struct pc_rec.
type pcRec struct {
	Kind, Flags uint16
	Time        uint64
	Bio         uint64
	Ino, Off    uint64
	Cause       uint64
	Bytes       uint32
	Dev         uint32
	PidStatus   uint32
	Bdev        uint32 // PC_QUEUE: the bio's block device
	Sector      uint64 // PC_QUEUE: its first sector on Bdev
}

// pc_rec kinds and flags (bpf/pagecache.h).
const (
	pcQueue = 1
	pcDone  = 2
	pcEvict = 3

	pcfSplit     = 1 << 0
	pcfNonContig = 1 << 1
	pcfUntraced  = 1 << 2
	pcfUnseen    = 1 << 3

	pcRecSize = 72
)

func (r *pcRec) decode(b []byte) error {
	if len(b) < pcRecSize {
		return fmt.Errorf("page-cache record of %d bytes, want %d", len(b), pcRecSize)
	}
	r.Kind, r.Flags = uint16(b[1]), le.Uint16(b[2:])
	r.Time = le.Uint64(b[8:])
	r.Bio = le.Uint64(b[16:])
	r.Ino = le.Uint64(b[24:])
	r.Off = le.Uint64(b[32:])
	r.Cause = le.Uint64(b[40:])
	r.Bytes = le.Uint32(b[48:])
	r.Dev = le.Uint32(b[52:])
	r.PidStatus = le.Uint32(b[56:])
	r.Bdev = le.Uint32(b[60:])
	r.Sector = le.Uint64(b[64:])
	return nil
}

// pcFile identifies a file: its file system's kernel dev_t and inode.
type pcFile struct {
	dev uint32
	ino uint64
}

// fill is one bio's fill of a file range.
type fill struct {
	bio    uint64
	pid    uint32 // submitter's tgid
	cause  uint64 // raw ID of the system call that queued it, 0 when none
	queued uint64 // time of its queue record
	// where the bio lies (its last queue record: a split's parent keeps
	// the remainder), for the witness (FillDone)
	bdev   uint32
	bytes  uint32
	sector uint64
	// done is the completion time, 0 while in flight; with unseen, only
	// a bound: it completed by then.
	done      uint64
	unseen    bool
	failed    bool
	noncontig bool
	untraced  bool
	// witnessed: done came from the block tracer's witness (FillDone)
	// before the completion record, which no program wrote in time.
	witnessed bool
}

// FillDone gives the completion time of a page-cache fill whose
// completion record has not come; ok is false when not known
// (blockio.Tracer.FillDone).
type FillDone func(q blockio.FillQuery) (done uint64, ok bool)

// piece is the part [off, end) of a file that fill f brought in.
type piece struct {
	off, end uint64
	f        *fill
}

// pcFileState is what the trace knows of one file's page cache: the
// pieces brought in during the trace, sorted and not overlapping.
// Bytes outside them were in memory before.
type pcFileState struct {
	pieces []piece
	// forgotten is set once pieces were dropped for room: bytes outside
	// the pieces are then not known to be cached.
	forgotten bool
}

// maxPieces bounds the pieces kept over every file; beyond it the files
// with the most pieces are forgotten (their reads then count as not
// classified where nothing is known, never as cached).
const maxPieces = 1 << 20

// pageCache tracks page-cache fills and classifies reads.
type pageCache struct {
	files    map[pcFile]*pcFileState
	inflight map[uint64]*fill // by bio, until PC_DONE
	npieces  int
	// fillDone, when set, times a fill whose completion record is late
	// (classify).
	fillDone FillDone

	// Counters (Stats).
	forgotten, unknownBytes, pendingBytes, noncontigBytes uint64
	orphanDone, decodeErrs, dropped                       uint64
	witnessedFills                                        uint64
}

// maxInflight bounds the fills awaiting their completion record (the
// kernel tracks at most 65,536 bios in flight).
const maxInflight = 1 << 18

func newPageCache() *pageCache {
	return &pageCache{files: make(map[pcFile]*pcFileState), inflight: make(map[uint64]*fill)}
}

// record applies one pc_rec.
func (pc *pageCache) record(r *pcRec) {
	switch r.Kind {
	case pcQueue:
		f := pc.inflight[r.Bio]
		if f == nil || r.Flags&pcfSplit == 0 {
			if len(pc.inflight) >= maxInflight {
				// Completions lost (ring buffer full): those fills stay
				// in flight for ever, their bytes not classified.
				pc.dropped += uint64(len(pc.inflight))
				clear(pc.inflight)
			}
			f = &fill{bio: r.Bio, pid: r.PidStatus, cause: r.Cause, queued: r.Time}
			pc.inflight[r.Bio] = f
		}
		f.noncontig = r.Flags&pcfNonContig != 0
		f.untraced = r.Flags&pcfUntraced != 0
		f.bdev, f.bytes, f.sector = r.Bdev, r.Bytes, r.Sector
		pc.put(pcFile{r.Dev, r.Ino}, r.Off, r.Off+uint64(r.Bytes), f)
	case pcDone:
		f := pc.inflight[r.Bio]
		if f == nil {
			pc.orphanDone++ // its queue record was lost
			return
		}
		delete(pc.inflight, r.Bio)
		if f.witnessed && r.Flags&pcfUnseen != 0 {
			return // the witness's time is the completion's; this one a bound
		}
		f.done = r.Time
		f.unseen = r.Flags&pcfUnseen != 0
		f.failed = !f.unseen && r.PidStatus != 0
	case pcEvict:
		pc.cut(pcFile{r.Dev, r.Ino}, r.Off, r.Off+uint64(r.Bytes))
	}
}

// put records that f brings [off, end) of file k in, replacing what was
// known of that range.
func (pc *pageCache) put(k pcFile, off, end uint64, f *fill) {
	if end <= off {
		return
	}
	fs := pc.files[k]
	if fs == nil {
		fs = &pcFileState{}
		pc.files[k] = fs
	}
	pc.cutIn(fs, off, end)
	i := sort.Search(len(fs.pieces), func(i int) bool { return fs.pieces[i].off >= end })
	fs.pieces = append(fs.pieces, piece{})
	copy(fs.pieces[i+1:], fs.pieces[i:])
	fs.pieces[i] = piece{off: off, end: end, f: f}
	pc.npieces++
	if pc.npieces > maxPieces {
		pc.shrink()
	}
}

// cut forgets what is known of [off, end) of file k (its pages left the
// cache: what comes back is brought in anew).
func (pc *pageCache) cut(k pcFile, off, end uint64) {
	if fs := pc.files[k]; fs != nil {
		pc.cutIn(fs, off, end)
		if len(fs.pieces) == 0 && !fs.forgotten {
			delete(pc.files, k)
		}
	}
}

func (pc *pageCache) cutIn(fs *pcFileState, off, end uint64) {
	// The first piece that ends after off.
	i := sort.Search(len(fs.pieces), func(i int) bool { return fs.pieces[i].end > off })
	j := i
	var keep []piece
	for ; j < len(fs.pieces) && fs.pieces[j].off < end; j++ {
		p := fs.pieces[j]
		if p.off < off {
			keep = append(keep, piece{p.off, off, p.f})
		}
		if p.end > end {
			keep = append(keep, piece{end, p.end, p.f})
		}
	}
	if j == i {
		return
	}
	pc.npieces += len(keep) - (j - i)
	fs.pieces = append(fs.pieces[:i], append(keep, fs.pieces[j:]...)...)
}

// shrink forgets the files with the most pieces until half the budget is
// free.
func (pc *pageCache) shrink() {
	type fp struct {
		k pcFile
		n int
	}
	var all []fp
	for k, fs := range pc.files {
		all = append(all, fp{k, len(fs.pieces)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	for _, x := range all {
		if pc.npieces <= maxPieces/2 {
			break
		}
		fs := pc.files[x.k]
		pc.npieces -= len(fs.pieces)
		fs.pieces, fs.forgotten = nil, true
		pc.forgotten++
	}
}

// readProvenance is where a read's bytes came from (see event.Event's
// Read fields); unknown is what could not be classified.
type readProvenance struct {
	cached, ahead, disk, waited, unknown uint64
	aheadFrom                            uint64 // raw syscall ID
}

// classify says where bytes [off, off+n) of file k, returned by the read
// id (raw syscall ID) of process pid that ran from t0 to t1 (boot ns),
// came from, and marks the pieces this process has now read as cached
// for its later reads. A fill whose completion record has not come
// completed before t1 all the same (the read returned its pages): its
// time is asked of fillDone.
func (pc *pageCache) classify(k pcFile, off, n uint64, pid uint32, id, t0, t1 uint64) readProvenance {
	var rp readProvenance
	end := off + n
	fs := pc.files[k]
	if fs == nil {
		rp.cached = n
		return rp
	}
	gap := func(l uint64) {
		if fs.forgotten {
			rp.unknown += l
		} else {
			rp.cached += l
		}
	}
	aheadBy := map[uint64]uint64{}
	var consumed [][2]uint64
	pos := off
	i := sort.Search(len(fs.pieces), func(i int) bool { return fs.pieces[i].end > off })
	for ; i < len(fs.pieces) && fs.pieces[i].off < end; i++ {
		p := fs.pieces[i]
		lo, hi := max(p.off, off), min(p.end, end)
		if lo > pos {
			gap(lo - pos)
		}
		pos = hi
		l := hi - lo
		f := p.f
		mine := f.pid == pid && !f.untraced
		if f.done == 0 && !f.noncontig && (f.cause != id || id == 0) && pc.fillDone != nil {
			q := blockio.FillQuery{Bio: f.bio, Ino: k.ino, InoDev: k.dev, Dev: f.bdev, Sector: f.sector, Bytes: f.bytes, After: f.queued, Before: t1}
			if done, ok := pc.fillDone(q); ok {
				f.done, f.witnessed = done, true
				pc.witnessedFills++
			}
		}
		switch {
		case f.noncontig:
			rp.unknown += l
			pc.noncontigBytes += l
		case f.failed:
			rp.unknown += l
		case f.cause == id && id != 0:
			// Its own I/O, whenever the completion's record comes.
			rp.disk += l
			consumed = append(consumed, [2]uint64{lo, hi})
		case f.done == 0:
			// Returned, yet its completion never came before the read's
			// record: the completion was not seen.
			rp.unknown += l
			pc.pendingBytes += l
		case f.unseen && f.done > t0:
			rp.unknown += l // completed by done: before or during the read, not known which
		case f.done > t0:
			rp.waited += l
			if mine {
				consumed = append(consumed, [2]uint64{lo, hi})
			}
		case mine:
			rp.ahead += l
			aheadBy[f.cause] += l
			consumed = append(consumed, [2]uint64{lo, hi})
		default:
			rp.cached += l // another process brought it in
		}
	}
	if end > pos {
		gap(end - pos)
	}
	var best uint64
	for c, l := range aheadBy {
		if l > best || (l == best && c < rp.aheadFrom) {
			best, rp.aheadFrom = l, c
		}
	}
	// This process has read them: they are in memory for its next reads.
	for _, c := range consumed {
		pc.cutIn(fs, c[0], c[1])
	}
	pc.unknownBytes += rp.unknown
	return rp
}

// stats adds the page-cache counters to s.
func (pc *pageCache) stats(s *event.Stats) {
	if pc.pendingBytes != 0 {
		s.Add(event.CountUnresolved, "read bytes not classified: the completion of the disk read that brought them in was not seen", pc.pendingBytes)
	}
	if pc.witnessedFills != 0 {
		s.Add(event.CountInfo, StatWitnessedFills, pc.witnessedFills)
	}
	if pc.noncontigBytes != 0 {
		s.Add(event.CountUnresolved, "read bytes not classified: their disk read was not one contiguous range of the file", pc.noncontigBytes)
	}
	if pc.forgotten != 0 {
		s.Add(event.CountUnresolved, "files whose page-cache fills were forgotten for room (their reads are partly not classified)", pc.forgotten)
	}
	if pc.orphanDone != 0 {
		s.Add(event.CountUnpaired, "page-cache fill completions without their queue record", pc.orphanDone)
	}
	if pc.dropped != 0 {
		s.Add(event.CountUnpaired, "page-cache fills whose completion record never came (dropped; their bytes not classified)", pc.dropped)
	}
	if pc.decodeErrs != 0 {
		s.Add(event.CountLost, "page-cache records malformed", pc.decodeErrs)
	}
}

// readProvenance sets the Read fields of e, a read system call that
// returned data (r its record), and its cache flags: FlagCacheHit when
// every byte was already in memory, FlagWaitedIO when some waited for
// disk I/O in flight. A read that cannot be classified (not a regular
// file, a file system whose pages do not come from a block device the
// trace sees) keeps them 0, counted by reason.
func (t *tracker) readProvenance(e *event.Event, r *syscallRec) {
	if !t.block || e.Status != event.StatusOK || r.Ret <= 0 || r.SFlags&sfCause == 0 {
		return
	}
	n := uint64(r.Ret)
	switch {
	case r.SFlags&sfHaveFile == 0 || r.SFlags&sfReg == 0:
		t.pcUnclassified[pcNotRegular]++
		return
	case e.Flags&event.FlagDirect != 0 && r.SFlags&sfBdevFS != 0:
		e.ReadDisk = min(r.BioBytes, n)
		if e.ReadDisk < n {
			t.pc.unknownBytes += n - e.ReadDisk
		}
	case r.SFlags&sfMemFS != 0:
		e.ReadCached = n
	case r.SFlags&sfBdevFS == 0:
		t.pcUnclassified[pcNoBlockDev]++
		return
	case e.Offset < 0:
		t.pcUnclassified[pcNoOffset]++
		return
	default:
		rp := t.pc.classify(pcFile{r.Dev, r.Ino}, uint64(e.Offset), n, r.Pid, r.ID, r.Time, r.Time+r.Dur)
		e.ReadCached, e.ReadAhead, e.ReadDisk, e.ReadWaited = rp.cached, rp.ahead, rp.disk, rp.waited
		e.ReadAheadFrom = blockio.SyscallID(rp.aheadFrom)
	}
	if e.ReadCached == n {
		e.Flags |= event.FlagCacheHit
	}
	if e.ReadWaited > 0 {
		e.Flags |= event.FlagWaitedIO
	}
}

// Why a read was not classified (tracker.pcUnclassified).
const (
	pcNotRegular = iota
	pcNoBlockDev
	pcNoOffset
	numPCReasons
)

var pcReasons = [numPCReasons]string{
	pcNotRegular: "reads not classified by page-cache provenance: not a regular file (pipe, socket, device, /proc)",
	pcNoBlockDev: "reads not classified by page-cache provenance: a file system without a block device (overlay, network, FUSE): its pages come from elsewhere",
	pcNoOffset:   "reads not classified by page-cache provenance: file offset unknown",
}

// pcStats adds the provenance counters to s.
func (t *tracker) pcStats(s *event.Stats) {
	if !t.block {
		return
	}
	for i, n := range t.pcUnclassified {
		if n != 0 {
			s.Add(event.CountInfo, pcReasons[i], n)
		}
	}
	t.pc.stats(s)
}
