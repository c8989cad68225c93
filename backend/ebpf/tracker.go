package ebpf

import (
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/iotrace/iotrace/backend/ebpf/blockio"
	"github.com/iotrace/iotrace/backend/ebpf/fdtable"
	"github.com/iotrace/iotrace/backend/ebpf/procfs"
	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
)

// Linux open flags that are the same on every supported architecture.
const (
	oAccMode = 0o3
	oWronly  = 0o1
	oCreat   = 0o100
	oExcl    = 0o200
	oTrunc   = 0o1000
	oAppend  = 0o2000
	oDsync   = 0o10000
	oCloexec = 0o2000000

	atFDCWD       = -100
	atEmptyPath   = 0x1000
	fDupFD        = 0
	fSetFD        = 2
	fDupFDCloexec = 1030
	fdCloexec     = 1

	errEBADF = 9 // a descriptor the process does not have
)

// oDirect returns O_DIRECT of the architecture the trace is recorded on.
func oDirect(goarch string) uint32 {
	switch goarch {
	case "arm64", "arm":
		return 0o200000
	}
	return 0o40000
}

// pendingPaths holds the path records sent ahead of a thread's syscall.
type pendingPaths struct {
	id    uint64
	have  [2]bool
	path  [2]string
	trunc [2]bool
	late  [2]bool
}

type commEntry struct {
	raw [commLen]byte
	s   string
}

// tracker turns ring-buffer records into events and facts: it pairs path
// records with their syscall, keeps the descriptor tables, and sends
// everything to the sink. It is not safe for concurrent use.
type tracker struct {
	sink   event.Sink
	source event.Source // SourceEBPF, or the backend decoding through a Decoder
	table  *fdtable.Table
	origin uint64 // CLOCK_BOOTTIME ns of trace time 0
	// ops selects the ops emitted (nil: all).
	ops *[event.NumOps]bool
	// block is set when block tracing links bios to syscalls (cache-hit
	// inference).
	block   bool
	oDirect uint32

	pending map[uint32]*pendingPaths // by tid
	comms   map[uint32]*commEntry    // by tid
	// gone remembers processes that exited recently, for block events
	// that complete after their submitter's exit was read.
	gone map[uint32]goneProc

	ev       event.Event
	sys      syscallRec
	path     pathRec
	fork     forkRec
	exec     execRec
	exit     exitRec
	uring    uringRec
	aio      aioRec
	err      error // first sink error
	lastTime int64

	// pc is the page-cache provenance of reads (provenance.go), pcr its
	// record; pcUnclassified counts the reads it could not classify, by
	// reason.
	pc             *pageCache
	pcr            pcRec
	pcUnclassified [numPCReasons]uint64
	// written are the files the traced processes wrote (writeback.go).
	written     map[string]struct{}
	writtenOver uint64

	// Counters reported in Stats.
	events, facts              uint64
	decodeErrors, unknownKinds uint64
	// stacks and mods are set with --stacks (stacks.go, modules.go);
	// readMaps reads /proc/PID/maps.
	stacks         *stackTable
	mods           *moduleTable
	readMaps       func(pid uint32) ([]byte, error)
	execPath       map[uint32]string   // the program each process last exec'd (absolute)
	inlineStacks   map[uint64]userPart // user stacks sent inline, by event ID, until the event
	inlineOrphans  uint64
	copies         stackCopies // user stacks sent as copies to walk (ustack.go)
	ksymErr        string      // why the kernel's symbols could not be read
	execMapsMissed uint64      // exec'd programs/interpreters not recorded as modules
	mapsErrs       uint64
	// aioUnreaped counts AIO requests sent when their process exited;
	// fixedFiles io_uring requests on registered files (unnamed).
	aioUnreaped, fixedFiles  uint64
	pathsMissing, fdsUnnamed uint64
	cwdUnknown, stalePaths   uint64
	firstDecodeErr           error

	// launcher is iotrace's own pid when it starts the traced command (0
	// otherwise): its children are in setup from their fork until their
	// exec, and their events then (the dup3 of the command's standard
	// output, ...) are iotrace's set-up, not the command's: left out,
	// counted in setupEvents.
	launcher    uint32
	setup       map[uint32]bool
	setupEvents uint64
}

