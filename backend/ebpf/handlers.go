package ebpf

import (
	"fmt"
	"strings"

	"github.com/iotrace/iotrace/backend/ebpf/fdtable"
	"github.com/iotrace/iotrace/backend/ebpf/procfs"
	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
)

// do runs the handler of a call's row (systable.Row.Do): what its roles
// do not say. Each handler decodes the call like every call (decode),
// then names new descriptors, renames or forgets open files, and emits
// the event itself. (A switch, not a table of functions: through a
// function value the call would escape to the heap.)
func (t *tracker) do(c *call) {
	switch c.row.Do {
	case systable.DoOpen:
		t.open(c)
	case systable.DoCreat:
		t.creat(c)
	case systable.DoOpenByHandle:
		t.openByHandle(c)
	case systable.DoClose:
		t.closeFD(c)
	case systable.DoCloseRange:
		t.closeRange(c)
	case systable.DoUnlink:
		t.unlink(c)
	case systable.DoRename:
		t.rename(c)
	case systable.DoDup:
		t.dupFD(c)
	case systable.DoFcntl:
		t.fcntl(c)
	case systable.DoChdir:
		t.chdir(c)
	case systable.DoFchdir:
		t.fchdir(c)
	case systable.DoMmap:
		t.mmap(c)
	case systable.DoNewFD:
		t.newFD(c)
	case systable.DoFDPair:
		t.fdPair(c)
	default:
		t.decode(c)
		t.emit(c.e)
	}
}

// open names the new descriptor by its path (open, openat, openat2).
func (t *tracker) open(c *call) {
	t.decode(c)
	t.opened(c)
}

// creat is open(path, O_CREAT|O_WRONLY|O_TRUNC, mode).
func (t *tracker) creat(c *call) {
	t.decode(c)
	c.e.OpenFlags = oCreat | oWronly | oTrunc
	t.opened(c)
}

// opened emits an open and binds its new descriptor to its path.
func (t *tracker) opened(c *call) {
	e := c.e
	e.Flags |= t.openFlags(e.OpenFlags)
	if !c.ok {
		t.emit(e)
		return
	}
	if e.OpenFlags&(oCreat|oExcl) == oCreat|oExcl {
		e.Flags |= event.FlagCreated
	}
	t.bind(c, fdtable.FD{Path: e.Path, Cloexec: e.OpenFlags&oCloexec != 0, Flags: e.OpenFlags})
}

// bind emits a call that made the descriptor e.FD and binds it to d, with
// the file the kernel saw at exit when it read it.
func (t *tracker) bind(c *call, d fdtable.FD) {
	e, r := c.e, c.r
	if r.SFlags&sfHaveFile != 0 {
		d.Ino, d.Dev = r.Ino, procfs.KernelDev(r.Dev)
		e.Inode, e.Dev = d.Ino, d.Dev
	}
	t.emit(e)
	t.table.Open(r.Pid, e.FD, d, c.ts)
}

// openByHandle (open_by_handle_at): the call names no path, so the new
// descriptor is named by what the system shows for it (/proc/PID/fd),
// when that is still the file the kernel opened (flagged path-late), and
// counted as without a name otherwise.
func (t *tracker) openByHandle(c *call) {
	t.decode(c)
	e, r := c.e, c.r
	e.Flags |= t.openFlags(e.OpenFlags)
	if c.ok {
		t.table.Close(r.Pid, e.FD, c.ts) // a binding whose close the trace missed
		t.fdEvent(e, r, e.FD, c.ts)
	}
	t.emit(e)
}

// closeFD forgets the descriptor's name.
func (t *tracker) closeFD(c *call) {
	t.decode(c)
	t.emit(c.e)
	if c.ok {
		t.table.Close(c.r.Pid, c.refs.FD, c.ts)
	}
}

// closeRange closes the descriptors of a range, or marks them
// close-on-exec (its flags say).
func (t *tracker) closeRange(c *call) {
	t.decode(c)
	t.emit(c.e)
	if a := &c.r.Args; c.ok {
		t.table.CloseRange(c.r.Pid, uint32(a[0]), uint32(a[1]), uint32(a[2]), c.ts)
	}
}

