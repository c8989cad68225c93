package blockio

import (
	"encoding/binary"
	"fmt"
)

// RecordSize is the size in bytes of one block record (struct block_rec in
// bpf/blockio.h).
const RecordSize = 128

// Record flags (enum blk_rec_flags in bpf/blockio.h).
const (
	RecNoStart    = 1 << 0  // completed, never seen queued
	RecSplit      = 1 << 1  // split child, attributed through its parent
	RecKthread    = 1 << 2  // queued by a kernel thread
	RecPinned     = 1 << 3  // user pages pinned: direct I/O
	RecNoIssue    = 1 << 4  // never seen issued to the driver
	RecBioDone    = 1 << 5  // completed by block_bio_complete (bio-based device)
	RecPartial    = 1 << 6  // its request completed in several steps
	RecDirtyMatch = 1 << 7  // kept by the pid filter through a dirtied inode
	RecSplitOrph  = 1 << 8  // split child whose parent was never seen
	RecInodeRead  = 1 << 9  // a page-cache read (in the in-flight map only; records leave it out)
	RecWorker     = 1 << 10 // queued by an io_uring worker for the thread in Tid (no Comm: the tracker names it)
	RecUnseen     = 1 << 11 // its completion never reached the programs: sent when its address was reused
	RecRemapped   = 1 << 12 // moved to another device or sector after its queue (md, dm in place)
	RecFillOnly   = 1 << 13 // a page-cache read of an untraced process, tracked for read provenance only
)

// Record is one bio as the kernel side reports it at completion: the
// decoded form of struct block_rec. Times are raw kernel clock
// nanoseconds.
type Record struct {
	Bio, Rq                  uint64
	QueueTS, IssueTS, DoneTS uint64
	Cause                    uint64
	Sector                   uint64 // relative to Dev
	Inode                    uint64
	Bytes                    uint32
	Opf                      uint32
	Dev, InoDev              uint32 // kernel dev_t (major << 20 | minor)
	Pid, Tid                 uint32 // submitter
	CPU                      uint32 // CPU it was queued on
	DoneCPU, DoneTid         uint32 // completion context (diagnostics only)
	Status                   uint16 // blk_status_t
	Flags                    uint16 // Rec* flags
	Comm                     [16]byte
	// UStack and KStack are the submitter's user and kernel stacks at
	// queue in the shared stacks map, or -errno (-1: not asked).
	UStack, KStack int32
}

// Decode fills r from one ring-buffer sample. It does not allocate. A
// sample of the wrong size is an error (nothing is read from it).
func (r *Record) Decode(b []byte) error {
	if len(b) != RecordSize {
		return fmt.Errorf("block record: %d bytes, want %d", len(b), RecordSize)
	}
	le := binary.LittleEndian
	r.Bio = le.Uint64(b[0:])
	r.Rq = le.Uint64(b[8:])
	r.QueueTS = le.Uint64(b[16:])
	r.IssueTS = le.Uint64(b[24:])
	r.DoneTS = le.Uint64(b[32:])
	r.Cause = le.Uint64(b[40:])
	r.Sector = le.Uint64(b[48:])
	r.Inode = le.Uint64(b[56:])
	r.Bytes = le.Uint32(b[64:])
	r.Opf = le.Uint32(b[68:])
	r.Dev = le.Uint32(b[72:])
	r.InoDev = le.Uint32(b[76:])
	r.Pid = le.Uint32(b[80:])
	r.Tid = le.Uint32(b[84:])
	r.CPU = le.Uint32(b[88:])
	r.DoneCPU = le.Uint32(b[92:])
	r.DoneTid = le.Uint32(b[96:])
	r.Status = le.Uint16(b[100:])
	r.Flags = le.Uint16(b[102:])
	copy(r.Comm[:], b[104:120])
	r.UStack = int32(le.Uint32(b[120:]))
	r.KStack = int32(le.Uint32(b[124:]))
	return nil
}

// Encode writes r in the kernel's layout into b, which must hold
// RecordSize bytes. Tests and synthetic sources use it.
func (r *Record) Encode(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], r.Bio)
	le.PutUint64(b[8:], r.Rq)
	le.PutUint64(b[16:], r.QueueTS)
	le.PutUint64(b[24:], r.IssueTS)
	le.PutUint64(b[32:], r.DoneTS)
	le.PutUint64(b[40:], r.Cause)
	le.PutUint64(b[48:], r.Sector)
	le.PutUint64(b[56:], r.Inode)
	le.PutUint32(b[64:], r.Bytes)
	le.PutUint32(b[68:], r.Opf)
	le.PutUint32(b[72:], r.Dev)
	le.PutUint32(b[76:], r.InoDev)
	le.PutUint32(b[80:], r.Pid)
	le.PutUint32(b[84:], r.Tid)
	le.PutUint32(b[88:], r.CPU)
	le.PutUint32(b[92:], r.DoneCPU)
	le.PutUint32(b[96:], r.DoneTid)
	le.PutUint16(b[100:], r.Status)
	le.PutUint16(b[102:], r.Flags)
	copy(b[104:120], r.Comm[:])
	le.PutUint32(b[120:], uint32(r.UStack))
	le.PutUint32(b[124:], uint32(r.KStack))
}

// KernelDev splits a kernel-internal dev_t (20 minor bits) into major and
// minor.
func KernelDev(dev uint32) (major, minor uint32) { return dev >> 20, dev & (1<<20 - 1) }