func newTracker(sink event.Sink, origin uint64, probe fdtable.Prober) *tracker {
	t := &tracker{
		sink:         sink,
		source:       event.SourceEBPF,
		table:        fdtable.New(),
		origin:       origin,
		oDirect:      oDirect(runtime.GOARCH),
		pending:      make(map[uint32]*pendingPaths),
		comms:        make(map[uint32]*commEntry),
		gone:         make(map[uint32]goneProc),
		execPath:     make(map[uint32]string),
		inlineStacks: make(map[uint64]userPart),
		pc:           newPageCache(),
	}
	t.table.Probe = probe
	t.table.Emit = t.fact
	return t
}

func (t *tracker) fact(f *event.Fact) {
	if t.err != nil {
		return
	}
	t.facts++
	if err := t.sink.Fact(f); err != nil {
		t.err = err
	}
}

// launches tells the tracker that the process launcher (iotrace) starts
// the traced command: the events of its children before their exec are
// left out.
func (t *tracker) launches(launcher uint32) {
	t.launcher, t.setup = launcher, map[uint32]bool{}
}

func (t *tracker) emit(e *event.Event) {
	if t.err != nil {
		return
	}
	if t.ops != nil && !t.ops[e.Op] {
		return
	}
	if len(t.setup) > 0 && t.setup[e.Pid] {
		t.setupEvents++
		return
	}
	t.events++
	if e.Time > t.lastTime {
		t.lastTime = e.Time
	}
	if err := t.sink.Event(e); err != nil {
		t.err = err
	}
}

func (t *tracker) time(boot uint64) int64 { return int64(boot - t.origin) }

func (t *tracker) comm(tid uint32, raw *[commLen]byte) string {
	c := t.comms[tid]
	if c == nil {
		c = &commEntry{}
		t.comms[tid] = c
	} else if c.raw == *raw {
		return c.s
	}
	c.raw = *raw
	c.s = string(trimNUL(raw[:]))
	return c.s
}

// handle decodes one record. Malformed records are counted, not fatal; the
// returned error is the sink's.
func (t *tracker) handle(b []byte) error {
	h, err := decodeHeader(b)
	if err == nil {
		switch h.Type {
		case recSyscall:
			if err = t.sys.decode(b); err == nil {
				t.syscall(&t.sys, true)
			}
		case recPath:
			if err = t.path.decode(b); err == nil {
				t.pathRecord(&t.path)
			}
		case recFork:
			if err = t.fork.decode(b); err == nil {
				ts := t.time(t.fork.Time)
				if t.launcher != 0 && t.fork.PPid == t.launcher {
					t.setup[t.fork.Pid] = true
				}
				t.table.Fork(t.fork.PPid, t.fork.Pid, t.time(t.fork.Start), t.comm(t.fork.Tid, &t.fork.Comm),
					t.fork.CFlags&cfFilesShared != 0, t.fork.CFlags&cfFSShared != 0, ts)
				if t.mods != nil {
					t.mods.forked(t.fork.PPid, t.fork.Pid, t.time(t.fork.Start), ts)
				}
			}
		case recExec:
			if err = t.exec.decode(b); err == nil {
				t.execRecord(&t.exec)
			}
		case recExit:
			if err = t.exit.decode(b); err == nil {
				t.exited(t.exit.Pid, t.exit.Tid, t.time(t.exit.Time))
			}
		case recURing:
			if err = t.uring.decode(b); err == nil {
				t.uringRecord(&t.uring)
			}
		case recStack:
			var sr stackRec
			if err = sr.decode(b); err == nil {
				if len(t.inlineStacks) >= maxInlineStacks {
					t.inlineOrphans += uint64(len(t.inlineStacks))
					clear(t.inlineStacks)
				}
				t.inlineStacks[sr.ID] = userPart{ips: sr.IPs, stop: sr.Stop}
			}
		case recUStackCopy:
			var c uStackCopyRec
			if err = c.decode(b); err == nil {
				t.copies.add(&c)
			}
		case recExecMaps:
			var em execMapsRec
			if err = em.decode(b); err == nil {
				t.execMaps(&em)
			}
		case recPageCache:
			if err = t.pcr.decode(b); err == nil {
				t.pc.record(&t.pcr)
			}
		case recAIO:
			if err = t.aio.decode(b); err == nil {
				unreaped := t.aio.AFlags&afUnreaped != 0
				if unreaped {
					t.aioUnreaped++
				}
				t.aioRecord(&t.aio, !unreaped)
			}
		default:
			err = fmt.Errorf("unknown record type %d", h.Type)
		}
	}
	if err != nil {
		t.decodeErrors++
		if t.firstDecodeErr == nil {
			t.firstDecodeErr = err
		}
	}
	return t.err
}

