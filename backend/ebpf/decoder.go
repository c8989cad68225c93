package ebpf

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"github.com/iotrace/iotrace/backend/ebpf/fdtable"
	"github.com/iotrace/iotrace/backend/ebpf/procfs"
	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
)

// Decoder is this backend's decoding of system calls into events and
// facts, for another Linux tracer that sees the same calls another way
// (backend/ptrace reads them with ptrace): the same systable rows,
// handlers, descriptor table (fdtable), path resolution and counters, so
// that a call gives the same event whichever backend saw it. It is not
// safe for concurrent use.
type Decoder struct{ t *tracker }

// Syscall is one system call as the other tracer saw it; its fields
// mean what they mean in the BPF side's record (struct syscall_rec in
// bpf/records.h).
type Syscall struct {
	Call systable.Call
	// ID identifies the call in the trace (Event.ID).
	ID uint64
	// Enter and Exit are CLOCK_BOOTTIME ns; Exit is 0 for a call still
	// in flight (Complete false).
	Enter, Exit uint64
	Pid, Tid    uint32
	Ret         int64
	// Args are the argument registers, with what the row's roles ask
	// the tracer to read put in place (OpenHow: how.flags and how.mode;
	// fcntl locks: l_type | l_whence<<16 in Args[2]).
	Args [6]uint64
	// Size is what the kernel side reads beyond the registers: the
	// iovec lengths' sum (IOV), the two new descriptors of an FDPair
	// call (the first in the low 32 bits), a fcntl lock's l_len.
	Size uint64
	// IOVPartial says Size sums only the iovecs that could be read.
	IOVPartial bool
	// Pos is the file position at entry (ReadFilePos: HavePos or
	// HaveFile), a fcntl lock's l_start, an FDPair's second inode.
	Pos     int64
	HavePos bool
	// HaveFile says Ino, Dev (the kernel's dev_t encoding) and FFlags
	// hold the file the kernel saw: the FD argument's at entry
	// (ReadFilePos), the new descriptor's at exit (ReadNewFile).
	HaveFile bool
	Ino      uint64
	Dev      uint32
	FFlags   uint32
	// Strings are the call's strings by slot (Row.Strings), Have which
	// were read, Truncated which filled the tracer's buffer.
	Strings   [2]string
	Have      [2]bool
	Truncated [2]bool
	// UserStack is the caller's user stack, innermost frame first, walked
	// by frame pointers (with EnableStacks).
	UserStack []uint64
	// Complete is false for a call without its exit (the thread died in
	// it, or tracing stopped): the event is flagged no-completion.
	Complete bool
}

// NewDecoder returns a decoder sending to sink, with trace time 0 at
// CLOCK_BOOTTIME origin, events marked as from source, and descriptors
// the table never saw asked of probe (a procfs.FS).
func NewDecoder(sink event.Sink, origin uint64, source event.Source, probe fdtable.Prober) *Decoder {
	t := newTracker(sink, origin, probe)
	t.source = source
	return &Decoder{t: t}
}

// Table is the descriptor table, for the rundown at the start.
func (d *Decoder) Table() *fdtable.Table { return d.t.table }

// SelectOps restricts the events emitted to ops (all when empty); calls
// that change names are decoded whatever the selection.
func (d *Decoder) SelectOps(ops []event.Op) {
	if len(ops) == 0 {
		return
	}
	var sel [event.NumOps]bool
	for _, o := range ops {
		if int(o) < event.NumOps {
			sel[o] = true
		}
	}
	d.t.ops = &sel
}

