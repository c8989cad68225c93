package procfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/backend/ebpf/fdtable"
	"github.com/iotrace/iotrace/event"
)

// ClockTicks is USER_HZ, the unit of /proc/PID/stat times on every Linux
// architecture iotrace supports.
const ClockTicks = 100

// FS reads one /proc tree.
type FS struct {
	// Root is the mount point, normally "/proc".
	Root string
	// Origin is the CLOCK_BOOTTIME reading (ns) of trace time 0; start
	// times are returned relative to it.
	Origin int64
	// NoFDInfo skips /proc/PID/fdinfo (open flags and close-on-exec).
	NoFDInfo bool
}

// Stat is the part of /proc/PID/stat iotrace uses.
type Stat struct {
	Pid, PPid uint32
	Comm      string
	// StartTicks is the start time in clock ticks after boot.
	StartTicks uint64
}

// ParseStat parses the contents of /proc/PID/stat. The command name may
// hold spaces and parentheses; it ends at the last ')'.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(b, '(')
	close := bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return s, fmt.Errorf("stat %.40q: no (comm)", b)
	}
	pid, err := strconv.ParseUint(string(bytes.TrimSpace(b[:open])), 10, 32)
	if err != nil {
		return s, fmt.Errorf("stat: pid: %w", err)
	}
	s.Pid = uint32(pid)
	s.Comm = string(b[open+1 : close])
	f := strings.Fields(string(b[close+1:]))
	// f[0] is field 3 (state); ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return s, fmt.Errorf("stat of pid %d: %d fields after comm, want at least 20", pid, len(f))
	}
	ppid, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil {
		return s, fmt.Errorf("stat of pid %d: ppid %q: %w", pid, f[1], err)
	}
	s.PPid = uint32(ppid)
	s.StartTicks, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return s, fmt.Errorf("stat of pid %d: starttime %q: %w", pid, f[19], err)
	}
	return s, nil
}

// StartNanos converts a start time in clock ticks after boot to ns from
// trace time 0.
func (fs *FS) StartNanos(ticks uint64) int64 {
	return int64(ticks)*(1_000_000_000/ClockTicks) - fs.Origin
}

func (fs *FS) path(pid uint32, elem ...string) string {
	return filepath.Join(append([]string{fs.Root, strconv.FormatUint(uint64(pid), 10)}, elem...)...)
}

// Process implements fdtable.Prober: the process's name, parent, start,
// executable and command line.
func (fs *FS) Process(pid uint32) (fdtable.ProcInfo, bool) {
	b, err := os.ReadFile(fs.path(pid, "stat"))
	if err != nil {
		return fdtable.ProcInfo{}, false
	}
	st, err := ParseStat(b)
	if err != nil {
		return fdtable.ProcInfo{}, false
	}
	info := fdtable.ProcInfo{Pid: pid, PPid: st.PPid, Comm: st.Comm, Start: fs.StartNanos(st.StartTicks)}
	info.Image, _ = os.Readlink(fs.path(pid, "exe"))
	if c, err := os.ReadFile(fs.path(pid, "cmdline")); err == nil {
		info.Cmdline = Cmdline(c)
	}
	return info, true
}

// Cmdline turns a NUL-separated argument vector into one line, quoting
// arguments that need it.
func Cmdline(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return ""
	}
	args := bytes.Split(b, []byte{0})
	var sb strings.Builder
	for i, a := range args {
		if i > 0 {
			sb.WriteByte(' ')
		}
		s := string(a)
		if s == "" || strings.ContainsAny(s, " \t\n\"'\\$`") {
			s = strconv.Quote(s)
		}
		sb.WriteString(s)
	}
	return sb.String()
}

// Cwd implements fdtable.Prober.
func (fs *FS) Cwd(pid uint32) (string, bool) {
	p, err := os.Readlink(fs.path(pid, "cwd"))
	return p, err == nil
}