func (t *tracker) pathRecord(r *pathRec) {
	p := t.pending[r.Tid]
	if p == nil {
		p = &pendingPaths{}
		t.pending[r.Tid] = p
	}
	if p.id != r.ID {
		if p.have[0] || p.have[1] {
			t.stalePaths++ // the syscall's own record was lost
		}
		*p = pendingPaths{id: r.ID}
	}
	i := r.Index & 1
	p.have[i] = true
	p.path[i] = string(r.Path)
	p.trunc[i] = r.Truncated
	p.late[i] = r.Late
}

func (t *tracker) execRecord(r *execRec) {
	ts := t.time(r.Time)
	start := int64(0)
	if r.Start != 0 {
		start = t.time(r.Start)
	}
	if r.OldPid != r.Pid {
		// A non-leader thread exec'd and took over the leader's tid: its
		// execve's path records were sent under the old one.
		if pp := t.pending[r.OldPid]; pp != nil {
			t.pending[r.Pid] = pp
			delete(t.pending, r.OldPid)
		}
	}
	delete(t.setup, r.Pid)
	t.table.Exec(r.Pid, start, t.comm(r.Pid, &r.Comm), string(r.Name), procfs.Cmdline(r.Args), ts)
	if t.mods != nil {
		t.mods.gone(r.Pid, ts)
		t.execPath[r.Pid] = t.abs(r.Pid, atFDCWD, string(r.Name), true, ts)
	}
}

func errnoOf(ret int64) (event.Status, uint32) {
	if ret < 0 && ret >= -4095 {
		return event.FromErrno(uint32(-ret)), uint32(-ret)
	}
	return event.StatusOK, 0
}

func argFD(a uint64) int32 { return int32(uint32(a)) }

// call is the system call being decoded: its record, its row of
// systable.Table, its event and the strings sent ahead of it. It lives on
// syscall's stack (nothing keeps it), so decoding a call allocates
// nothing.
type call struct {
	r    *syscallRec
	row  *systable.Row
	e    *event.Event
	ts   int64
	ok   bool          // it succeeded
	refs systable.Refs // what its arguments refer to (decode)
	str  [2]string     // its strings (paths, names), by slot
	have [2]bool       // which of them arrived
}

// syscall turns a syscall record into an event: the fields every call
// has, its strings, then its arguments as its row says (decode) or, for
// the special cases, as the row's handler does (handlers.go). complete is
// false for a call still in flight when tracing stopped (no exit: no
// result).
func (t *tracker) syscall(r *syscallRec, complete bool) {
	row := systable.Lookup(r.Kind)
	if row == nil {
		t.unknownKinds++
		return
	}
	c := call{r: r, row: row, e: &t.ev, ts: t.time(r.Time)}
	t.begin(&c, complete)
	if row.Strings()[0] >= 0 {
		t.takeStrings(&c)
	}
	if row.Do == systable.Generic {
		t.decode(&c)
		t.emit(c.e)
		return
	}
	t.do(&c)
}