// Syscall decodes one call into its event (and facts).
func (d *Decoder) Syscall(s *Syscall) {
	t := d.t
	r := &t.sys
	*r = syscallRec{header: header{Type: recSyscall, Kind: s.Call, Time: s.Enter},
		ID: s.ID, Pid: s.Pid, Tid: s.Tid, Ret: s.Ret, Args: s.Args, Size: s.Size, Pos: s.Pos,
		Ino: s.Ino, Dev: s.Dev, FFlags: s.FFlags, UStack: -1, KStack: -1}
	if s.Exit > s.Enter {
		r.Dur = s.Exit - s.Enter
	}
	if s.HavePos {
		r.SFlags |= sfPos
	}
	if s.HaveFile {
		r.SFlags |= sfHaveFile
	}
	if s.IOVPartial {
		r.SFlags |= sfIOVPartial
	}
	// A successful exec's stack is not kept (begin): the old program's.
	if t.stacks != nil && s.UserStack != nil && !(s.Ret == 0 && systable.Lookup(s.Call).Op == event.OpExec) {
		if len(t.inlineStacks) >= maxInlineStacks {
			t.inlineOrphans += uint64(len(t.inlineStacks))
			clear(t.inlineStacks)
		}
		t.inlineStacks[s.ID] = userPart{ips: s.UserStack, stop: stopUnknown}
		r.UStack = errEEXIST
	}
	if s.Have[0] || s.Have[1] {
		t.pending[s.Tid] = &pendingPaths{id: s.ID, have: s.Have, path: s.Strings, trunc: s.Truncated}
	}
	t.syscall(r, s.Complete)
}

// EnableStacks makes events carry the user stacks given with their calls
// (Syscall.UserStack), and the trace the modules that name their frames:
// the executable mappings of each process after its exec (its
// /proc/PID/maps under procRoot) and those its calls make (mmap).
func (d *Decoder) EnableStacks(procRoot string) {
	t := d.t
	noMap := func(int32) ([]uint64, error) { return nil, errors.New("no stack map (frames come with their call)") }
	t.stacks = newStackTable(noMap, nil, t.fact, func() *symbolize.Kernel { return nil })
	t.mods = newModuleTable(t.fact)
	t.readMaps = func(pid uint32) ([]byte, error) {
		return os.ReadFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "maps"))
	}
}

// Fork records that process ppid forked pid (not a thread), started at
// start (boot ns), sharing its parent's descriptor table (CLONE_FILES)
// or working directory (CLONE_FS); comm is the parent's name.
func (d *Decoder) Fork(ppid, pid uint32, start, at uint64, comm string, filesShared, fsShared bool) {
	t := d.t
	t.table.Fork(ppid, pid, t.time(start), comm, filesShared, fsShared, t.time(at))
	if t.mods != nil {
		t.mods.forked(ppid, pid, t.time(start), t.time(at))
	}
}

// Exec records that pid exec'd image (absolute) with the command line
// cmdline (NUL-separated, as /proc/PID/cmdline) and is now named comm.
func (d *Decoder) Exec(pid uint32, at uint64, comm, image string, cmdline []byte) {
	t := d.t
	ts := t.time(at)
	t.table.Exec(pid, 0, comm, image, procfs.Cmdline(cmdline), ts)
	if t.mods != nil {
		t.mods.gone(pid, ts)
		if b, err := t.readMaps(pid); err == nil {
			if err := t.mods.fromMaps(pid, t.table.Ensure(pid, ts).Start, ts, false, b); err != nil {
				t.mapsErrs++
			}
		} else {
			t.mapsErrs++
		}
	}
}

// Exit records that process pid (its last thread tid) exited.
func (d *Decoder) Exit(pid, tid uint32, at uint64) { d.t.exited(pid, tid, d.t.time(at)) }

// Time converts a CLOCK_BOOTTIME reading to trace time.
func (d *Decoder) Time(boot uint64) int64 { return d.t.time(boot) }

// LastTime is the time of the latest event sent.
func (d *Decoder) LastTime() int64 { return d.t.lastTime }

// Stats adds the decoder's counters to s.
func (d *Decoder) Stats(s *event.Stats) { d.t.stats(s) }

// Err is the sink's first error.
func (d *Decoder) Err() error { return d.t.err }