// unlink: open files of the removed name are named "name (deleted)", as
// /proc names them.
func (t *tracker) unlink(c *call) {
	t.decode(c)
	if c.ok && c.have[c.row.StringSlot(systable.Path)] {
		t.table.Unlink(c.e.Path, c.ts)
	}
	t.emit(c.e)
}

// rename renames the open files and working directories at or below the
// old name (unless RENAME_EXCHANGE swapped the two).
func (t *tracker) rename(c *call) {
	t.decode(c)
	e := c.e
	t.emit(e)
	const renameExchange = 2
	if c.ok && e.Info&renameExchange == 0 && c.have[0] && c.have[1] {
		t.table.Rename(e.Path, e.Path2, c.ts)
	}
}

// dupFD names the new descriptor (Event.Info) after the old one.
func (t *tracker) dupFD(c *call) {
	t.decode(c)
	t.duped(c, c.refs.FD, t.cloexec(c))
}

// duped emits a dup of descriptor old and, on success, binds the new
// descriptor (Event.Info) to old's name, with O_CLOEXEC in the event's
// open flags when it has close-on-exec.
func (t *tracker) duped(c *call, old int32, cloexec bool) {
	if c.ok && cloexec {
		c.e.OpenFlags = oCloexec
	}
	t.emit(c.e)
	if c.ok {
		t.table.Dup(c.r.Pid, old, int32(c.r.Ret), cloexec, c.ts)
	}
}

// fcntl: F_DUPFD and F_DUPFD_CLOEXEC are dups; F_SETFD changes only the
// close-on-exec flag (no event); the lock commands are locks. The BPF
// side records no other command.
func (t *tracker) fcntl(c *call) {
	r, e := c.r, c.e
	fd, cmd := argFD(r.Args[0]), uint32(r.Args[1])
	if cmd == fSetFD {
		if c.ok {
			t.table.SetCloexec(r.Pid, fd, r.Args[2]&fdCloexec != 0)
		}
		return
	}
	t.decode(c)
	if !fcntlLock(cmd) {
		if c.ok {
			e.Info = uint32(r.Ret)
		}
		t.duped(c, fd, cmd == fDupFDCloexec)
		return
	}
	// The BPF side replaced args[2] by l_type | l_whence<<16 and put
	// l_start in Pos, l_len in Size.
	e.Op, e.Info, e.IOFlags = event.OpLock, cmd, uint32(r.Args[2])
	e.Offset, e.Size = r.Pos, r.Size
	t.emit(e)
}

// fcntlLock reports whether an fcntl command is a lock command (F_GETLK,
// F_SETLK, F_SETLKW and their F_OFD_* forms).
func fcntlLock(cmd uint32) bool {
	switch cmd {
	case 5, 6, 7, 36, 37, 38:
		return true
	}
	return false
}

// chdir makes the path the working directory.
func (t *tracker) chdir(c *call) {
	t.decode(c)
	e := c.e
	t.emit(e)
	if c.ok && c.have[c.row.StringSlot(systable.Path)] && len(e.Path) > 0 && e.Path[0] == '/' {
		t.table.Chdir(c.r.Pid, e.Path, c.ts)
	}
}

// fchdir makes the descriptor's directory the working directory.
func (t *tracker) fchdir(c *call) {
	t.decode(c)
	t.emit(c.e)
	if c.ok && c.e.Path != "" {
		t.table.Chdir(c.r.Pid, c.e.Path, c.ts)
	}
}

// mmap records an executable mapping of a file as a module (--stacks).
func (t *tracker) mmap(c *call) {
	t.decode(c)
	e, r := c.e, c.r
	if t.mods != nil && c.ok && e.IOFlags&protExec != 0 && e.Path != "" {
		t.mods.mapped(r.Pid, e.ProcStart, c.ts, false, uint64(r.Ret), uint64(r.Ret)+r.Args[1], r.Args[5], e.Path,
			fileKey{dev: e.Dev.Major<<20 | e.Dev.Minor, ino: e.Inode})
	}
	t.emit(e)
}