// begin sets the fields every call's event has: identity, time, thread,
// status, stack and the block I/O it caused.
func (t *tracker) begin(c *call, complete bool) {
	r, e, ts := c.r, c.e, c.ts
	e.Reset()
	e.ID = blockio.SyscallID(r.ID)
	e.Source = t.source
	e.Layer = event.LayerFile
	e.Op = c.row.Op
	e.Native = c.row.Name
	e.Time = ts
	e.Duration = int64(r.Dur)
	e.CPU = r.CPU
	e.Pid, e.Tid = r.Pid, r.Tid
	p := t.table.Ensure(r.Pid, ts)
	e.ProcStart = p.Start
	e.Status, e.Code = errnoOf(r.Ret)
	// The kernel sends a thread's name with its first record and after a
	// rename or exec only: otherwise the last one the thread sent.
	if complete && r.SFlags&sfComm != 0 {
		e.Comm = t.comm(r.Tid, &r.Comm)
	} else {
		e.Comm = p.Comm
		if cm := t.comms[r.Tid]; cm != nil {
			e.Comm = cm.s
		}
	}
	if !complete {
		e.Status, e.Flags = event.StatusUnknown, event.FlagNoCompletion
	}
	c.ok = e.Status == event.StatusOK
	if t.stacks != nil {
		ustack := r.UStack
		if c.row.Op == event.OpExec && c.ok {
			// Taken at the exit: the new program's entry, not the
			// code that called execve.
			ustack = -1
		}
		e.Stack = t.eventStack(r.ID, r.Pid, ustack, r.KStack)
	}
	if r.SFlags&sfCause != 0 {
		e.CausedIOs = r.NrBios
		e.CausedBytes = r.BioBytes
	}
}

// takeStrings takes the call's strings, sent ahead in path records, and
// counts those that did not arrive.
func (t *tracker) takeStrings(c *call) {
	r := c.r
	if pp := t.pending[r.Tid]; pp != nil && pp.id == r.ID {
		for i := range pp.have {
			if pp.have[i] {
				c.str[i], c.have[i] = pp.path[i], true
				if pp.trunc[i] {
					c.e.Flags |= event.FlagTruncated
				}
			}
		}
		delete(t.pending, r.Tid)
	}
	for i, arg := range c.row.Strings() {
		if arg >= 0 && !c.have[i] && r.Args[arg] != 0 {
			t.pathsMissing++
		}
	}
}

// decode sets the event's fields from the call's arguments (its row's
// roles), names what they refer to, then adds what the kernel read and
// the result.
func (t *tracker) decode(c *call) {
	e, r, row := c.e, c.r, c.row
	row.Decode(&r.Args, e, &c.refs)
	t.names(c)
	if c.refs.IOV {
		e.Size = r.Size
		if r.SFlags&sfIOVPartial != 0 {
			e.Flags |= event.FlagTruncated
		}
	}
	// No offset argument, or -1: the kernel used the file position.
	if row.Kernel&systable.ReadFilePos != 0 && r.SFlags&(sfHaveFile|sfPos) != 0 && e.Offset == -1 {
		e.Offset = r.Pos
	}
	e.Flags |= row.Event
	if c.ok {
		switch row.Ret {
		case systable.RetBytes:
			e.Bytes = r.Ret
		case systable.RetOffset:
			e.Offset = r.Ret
		case systable.RetFD:
			e.FD = int32(r.Ret)
		case systable.RetDupFD:
			e.Info = uint32(r.Ret)
		}
	}
	switch {
	case e.Op == event.OpRead:
		t.readProvenance(e, r)
	case e.Op == event.OpWrite && c.ok && r.Ret > 0 && e.Flags&event.FlagDirect == 0:
		t.wrote(e.Path)
	}
}

