package fdtable

import (
	"path"
	"sort"
	"strings"

	"github.com/iotrace/iotrace/event"
)

// AtFDCWD is the dirfd that means "relative to the working directory".
const AtFDCWD = -100

// FD is what the table knows about one open descriptor.
type FD struct {
	// Path is the absolute path the descriptor was opened with, or what
	// /proc showed for it ("pipe:[123]", "socket:[45]"). Empty when it
	// could not be named.
	Path string
	// Cloexec is the descriptor's close-on-exec flag.
	Cloexec bool
	// Flags are the open flags (O_*), when known.
	Flags uint32
	// Ino and Dev identify the file when known (0 otherwise).
	Ino uint64
	Dev event.Device
	// Late marks a descriptor named from /proc after its open was missed.
	Late bool
}

// ProcInfo describes a process.
type ProcInfo struct {
	Pid, PPid uint32
	// Start is the process start time in ns from the trace start
	// (negative for processes older than the trace, 0 when unknown).
	Start   int64
	Comm    string
	Image   string
	Cmdline string
}

// Prober answers for state the table never saw (the /proc fallback). Each
// method reports false when it cannot tell.
type Prober interface {
	FD(pid uint32, fd int32) (FD, bool)
	Cwd(pid uint32) (string, bool)
	Process(pid uint32) (ProcInfo, bool)
}

type files struct {
	fds   map[int32]FD
	users []uint32 // pids sharing this table (CLONE_FILES)
}

type fsInfo struct {
	cwd   string
	known bool
	users []uint32 // pids sharing it (CLONE_FS)
}

// Proc is one process as the table knows it.
type Proc struct {
	ProcInfo
	files *files
	fs    *fsInfo
}

// Table holds the processes. The zero value is not usable; create it with
// New.
type Table struct {
	procs map[uint32]*Proc
	// Emit, when set, receives every fact (valid only during the call).
	Emit func(f *event.Fact)
	// Probe, when set, names descriptors, cwds and processes the table
	// never saw.
	Probe Prober

	fact event.Fact
	// Probed counts descriptors named by Probe; Unnamed those it could
	// not name.
	Probed, Unnamed uint64
	// inodes names the files the table has bound by their identity, for
	// block I/O that knows only its inode (writeback); bounded by
	// maxInodes and maxInodeBytes of names (emptied when full).
	inodes     map[inodeKey]string
	inodeBytes int

	// Refused counts lookups where a name found late (by Probe) belonged
	// to another file than the one the kernel saw at the call: the
	// descriptor number had been reused by then.
	Refused uint64
}

type inodeKey struct {
	ino uint64
	dev event.Device
}

// maxInodes and maxInodeBytes bound the inode names kept, by count and
// by the bytes of the names (65,536 paths of PATH_MAX would be 256 MiB).
const (
	maxInodes     = 1 << 16
	maxInodeBytes = 4 << 20
)

// bindInode remembers d's path as its file's name.
func (t *Table) bindInode(d FD) {
	if d.Ino == 0 || d.Path == "" || d.Late {
		return
	}
	if t.inodes == nil || len(t.inodes) >= maxInodes || t.inodeBytes+len(d.Path) > maxInodeBytes {
		t.inodes, t.inodeBytes = make(map[inodeKey]string), 0
	}
	k := inodeKey{d.Ino, d.Dev}
	t.inodeBytes += len(d.Path) - len(t.inodes[k])
	t.inodes[k] = d.Path
}

// InodePath returns the last name the table bound to the file with inode
// ino on file-system device dev (by an open, a rundown, a rename or an
// unlink), for block I/O that carries only the inode.
func (t *Table) InodePath(ino uint64, dev event.Device) (string, bool) {
	p, ok := t.inodes[inodeKey{ino, dev}]
	return p, ok
}

// New returns an empty table.
func New() *Table { return &Table{procs: make(map[uint32]*Proc)} }

// Len returns the number of processes.
func (t *Table) Len() int { return len(t.procs) }

// Pids returns the processes' ids, in no order.
func (t *Table) Pids() []uint32 {
	out := make([]uint32, 0, len(t.procs))
	for pid := range t.procs {
		out = append(out, pid)
	}
	return out
}