// cloexec reports whether the call gave its new descriptor close-on-exec.
func (t *tracker) cloexec(c *call) bool {
	row := c.row
	return row.Flags&systable.AlwaysCloexec != 0 ||
		row.CloexecBit != 0 && uint32(c.r.Args[row.CloexecArg])&row.CloexecBit != 0
}

// newFD binds a new descriptor without a path to the name the kernel
// shows for it in /proc/PID/fd (Row.NewName).
func (t *tracker) newFD(c *call) {
	t.decode(c)
	e, r := c.e, c.r
	if !c.ok {
		t.emit(e)
		return
	}
	if c.row.Flags&systable.ReusesFD0 != 0 && int32(r.Args[0]) != -1 {
		t.fdEvent(e, r, int32(r.Args[0]), c.ts) // changed, not made
		t.emit(e)
		return
	}
	name := c.row.NewName
	switch {
	case strings.Contains(name, "%s"):
		name = fmt.Sprintf(name, c.str[c.row.StringSlot(systable.FDLabel)])
	case strings.Contains(name, "%d"):
		if r.SFlags&sfHaveFile != 0 {
			name = fmt.Sprintf(name, r.Ino)
		} else {
			name = strings.TrimSuffix(name, ":[%d]")
		}
	}
	e.Path = name
	t.newFlags(c)
	t.bind(c, fdtable.FD{Path: name, Cloexec: t.cloexec(c)})
}

// newFlags gives the event of a call that made a descriptor without a
// path the descriptor's flags as the kernel keeps them (its file's
// f_flags: O_RDWR, O_NONBLOCK…), with O_CLOEXEC when it has close-on-exec:
// the call's arguments say none of the access mode, which 0 would show
// as O_RDONLY. A pair's are its first descriptor's. Left 0 when the
// tracer could not read the file.
func (t *tracker) newFlags(c *call) {
	if c.r.SFlags&sfHaveFile == 0 {
		return
	}
	c.e.OpenFlags = c.r.FFlags &^ oCloexec
	if t.cloexec(c) {
		c.e.OpenFlags |= oCloexec
	}
}

// fdPair binds the two new descriptors of a pipe or socketpair: FD and
// Info, named Path and Path2.
func (t *tracker) fdPair(c *call) {
	t.decode(c)
	e, r := c.e, c.r
	if !c.ok {
		t.emit(e)
		return
	}
	cloexec := t.cloexec(c)
	t.newFlags(c)
	fd0, fd1 := int32(uint32(r.Size)), int32(uint32(r.Size>>32))
	ino0, ino1 := r.Ino, uint64(r.Pos)
	if r.SFlags&sfHaveFile == 0 {
		ino0 = 0
	}
	e.Size = 0
	e.FD, e.Info = fd0, uint32(fd1)
	e.Path, e.Path2 = pairName(c.row.NewName, ino0), pairName(c.row.NewName, ino1)
	d0 := fdtable.FD{Path: e.Path, Cloexec: cloexec}
	if ino0 != 0 {
		d0.Ino, d0.Dev = ino0, procfs.KernelDev(r.Dev)
		e.Inode, e.Dev = d0.Ino, d0.Dev
	}
	d1 := fdtable.FD{Path: e.Path2, Cloexec: cloexec}
	if ino1 != 0 {
		d1.Ino, d1.Dev = ino1, procfs.KernelDev(r.Dev)
	}
	t.emit(e)
	t.table.Open(r.Pid, fd0, d0, c.ts)
	t.table.Open(r.Pid, fd1, d1, c.ts)
}

// pairName is format ("pipe:[%d]") with ino, or its prefix ("pipe") when
// the inode is not known.
func pairName(format string, ino uint64) string {
	if ino == 0 {
		return strings.TrimSuffix(format, ":[%d]")
	}
	return fmt.Sprintf(format, ino)
}