// names resolves the call's paths and names its descriptors.
func (t *tracker) names(c *call) {
	e, r, row, refs, ts := c.e, c.r, c.row, &c.refs, c.ts
	if row.Strings()[0] >= 0 {
		if s := row.StringSlot(systable.Path); s >= 0 {
			if c.str[s] == "" && refs.Dir[0] != atFDCWD &&
				(row.Flags&systable.EmptyPath != 0 && refs.AtFlags&atEmptyPath != 0 ||
					row.Flags&systable.NullPath != 0 && r.Args[row.Strings()[s]] == 0) {
				t.fdEvent(e, r, refs.Dir[0], ts) // the call acts on the directory descriptor itself
			} else {
				e.Path = t.abs(r.Pid, refs.Dir[0], c.str[s], c.have[s], ts)
			}
		}
		if s := row.StringSlot(systable.Path2); s >= 0 {
			e.Path2 = t.abs(r.Pid, refs.Dir[1], c.str[s], c.have[s], ts)
		}
		if s := row.StringSlot(systable.Target); s >= 0 {
			e.Path2 = c.str[s] // as written: the kernel stores it verbatim
		}
		if s := row.StringSlot(systable.AttrName); s >= 0 {
			e.Note = c.str[s]
		}
	}
	if refs.HasFD {
		t.fdEvent(e, r, refs.FD, ts)
	}
	if refs.HasOutFD {
		if d, ok := t.table.FD(r.Pid, refs.OutFD, ts); ok {
			e.Path2 = d.Path
		}
	}
}

// fdEvent fills in the descriptor fd and what the table knows about it.
func (t *tracker) fdEvent(e *event.Event, r *syscallRec, fd int32, ts int64) {
	e.FD = fd
	var d fdtable.FD
	var ok bool
	if r.SFlags&sfHaveFile != 0 {
		// The kernel saw the file at the call: a late name must be its.
		d, ok = t.table.FDOf(r.Pid, fd, ts, r.Ino, procfs.KernelDev(r.Dev))
	} else {
		d, ok = t.table.FD(r.Pid, fd, ts)
	}
	if ok {
		e.Path = d.Path
		if d.Late {
			e.Flags |= event.FlagPathLate
		}
	} else if fd >= 0 && e.Code != errEBADF {
		// A descriptor the kernel did not know (EBADF) has no name
		// to find: not counted.
		t.fdsUnnamed++
	}
	e.Flags |= t.openFlags(d.Flags)
	e.Inode, e.Dev = d.Ino, d.Dev
	if r.SFlags&sfHaveFile != 0 {
		e.Inode, e.Dev = r.Ino, procfs.KernelDev(r.Dev)
		e.Flags |= t.openFlags(r.FFlags)
	}
}

func (t *tracker) openFlags(f uint32) event.Flags {
	var fl event.Flags
	if f&t.oDirect != 0 {
		fl |= event.FlagDirect
	}
	if f&oDsync != 0 {
		fl |= event.FlagSync
	}
	if f&oAppend != 0 {
		fl |= event.FlagAppend
	}
	return fl
}

// abs resolves a path argument; when the path record was lost the event
// keeps an empty path (counted in pathsMissing).
func (t *tracker) abs(pid uint32, dirfd int32, name string, have bool, ts int64) string {
	if !have {
		return ""
	}
	p, ok := t.table.Abs(pid, dirfd, name, ts)
	if !ok {
		t.cwdUnknown++
	}
	return p
}

// io_uring opcodes iotrace names (include/uapi/linux/io_uring.h).
var uringOps = map[uint8]struct {
	name string
	op   event.Op
}{
	0: {"NOP", event.OpAsync}, 1: {"READV", event.OpRead}, 2: {"WRITEV", event.OpWrite},
	3: {"FSYNC", event.OpFlush}, 4: {"READ_FIXED", event.OpRead}, 5: {"WRITE_FIXED", event.OpWrite},
	8: {"SYNC_FILE_RANGE", event.OpFlush}, 17: {"FALLOCATE", event.OpSetInfo},
	18: {"OPENAT", event.OpOpen}, 19: {"CLOSE", event.OpClose}, 21: {"STATX", event.OpStat},
	22: {"READ", event.OpRead}, 23: {"WRITE", event.OpWrite}, 30: {"SPLICE", event.OpCopy},
	35: {"RENAMEAT", event.OpRename}, 36: {"UNLINKAT", event.OpDelete}, 37: {"MKDIRAT", event.OpMkdir},
}