func (t *Table) emit(f *event.Fact) {
	if t.Emit != nil {
		t.Emit(f)
	}
}

func (t *Table) nameFact(p *Proc, space event.HandleSpace, handle uint64, ts int64, name string, end, rundown bool) {
	f := &t.fact
	*f = event.Fact{Kind: event.FactName, Time: ts, Rundown: rundown, End: end, Space: space,
		Pid: p.Pid, ProcStart: p.Start, Handle: handle, Name: name}
	t.emit(f)
}

func (t *Table) procFact(p *Proc, ts int64, end, rundown bool) {
	f := &t.fact
	*f = event.Fact{Kind: event.FactProcess, Time: ts, Rundown: rundown, End: end,
		Pid: p.Pid, ProcStart: p.Start, PPid: p.PPid, Name: p.Comm, Image: p.Image, Detail: p.Cmdline}
	t.emit(f)
}

// fdFacts reports fd's binding change for every process sharing tbl.
func (t *Table) fdFacts(tbl *files, fd int32, ts int64, name string, end bool) {
	for _, pid := range tbl.users {
		if p := t.procs[pid]; p != nil {
			t.nameFact(p, event.SpaceFD, uint64(uint32(fd)), ts, name, end, false)
		}
	}
}

func newProc(info ProcInfo) *Proc {
	return &Proc{ProcInfo: info,
		files: &files{fds: make(map[int32]FD), users: []uint32{info.Pid}},
		fs:    &fsInfo{users: []uint32{info.Pid}}}
}

// Lookup returns process pid, or nil.
func (t *Table) Lookup(pid uint32) *Proc { return t.procs[pid] }

// Ensure returns process pid, creating it (from Probe when it can) when the
// table has not seen it.
func (t *Table) Ensure(pid uint32, ts int64) *Proc {
	if p := t.procs[pid]; p != nil {
		return p
	}
	info := ProcInfo{Pid: pid}
	known := false
	if t.Probe != nil {
		if i, ok := t.Probe.Process(pid); ok {
			info, known = i, true
		}
	}
	p := newProc(info)
	t.procs[pid] = p
	if known {
		t.procFact(p, ts, false, true)
	}
	return p
}