// FD implements fdtable.Prober: the descriptor's target, inode, open flags
// and close-on-exec flag.
func (fs *FS) FD(pid uint32, fd int32) (fdtable.FD, bool) {
	n := strconv.FormatInt(int64(fd), 10)
	link := fs.path(pid, "fd", n)
	target, err := os.Readlink(link)
	if err != nil {
		return fdtable.FD{}, false
	}
	d := fdtable.FD{Path: target}
	if ino, dev, ok := statFile(link); ok {
		d.Ino, d.Dev = ino, dev
	}
	if !fs.NoFDInfo {
		if b, err := os.ReadFile(fs.path(pid, "fdinfo", n)); err == nil {
			if flags, ok := FDInfoFlags(b); ok {
				d.Flags = flags &^ OCloexec
				d.Cloexec = flags&OCloexec != 0
			}
			// The open file's own inode number (file_inode, as the BPF
			// side reads it), where stat of the link may report another
			// (overlayfs).
			if ino, ok := FDInfoIno(b); ok {
				d.Ino = ino
			}
		}
	}
	return d, true
}

// OCloexec is O_CLOEXEC, the same on every Linux architecture.
const OCloexec = 0o2000000

// FDInfoFlags returns the "flags:" field (octal) of /proc/PID/fdinfo/N.
func FDInfoFlags(b []byte) (uint32, bool) {
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("flags:")); ok {
			f, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32)
			return uint32(f), err == nil
		}
	}
	return 0, false
}

// FDInfoIno returns the "ino:" field (decimal) of /proc/PID/fdinfo/N
// (Linux 5.14 and later).
func FDInfoIno(b []byte) (uint64, bool) {
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("ino:")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// Process is one process of a snapshot.
type Process struct {
	fdtable.ProcInfo
	Cwd string
	FDs map[int32]fdtable.FD
}

// Pids lists the numeric entries of the tree.
func (fs *FS) Pids() ([]uint32, error) {
	ents, err := os.ReadDir(fs.Root)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", fs.Root, err)
	}
	var out []uint32
	for _, e := range ents {
		if v, err := strconv.ParseUint(e.Name(), 10, 32); err == nil {
			out = append(out, uint32(v))
		}
	}
	return out, nil
}

// Snapshot reads process pid with its cwd and descriptors. ok is false
// when the process is gone.
func (fs *FS) Snapshot(pid uint32) (Process, bool) {
	return fs.SnapshotFDs(pid, nil)
}

// SnapshotFDs is Snapshot with only the descriptors keep keeps (nil: all)
// read: a caller that knows which matter (its own inherited ones) spares
// the reads of the others, three per descriptor.
func (fs *FS) SnapshotFDs(pid uint32, keep func(fd int32) bool) (Process, bool) {
	info, ok := fs.Process(pid)
	if !ok {
		return Process{}, false
	}
	p := Process{ProcInfo: info, FDs: map[int32]fdtable.FD{}}
	p.Cwd, _ = fs.Cwd(pid)
	ents, err := os.ReadDir(fs.path(pid, "fd"))
	if err != nil {
		return p, true // kernel threads, permission: no descriptors
	}
	for _, e := range ents {
		v, err := strconv.ParseInt(e.Name(), 10, 32)
		if err != nil || (keep != nil && !keep(int32(v))) {
			continue
		}
		if d, ok := fs.FD(pid, int32(v)); ok {
			p.FDs[int32(v)] = d
		}
	}
	return p, true
}

// Descendants returns pids and every process below them in the parent
// tree of procs.
func Descendants(procs map[uint32]uint32, pids []uint32) map[uint32]bool {
	want := map[uint32]bool{}
	for _, p := range pids {
		want[p] = true
	}
	children := map[uint32][]uint32{}
	for pid, ppid := range procs {
		children[ppid] = append(children[ppid], pid)
	}
	queue := append([]uint32(nil), pids...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !want[c] {
				want[c] = true
				queue = append(queue, c)
			}
		}
	}
	return want
}

// KernelDev converts a kernel-internal dev_t (major << 20 | minor) to a
// Device.
func KernelDev(dev uint32) event.Device {
	return event.Device{Major: dev >> 20, Minor: dev & 0xfffff}
}

// UserDev converts a user-space dev_t (as in stat(2)) to a Device.
func UserDev(dev uint64) event.Device {
	major := uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff)
	minor := uint32(dev&0xff) | uint32((dev>>12)&^0xff)
	return event.Device{Major: major, Minor: minor}
}

// FileID returns the inode and device of the file at path (following
// links); ok is false when it cannot be read.
func FileID(path string) (ino uint64, dev event.Device, ok bool) { return statFile(path) }