func (t *tracker) uringRecord(r *uringRec) {
	e, ts := t.asyncEvent(&r.header, r.ID, r.Pid, r.Tid, &r.Comm, r.Req)
	e.Native = "io_uring"
	e.Note = fmt.Sprintf("io_uring op %d", r.Opcode)
	if o, ok := uringOps[r.Opcode]; ok {
		e.Op, e.Native = o.op, "io_uring/"+o.name
		e.Note = e.Native
	}
	if r.More {
		// One completion of a multishot request: the next one is its
		// own event, timed from this one.
		e.Note += " (multishot, more to come)"
	}
	e.Info = uint32(r.Opcode)
	e.Duration = int64(r.Dur)
	if r.Res < 0 {
		e.Status, e.Code = event.FromErrno(uint32(-r.Res)), uint32(-r.Res)
	} else {
		e.Status = event.StatusOK
		e.Bytes = int64(r.Res)
	}
	switch {
	case r.UFlags&ufFixed != 0:
		// A registered file: the number is no descriptor, and the
		// trace does not know the ring's file table.
		e.Note += fmt.Sprintf(" (registered file %d)", r.FD)
		t.fixedFiles++
	case r.FD >= 0:
		sr := syscallRec{header: r.header, Pid: r.Pid, Ino: r.Ino, Dev: r.Dev, FFlags: r.FFlags}
		if r.UFlags&ufHaveFile != 0 {
			sr.SFlags = sfHaveFile
		}
		t.fdEvent(e, &sr, r.FD, ts)
	}
	e.Size = uint64(r.Len)
	e.Offset = r.Off
	if t.stacks != nil {
		e.Stack = t.stacks.id(r.UStack, -1)
	}
	if r.Caused {
		e.CausedIOs, e.CausedBytes = r.NrBios, r.BioBytes
	}
	t.emit(e)
}

// asyncEvent starts the event of an asynchronous request (io_uring, AIO):
// the fields every request has.
func (t *tracker) asyncEvent(h *header, id uint64, pid, tid uint32, comm *[commLen]byte, req uint64) (*event.Event, int64) {
	ts := t.time(h.Time)
	e := &t.ev
	e.Reset()
	e.ID = blockio.SyscallID(id)
	e.Source = event.SourceEBPF
	e.Layer = event.LayerFile
	e.Op = event.OpAsync
	e.Time = ts
	e.CPU = h.CPU
	e.Pid, e.Tid = pid, tid
	e.Comm = t.comm(tid, comm)
	e.ProcStart = t.table.Ensure(pid, ts).Start
	e.Request = req
	return e, ts
}

// Linux AIO commands iotrace names (IOCB_CMD_*, include/uapi/linux/aio_abi.h).
var aioOps = map[uint16]struct {
	name string
	op   event.Op
}{
	0: {"PREAD", event.OpRead}, 1: {"PWRITE", event.OpWrite}, 2: {"FSYNC", event.OpFlush},
	3: {"FDSYNC", event.OpFlush}, 5: {"POLL", event.OpAsync}, 6: {"NOOP", event.OpAsync},
	7: {"PREADV", event.OpRead}, 8: {"PWRITEV", event.OpWrite},
}

// aioRecord turns one Linux AIO request (an iocb, from io_submit to the
// io_getevents call that reaped it) into a file event. complete is false
// for a request still unreaped when tracing stopped.
func (t *tracker) aioRecord(r *aioRec, complete bool) {
	e, ts := t.asyncEvent(&r.header, r.ID, r.Pid, r.Tid, &r.Comm, r.IOCB)
	e.Native = fmt.Sprintf("aio/%d", r.Opcode)
	if o, ok := aioOps[r.Opcode]; ok {
		e.Op, e.Native = o.op, "aio/"+o.name
	}
	e.Info = uint32(r.Opcode)
	if complete {
		e.Duration = int64(r.Dur)
		e.Status, e.Code = errnoOf(r.Res)
		if e.Status == event.StatusOK {
			e.Bytes = r.Res
		}
	} else {
		e.Status, e.Flags = event.StatusUnknown, event.FlagNoCompletion
	}
	sr := syscallRec{header: r.header, Pid: r.Pid, Ino: r.Ino, Dev: r.Dev, FFlags: r.FFlags}
	if r.AFlags&afHaveFile != 0 {
		sr.SFlags = sfHaveFile
	}
	t.fdEvent(e, &sr, r.FD, ts)
	if t.stacks != nil {
		e.Stack = t.stacks.id(r.UStack, -1)
	}
	if e.Op == event.OpRead || e.Op == event.OpWrite {
		e.Offset = r.Off
		e.Size = r.NBytes
		if r.AFlags&afIOVPartial != 0 {
			e.Flags |= event.FlagTruncated
		}
	}
	if r.Caused {
		e.CausedIOs, e.CausedBytes = r.NrBios, r.BioBytes
	}
	t.emit(e)
}