// Rundown adds a process found by a snapshot of state (a /proc walk),
// with its working directory and descriptors. The facts it emits are
// rundown facts. cwd may be empty when unknown.
func (t *Table) Rundown(info ProcInfo, cwd string, fds map[int32]FD, ts int64, quiet bool) {
	p := newProc(info)
	t.procs[info.Pid] = p
	if !quiet {
		t.procFact(p, ts, false, true)
	}
	if cwd != "" {
		p.fs.cwd, p.fs.known = cwd, true
		if !quiet {
			t.nameFact(p, event.SpaceCwd, 0, ts, cwd, false, true)
		}
	}
	keys := make([]int32, 0, len(fds))
	for fd := range fds {
		keys = append(keys, fd)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, fd := range keys {
		d := fds[fd]
		p.files.fds[fd] = d
		t.bindInode(d)
		if !quiet {
			t.nameFact(p, event.SpaceFD, uint64(uint32(fd)), ts, d.Path, false, true)
		}
	}
}

// FD returns what the table knows about descriptor fd of pid, asking Probe
// for a descriptor it has never seen. ok is false when the descriptor
// cannot be named.
func (t *Table) FD(pid uint32, fd int32, ts int64) (FD, bool) {
	if fd < 0 {
		return FD{}, false
	}
	p := t.Ensure(pid, ts)
	if d, ok := p.files.fds[fd]; ok {
		return d, d.Path != ""
	}
	var d FD
	if t.Probe != nil {
		if pd, ok := t.Probe.FD(pid, fd); ok {
			d = pd
			d.Late = true
			t.Probed++
		}
	}
	if d.Path == "" {
		t.Unnamed++
	}
	// Remember the answer, a negative one too, so that /proc is asked
	// once per descriptor.
	p.files.fds[fd] = d
	if d.Path != "" {
		f := &t.fact
		*f = event.Fact{Kind: event.FactName, Time: ts, Rundown: true, Space: event.SpaceFD,
			Pid: p.Pid, ProcStart: p.Start, Handle: uint64(uint32(fd)), Name: d.Path}
		t.emit(f)
	}
	return d, d.Path != ""
}

// FDOf is FD for a call whose file the kernel identified at the call
// (ino and dev; ino 0 when unknown). A name found late (by Probe) is only
// given when it names that same file: by the time /proc is asked, the
// descriptor may have been closed and its number reused by another file.
// A refused name is counted in Refused and the call stays unnamed. A
// name the table bound from a traced open is trusted as it is.
func (t *Table) FDOf(pid uint32, fd int32, ts int64, ino uint64, dev event.Device) (FD, bool) {
	d, ok := t.FD(pid, fd, ts)
	if !ok || !d.Late || ino == 0 {
		return d, ok
	}
	if d.Ino != ino || d.Dev != dev {
		t.Refused++
		return FD{}, false
	}
	return d, true
}

// Open binds descriptor fd of pid to d (an open, a socket, a descriptor
// received).
func (t *Table) Open(pid uint32, fd int32, d FD, ts int64) {
	if fd < 0 {
		return
	}
	p := t.Ensure(pid, ts)
	p.files.fds[fd] = d
	t.bindInode(d)
	t.fdFacts(p.files, fd, ts, d.Path, false)
}

// Close unbinds descriptor fd of pid and returns what it was.
func (t *Table) Close(pid uint32, fd int32, ts int64) (FD, bool) {
	p := t.procs[pid]
	if p == nil {
		return FD{}, false
	}
	d, ok := p.files.fds[fd]
	if !ok {
		return FD{}, false
	}
	delete(p.files.fds, fd)
	t.fdFacts(p.files, fd, ts, "", true)
	return d, true
}

// Close-range flags (linux/close_range.h).
const (
	CloseRangeUnshare = 1 << 1
	CloseRangeCloexec = 1 << 2
)

// CloseRange applies close_range(first, last, flags) to pid.
func (t *Table) CloseRange(pid uint32, first, last uint32, flags uint32, ts int64) {
	p := t.procs[pid]
	if p == nil {
		return
	}
	if flags&CloseRangeUnshare != 0 {
		t.unshareFiles(p)
	}
	var hit []int32
	for fd := range p.files.fds {
		if uint32(fd) >= first && uint32(fd) <= last {
			hit = append(hit, fd)
		}
	}
	sort.Slice(hit, func(i, j int) bool { return hit[i] < hit[j] })
	for _, fd := range hit {
		if flags&CloseRangeCloexec != 0 {
			d := p.files.fds[fd]
			d.Cloexec = true
			p.files.fds[fd] = d
			continue
		}
		delete(p.files.fds, fd)
		t.fdFacts(p.files, fd, ts, "", true)
	}
}

// Dup makes newfd of pid a duplicate of oldfd (dup, dup2, dup3,
// fcntl(F_DUPFD*)). The new descriptor has close-on-exec set only when
// cloexec is.
func (t *Table) Dup(pid uint32, oldfd, newfd int32, cloexec bool, ts int64) {
	if newfd < 0 {
		return
	}
	d, _ := t.FD(pid, oldfd, ts)
	d.Cloexec = cloexec
	t.Open(pid, newfd, d, ts)
}

// SetCloexec sets or clears the close-on-exec flag of fd (fcntl F_SETFD).
func (t *Table) SetCloexec(pid uint32, fd int32, on bool) {
	p := t.procs[pid]
	if p == nil {
		return
	}
	if d, ok := p.files.fds[fd]; ok {
		d.Cloexec = on
		p.files.fds[fd] = d
	}
}

// Cwd returns the working directory of pid, asking Probe when unknown.
func (t *Table) Cwd(pid uint32, ts int64) (string, bool) {
	p := t.Ensure(pid, ts)
	if !p.fs.known && t.Probe != nil {
		if cwd, ok := t.Probe.Cwd(pid); ok {
			p.fs.cwd, p.fs.known = cwd, true
			t.nameFact(p, event.SpaceCwd, 0, ts, cwd, false, true)
		}
	}
	return p.fs.cwd, p.fs.known
}

// Chdir sets the working directory of pid (and of every process sharing
// it) to dir, an absolute path.
func (t *Table) Chdir(pid uint32, dir string, ts int64) {
	p := t.Ensure(pid, ts)
	p.fs.cwd, p.fs.known = dir, true
	for _, u := range p.fs.users {
		if q := t.procs[u]; q != nil {
			t.nameFact(q, event.SpaceCwd, 0, ts, dir, false, false)
		}
	}
}

// Abs resolves name as the kernel would for a *at system call of pid:
// absolute names as they are, relative ones against dirfd (AtFDCWD: the
// working directory). An empty name (AT_EMPTY_PATH) names dirfd itself.
// The result is lexically cleaned; symbolic links are not followed. ok is
// false when the base directory is unknown (name is then returned as
// given).
func (t *Table) Abs(pid uint32, dirfd int32, name string, ts int64) (string, bool) {
	if strings.HasPrefix(name, "/") {
		return path.Clean(name), true
	}
	var base string
	var ok bool
	if dirfd == AtFDCWD {
		base, ok = t.Cwd(pid, ts)
	} else {
		var d FD
		d, ok = t.FD(pid, dirfd, ts)
		base = d.Path
		ok = ok && strings.HasPrefix(base, "/")
	}
	if !ok {
		return name, false
	}
	if name == "" {
		return base, true
	}
	return path.Join(base, name), true
}

// Fork adds child pid, forked by ppid. Its descriptor table is a copy of
// the parent's, or the parent's own with sharedFiles (CLONE_FILES); its
// working directory likewise with sharedFS (CLONE_FS).
func (t *Table) Fork(ppid, pid uint32, start int64, comm string, sharedFiles, sharedFS bool, ts int64) {
	parent := t.Ensure(ppid, ts)
	if old := t.procs[pid]; old != nil {
		// A pid reused without us seeing the exit.
		t.Exit(pid, ts)
	}
	c := &Proc{ProcInfo: ProcInfo{Pid: pid, PPid: ppid, Start: start, Comm: comm,
		Image: parent.Image, Cmdline: parent.Cmdline}}
	if sharedFiles {
		c.files = parent.files
		c.files.users = append(c.files.users, pid)
	} else {
		c.files = &files{fds: make(map[int32]FD, len(parent.files.fds)), users: []uint32{pid}}
		for fd, d := range parent.files.fds {
			c.files.fds[fd] = d
		}
	}
	if sharedFS {
		c.fs = parent.fs
		c.fs.users = append(c.fs.users, pid)
	} else {
		c.fs = &fsInfo{cwd: parent.fs.cwd, known: parent.fs.known, users: []uint32{pid}}
	}
	t.procs[pid] = c
	t.procFact(c, ts, false, false)
	if c.fs.known {
		t.nameFact(c, event.SpaceCwd, 0, ts, c.fs.cwd, false, false)
	}
	keys := make([]int32, 0, len(c.files.fds))
	for fd, d := range c.files.fds {
		if d.Path != "" {
			keys = append(keys, fd)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, fd := range keys {
		t.nameFact(c, event.SpaceFD, uint64(uint32(fd)), ts, c.files.fds[fd].Path, false, false)
	}
}

// Exec records that pid replaced its image: close-on-exec descriptors are
// closed and the process gets its new name, image and command line.
func (t *Table) Exec(pid uint32, start int64, comm, image, cmdline string, ts int64) {
	p := t.Ensure(pid, ts)
	if start != 0 {
		p.Start = start
	}
	// execve unshares the descriptor table before closing.
	t.unshareFiles(p)
	var closed []int32
	for fd, d := range p.files.fds {
		if d.Cloexec {
			closed = append(closed, fd)
		}
	}
	sort.Slice(closed, func(i, j int) bool { return closed[i] < closed[j] })
	for _, fd := range closed {
		delete(p.files.fds, fd)
		t.nameFact(p, event.SpaceFD, uint64(uint32(fd)), ts, "", true, false)
	}
	p.Comm, p.Image, p.Cmdline = comm, image, cmdline
	t.procFact(p, ts, false, false)
}

// Exit removes process pid.
func (t *Table) Exit(pid uint32, ts int64) {
	p := t.procs[pid]
	if p == nil {
		return
	}
	keys := make([]int32, 0, len(p.files.fds))
	for fd, d := range p.files.fds {
		if d.Path != "" {
			keys = append(keys, fd)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, fd := range keys {
		t.nameFact(p, event.SpaceFD, uint64(uint32(fd)), ts, "", true, false)
	}
	p.files.users = remove(p.files.users, pid)
	p.fs.users = remove(p.fs.users, pid)
	t.procFact(p, ts, true, false)
	delete(t.procs, pid)
}

// Rename renames every open descriptor and working directory at oldpath
// or below it to newpath, in every process, as the kernel's names do.
func (t *Table) Rename(oldpath, newpath string, ts int64) {
	if oldpath == newpath || oldpath == "" || newpath == "" {
		return
	}
	moved := func(p string) (string, bool) {
		if p == oldpath {
			return newpath, true
		}
		if strings.HasPrefix(p, oldpath) && len(p) > len(oldpath) && p[len(oldpath)] == '/' {
			return newpath + p[len(oldpath):], true
		}
		return "", false
	}
	seenFiles := map[*files]bool{}
	seenFS := map[*fsInfo]bool{}
	pids := make([]uint32, 0, len(t.procs))
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, pid := range pids {
		p := t.procs[pid]
		if !seenFiles[p.files] {
			seenFiles[p.files] = true
			var hit []int32
			for fd, d := range p.files.fds {
				if _, ok := moved(d.Path); ok {
					hit = append(hit, fd)
				}
			}
			sort.Slice(hit, func(i, j int) bool { return hit[i] < hit[j] })
			for _, fd := range hit {
				d := p.files.fds[fd]
				d.Path, _ = moved(d.Path)
				p.files.fds[fd] = d
				t.bindInode(d)
				t.fdFacts(p.files, fd, ts, d.Path, false)
			}
		}
		if !seenFS[p.fs] {
			seenFS[p.fs] = true
			if n, ok := moved(p.fs.cwd); ok && p.fs.known {
				p.fs.cwd = n
				for _, u := range p.fs.users {
					if q := t.procs[u]; q != nil {
						t.nameFact(q, event.SpaceCwd, 0, ts, n, false, false)
					}
				}
			}
		}
	}
}

// Deleted is what the kernel appends to the name of an open file (or a
// working directory) whose name was removed.
const Deleted = " (deleted)"

// Unlink marks every open descriptor and working directory named path, in
// every process, as the kernel's names do once path is removed: path
// followed by " (deleted)", as /proc shows files removed before the trace.
func (t *Table) Unlink(path string, ts int64) {
	if path == "" {
		return
	}
	seenFiles := map[*files]bool{}
	seenFS := map[*fsInfo]bool{}
	pids := make([]uint32, 0, len(t.procs))
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, pid := range pids {
		p := t.procs[pid]
		if !seenFiles[p.files] {
			seenFiles[p.files] = true
			var hit []int32
			for fd, d := range p.files.fds {
				if d.Path == path {
					hit = append(hit, fd)
				}
			}
			sort.Slice(hit, func(i, j int) bool { return hit[i] < hit[j] })
			for _, fd := range hit {
				d := p.files.fds[fd]
				d.Path = path + Deleted
				p.files.fds[fd] = d
				t.bindInode(d)
				t.fdFacts(p.files, fd, ts, d.Path, false)
			}
		}
		if !seenFS[p.fs] {
			seenFS[p.fs] = true
			if p.fs.known && p.fs.cwd == path {
				p.fs.cwd = path + Deleted
				for _, u := range p.fs.users {
					if q := t.procs[u]; q != nil {
						t.nameFact(q, event.SpaceCwd, 0, ts, p.fs.cwd, false, false)
					}
				}
			}
		}
	}
}

// SetComm records a new name for pid (seen on one of its events).
func (t *Table) SetComm(pid uint32, comm string) {
	if p := t.procs[pid]; p != nil {
		p.Comm = comm
	}
}

func (t *Table) unshareFiles(p *Proc) {
	if len(p.files.users) <= 1 {
		return
	}
	p.files.users = remove(p.files.users, p.Pid)
	nf := &files{fds: make(map[int32]FD, len(p.files.fds)), users: []uint32{p.Pid}}
	for fd, d := range p.files.fds {
		nf.fds[fd] = d
	}
	p.files = nf
}

func remove(s []uint32, v uint32) []uint32 {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
