//go:build linux && (amd64 || arm64)

package ptrace

import (
	"encoding/binary"

	"github.com/iotrace/iotrace/backend/ebpf"
	"github.com/iotrace/iotrace/backend/ebpf/systable"
)

// A traced call: read at its seccomp stop (enter), completed at its exit
// stop (exit), decoded by the eBPF backend's decoder (emit). What the
// BPF side reads in the kernel (systable.Kernel and the roles IOV,
// OpenHow, FDPair) is read here from the tracee's memory and /proc.

// enter reads the call th is stopped at the entry of and lets it run to
// its exit stop, or on when the call is not one to record.
func (t *tracer) enter(th *thread, now uint64) {
	var si syscallInfo
	if err := getSyscallInfo(th.tid, &si); err != nil || si.op != infoSeccomp {
		if err != nil {
			t.seccompMissed++
		}
		t.resume(th, 0)
		return
	}
	if !t.started && th.tid == t.root {
		t.started = true
		t.rundown(th.pid, now)
	}
	if si.arch != t.arch {
		t.otherABI++
		t.resume(th, 0)
		return
	}
	var call systable.Call
	if si.nr < uint64(len(t.calls)) {
		call = t.calls[si.nr]
	}
	row := systable.Lookup(call)
	if row == nil || !t.wanted(row, &si) {
		t.resume(th, 0)
		return
	}
	sc := &th.sc
	*sc = ebpfSyscall(call, th, &si)
	t.readEntry(th, row)
	if t.stacks {
		sc.UserStack = userStack(th.tid)
	}
	th.row, th.in = row, true
	sc.Enter = bootNanos()
	t.resume(th, 0)
}

// wanted reports whether a call is recorded: not the asynchronous calls
// (their requests are what matters: counted), file-backed mmaps only,
// fcntl's dup, F_SETFD and lock commands only (as the BPF side).
func (t *tracer) wanted(row *systable.Row, si *syscallInfo) bool {
	switch {
	case row.Kernel&(systable.AsyncSubmit|systable.AsyncReap|systable.AsyncRingEnter) != 0:
		t.async[row.Name]++
		return false
	case row.Kernel&systable.FileMapsOnly != 0:
		const mapAnonymous = 0x20
		return si.args[3]&mapAnonymous == 0 && int32(uint32(si.args[4])) >= 0
	case row.Kernel&systable.FcntlForms != 0:
		switch uint32(si.args[1]) {
		case 0, 1030, 2, 5, 6, 7, 36, 37, 38: // F_DUPFD, F_DUPFD_CLOEXEC, F_SETFD, the locks
			return true
		}
		return false
	}
	return true
}

// readEntry reads what the call's row asks for at entry: its strings,
// iovec lengths, struct open_how, struct flock, and the file position.
func (t *tracer) readEntry(th *thread, row *systable.Row) {
	sc, tid := &th.sc, th.tid
	for slot, arg := range row.Strings() {
		if arg >= 0 && sc.Args[arg] != 0 {
			sc.Strings[slot], sc.Truncated[slot], sc.Have[slot] = readString(tid, sc.Args[arg], t.buf)
		}
	}
	if i := row.Arg(systable.IOV); i >= 0 {
		sum, partial := iovSum(tid, sc.Args[i], sc.Args[i+1])
		sc.Size, sc.IOVPartial = sum, partial
	}
	if i := row.Arg(systable.OpenHow); i >= 0 {
		var how [16]byte // struct open_how: flags, mode
		if n, _ := readMem(tid, sc.Args[i], how[:]); n == len(how) {
			sc.Args[i], sc.Args[i+1] = binary.LittleEndian.Uint64(how[:]), binary.LittleEndian.Uint64(how[8:])
		}
	}
	if row.Kernel&systable.FcntlForms != 0 {
		switch uint32(sc.Args[1]) {
		case 5, 6, 7, 36, 37, 38:
			var fl [24]byte // struct flock: l_type, l_whence, l_start, l_len
			if n, _ := readMem(tid, sc.Args[2], fl[:]); n == len(fl) {
				le := binary.LittleEndian
				sc.Args[2] = uint64(le.Uint16(fl[:])) | uint64(le.Uint16(fl[2:]))<<16
				sc.Pos, sc.Size = int64(le.Uint64(fl[8:])), le.Uint64(fl[16:])
			}
		}
	}
	if row.Kernel&systable.ReadFilePos != 0 && t.usesPosition(row, sc.Args) {
		sc.Pos, sc.HavePos = fdPos(t.proc, tid, int32(uint32(sc.Args[row.Arg(systable.FD)])))
	}
}

// usesPosition reports whether the call reads or writes at the file
// position: no offset argument, or -1 in one (preadv2).
func (t *tracer) usesPosition(row *systable.Row, a [6]uint64) bool {
	if row.Arg(systable.FD) < 0 {
		return false
	}
	if i := row.Arg(systable.PosOffset); i >= 0 {
		return int64(a[i]) == -1
	}
	return row.Arg(systable.Offset) < 0
}

// exit completes the call th is stopped at the exit of, and emits it.
func (t *tracer) exit(th *thread, now uint64) {
	if !th.in {
		return
	}
	var si syscallInfo
	if err := getSyscallInfo(th.tid, &si); err != nil || si.op != infoExit {
		t.noExit++
		t.emit(th, false, now)
		return
	}
	sc, row := &th.sc, th.row
	sc.Ret = si.rval
	if i := row.Arg(systable.FDPair); i >= 0 && sc.Ret == 0 {
		var fds [8]byte
		if n, _ := readMem(th.tid, sc.Args[i], fds[:]); n == len(fds) {
			sc.Size = binary.LittleEndian.Uint64(fds[:])
			fd0, fd1 := int32(binary.LittleEndian.Uint32(fds[:])), int32(binary.LittleEndian.Uint32(fds[4:]))
			ino0, dev, ok0 := fdFile(t.proc, th.tid, fd0)
			ino1, _, ok1 := fdFile(t.proc, th.tid, fd1)
			if ok0 && ok1 {
				sc.HaveFile, sc.Ino, sc.Dev, sc.Pos = true, ino0, dev, int64(ino1)
				sc.FFlags, _ = fdFlags(t.proc, th.tid, fd0)
			}
		}
	}
	if row.Kernel&systable.ReadNewFile != 0 && sc.Ret >= 0 {
		sc.Ino, sc.Dev, sc.HaveFile = fdFile(t.proc, th.tid, int32(sc.Ret))
		if sc.HaveFile && row.Do == systable.DoNewFD {
			sc.FFlags, _ = fdFlags(t.proc, th.tid, int32(sc.Ret)) // the descriptor's flags (no path, no flag arguments)
		}
	}
	t.emit(th, true, now)
}

// emit decodes th's call; complete is false when its exit was not seen.
func (t *tracer) emit(th *thread, complete bool, now uint64) {
	sc := &th.sc
	th.in = false
	sc.Complete = complete
	if complete {
		sc.Exit = now
	}
	t.nextID++
	sc.ID = t.nextID
	t.dec.Syscall(sc)
}

// ebpfSyscall starts the decoder's record of a call.
func ebpfSyscall(call systable.Call, th *thread, si *syscallInfo) (sc ebpf.Syscall) {
	sc.Call, sc.Pid, sc.Tid, sc.Args = call, uint32(th.pid), uint32(th.tid), si.args
	return sc
}