// goneProc is the identity of a process that exited at time exit.
type goneProc struct {
	start, exit int64
	comm        string
}

// maxGone bounds tracker.gone; goneFor is how long an exited process's
// identity is kept for its late block completions.
const (
	maxGone = 4096
	goneFor = 2_000_000_000 // ns
)

// exited forgets thread tid of process pid, which exits at ts (the process
// with it, when the table holds it).
func (t *tracker) exited(pid, tid uint32, ts int64) {
	if pid == tid {
		delete(t.setup, pid)
	}
	t.remember(pid, ts)
	if t.mods != nil {
		t.mods.gone(pid, ts)
		delete(t.execPath, pid)
	}
	t.table.Exit(pid, ts)
	delete(t.comms, tid)
	delete(t.pending, tid)
}

// remember keeps the identity of process pid, which exits at ts.
func (t *tracker) remember(pid uint32, ts int64) {
	p := t.table.Lookup(pid)
	if p == nil {
		return
	}
	if len(t.gone) >= maxGone {
		for k, g := range t.gone {
			if g.exit < ts-goneFor {
				delete(t.gone, k)
			}
		}
		if len(t.gone) >= maxGone {
			clear(t.gone)
		}
	}
	t.gone[pid] = goneProc{start: p.Start, exit: ts, comm: p.Comm}
}

// blockEvent gives a block event (from package blockio, read on another
// goroutine and handed over) the identity the table gives the submitter's
// syscall events, ProcStart and, when the kernel gave none, Comm, then
// sends it. The records the submitter's syscalls produced before the bio
// was queued must have been handled first.
func (t *tracker) blockEvent(e *event.Event) {
	if u, k, raw := blockio.SplitRawStack(e.Stack); raw {
		e.Stack = 0
		if t.stacks != nil {
			e.Stack = t.blockStack(e.Pid, u, k)
		}
	}
	// Writeback knows only the inode: name it when the trace does (the
	// inode's file system is the bio's device unless the event says
	// otherwise in its note).
	if e.Path == "" && e.Inode != 0 && e.Flags&event.FlagWriteback != 0 && e.Note == "" {
		if p, ok := t.table.InodePath(e.Inode, e.Dev); ok {
			e.Path = p
		}
	}
	if e.Flags&event.FlagNoStart == 0 && e.Pid != 0 {
		start, comm := t.identity(e.Pid, e.Tid, e.Time)
		e.ProcStart = start
		if e.Comm == "" {
			e.Comm = comm
		}
	}
	if t.err != nil || (t.ops != nil && !t.ops[e.Op]) {
		return
	}
	if e.Time > t.lastTime {
		t.lastTime = e.Time
	}
	if err := t.sink.Event(e); err != nil {
		t.err = err
	}
}

// identity returns the start time and name of process pid as of time ts.
func (t *tracker) identity(pid, tid uint32, ts int64) (int64, string) {
	p := t.table.Lookup(pid)
	if g, ok := t.gone[pid]; ok && (p == nil || ts < p.Start) {
		// Queued by an exited process (whose pid may be reused since).
		return g.start, g.comm
	}
	if p == nil {
		p = t.table.Ensure(pid, ts)
	}
	comm := p.Comm
	if c := t.comms[tid]; c != nil {
		comm = c.s
	}
	return p.Start, comm
}

// stats adds the tracker's own counters to s.
func (t *tracker) stats(s *event.Stats) {
	s.Add(event.CountInfo, "events", t.events)
	s.Add(event.CountInfo, "facts", t.facts)
	s.Add(event.CountInfo, "descriptors named from /proc after the fact", t.table.Probed)
	s.Add(event.CountInfo, "late names refused (the descriptor held another file by then; counted as without a name)", t.table.Refused)
	if t.decodeErrors != 0 {
		s.Add(event.CountLost, fmt.Sprintf("malformed records (first: %v)", t.firstDecodeErr), t.decodeErrors)
	}
	if t.stacks != nil {
		t.stacks.stats(s)
	}
	if n := t.inlineOrphans + uint64(len(t.inlineStacks)); n != 0 {
		s.Add(event.CountUnpaired, "inline user stacks whose event never came", n)
	}
	t.copies.stats(s)
	if t.ksymErr != "" {
		s.Add(event.CountUnresolved, "kernel frames not named: /proc/kallsyms: "+t.ksymErr, 1)
	}
	if t.mods != nil {
		t.mods.stats(s)
	}
	if t.execMapsMissed != 0 {
		s.Add(event.CountUnresolved, "exec'd programs or interpreters not recorded as modules (no path, or the file there is not the one the kernel mapped: their user frames stay unnamed)", t.execMapsMissed)
	}
	if t.mapsErrs != 0 {
		s.Add(event.CountUnresolved, "/proc/PID/maps files not read whole", t.mapsErrs)
	}
	if t.fixedFiles != 0 {
		s.Add(event.CountUnresolved, "io_uring requests on registered (fixed) files: not named (the trace does not record the ring's file table)", t.fixedFiles)
	}
	if t.setupEvents != 0 {
		s.Add(event.CountInfo, "events of iotrace starting the command, before its exec (left out)", t.setupEvents)
	}
	if t.aioUnreaped != 0 {
		s.Add(event.CountUnpaired, "AIO requests never reaped: their process exited first", t.aioUnreaped)
	}
	if t.unknownKinds != 0 {
		s.Add(event.CountLost, "records of an unknown syscall kind", t.unknownKinds)
	}
	s.Add(event.CountUnresolved, "file events whose descriptor has no name", t.fdsUnnamed)
	s.Add(event.CountUnresolved, "path arguments missing (record lost or unreadable)", t.pathsMissing)
	s.Add(event.CountUnresolved, "relative paths with an unknown base directory", t.cwdUnknown)
	t.pcStats(s)
	if t.stalePaths != 0 {
		s.Add(event.CountUnpaired, "path records whose syscall never arrived", t.stalePaths)
	}
}

// execMaps records the code an exec mapped (the program's text and its
// interpreter's) as modules, each only when the file at the path has the
// inode the kernel mapped: a program replaced on disk since is not
// taken for the one that ran. The paths are recorded with their symbolic
// links resolved (realPath).
func (t *tracker) execMaps(r *execMapsRec) {
	if t.mods == nil {
		return
	}
	ts := t.time(r.Time)
	p := t.table.Ensure(r.Pid, ts)
	exe := t.execPath[r.Pid]
	for _, x := range []struct {
		m    codeMap
		path string
	}{{r.Exe, exe}, {r.Interp, interpOf(exe)}} {
		if x.m.End <= x.m.Start {
			continue
		}
		if x.m.Start == r.Exe.Start && x.path != exe {
			continue // a static program: no interpreter
		}
		path := realPath(x.path)
		ino, dev, ok := procfs.FileID(path)
		if path == "" || !ok || ino != x.m.Ino || dev != procfs.KernelDev(x.m.Dev) {
			t.execMapsMissed++
			continue
		}
		t.mods.mapped(r.Pid, p.Start, ts, false, x.m.Start, x.m.End, x.m.PgOff, path, fileKey{dev: x.m.Dev, ino: x.m.Ino})
	}
}

// realPath returns path with its symbolic links resolved, "" when that
// fails. An exec names its program as the caller spelled it
// (/usr/bin/python3, a link to python3.11) and its interpreter as
// PT_INTERP does (/lib64/ld-linux-x86-64.so.2, a link); a module's path
// must name the file itself, as /proc/PID/maps and mmap's paths do:
// readers open a module path from a trace without following a final
// link (package symbolize), so a link's frames would stay unnamed.
func realPath(path string) string {
	if path == "" {
		return ""
	}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	return p
}
