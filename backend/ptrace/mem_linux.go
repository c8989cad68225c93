//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend/ebpf/procfs"
)

// Reading a stopped tracee: its registers through PTRACE_GET_SYSCALL_INFO,
// its memory through process_vm_readv, its descriptors through /proc.

// syscallInfo is struct ptrace_syscall_info (linux/ptrace.h).
type syscallInfo struct {
	op   uint8
	arch uint32
	// nr and args (entry, seccomp); rval and isError (exit).
	nr      uint64
	args    [6]uint64
	rval    int64
	isError bool
}

// ptrace_syscall_info.op values.
const (
	infoNone    = 0
	infoEntry   = 1
	infoExit    = 2
	infoSeccomp = 3
	infoSize    = 88
)

// ptrace makes a request; none blocks, so it is made without telling the
// scheduler.
func ptrace(req, pid int, addr, data uintptr) error {
	if _, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0); e != 0 {
		return e
	}
	return nil
}

// getSyscallInfo reads the call tid is stopped in.
func getSyscallInfo(tid int, si *syscallInfo) error {
	var b [infoSize]byte
	if err := ptrace(unix.PTRACE_GET_SYSCALL_INFO, tid, infoSize, uintptr(unsafe.Pointer(&b[0]))); err != nil {
		return err
	}
	le := binary.LittleEndian
	*si = syscallInfo{op: b[0], arch: le.Uint32(b[4:])}
	switch si.op {
	case infoEntry, infoSeccomp:
		si.nr = le.Uint64(b[24:])
		for i := range si.args {
			si.args[i] = le.Uint64(b[32+8*i:])
		}
	case infoExit:
		si.rval = int64(le.Uint64(b[24:]))
		si.isError = b[32] != 0
	}
	return nil
}

// readMem reads len(buf) bytes at addr of tid; n is how many it could.
func readMem(tid int, addr uint64, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	return unix.ProcessVMReadv(tid, local, remote, 0)
}

// pathMax is the longest string read (PATH_MAX with its NUL).
const pathMax = 4096

// readString reads the NUL-terminated string at addr, at most pathMax
// bytes, page by page (a string near the end of a mapping is read up to
// it). truncated is set when it filled pathMax without a NUL.
func readString(tid int, addr uint64, buf []byte) (s string, truncated, ok bool) {
	buf = buf[:0]
	for len(buf) < pathMax {
		chunk := 4096 - int(addr%4096)
		if chunk > pathMax-len(buf) {
			chunk = pathMax - len(buf)
		}
		start := len(buf)
		buf = buf[:start+chunk]
		n, err := readMem(tid, addr, buf[start:])
		if err != nil || n <= 0 {
			return "", false, false
		}
		buf = buf[:start+n]
		if i := bytes.IndexByte(buf[start:], 0); i >= 0 {
			return string(buf[:start+i]), false, true
		}
		addr += uint64(n)
	}
	return string(buf), true, true
}

// iovCap is the most iovecs summed (the kernel's UIO_MAXIOV).
const iovCap = 1024

// iovSum returns the sum of the lengths of the cnt iovecs at addr;
// partial is set when not all were read.
func iovSum(tid int, addr uint64, cnt uint64) (sum uint64, partial bool) {
	if cnt > iovCap {
		cnt, partial = iovCap, true
	}
	buf := make([]byte, 16*cnt)
	n, err := readMem(tid, addr, buf)
	if err != nil {
		return 0, true
	}
	if n < len(buf) {
		partial = true
	}
	for i := 0; i+16 <= n; i += 16 {
		sum += binary.LittleEndian.Uint64(buf[i+8:])
	}
	return sum, partial
}

// fdInfo reads /proc/TID/fdinfo/FD.
func fdInfo(proc string, tid int, fd int32) ([]byte, error) {
	return os.ReadFile(proc + "/" + strconv.Itoa(tid) + "/fdinfo/" + strconv.Itoa(int(fd)))
}

// fdPos returns the file position of descriptor fd of tid
// (/proc/TID/fdinfo/FD).
func fdPos(proc string, tid int, fd int32) (int64, bool) {
	b, err := fdInfo(proc, tid, fd)
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	v, ok := bytes.CutPrefix(line, []byte("pos:"))
	if !ok {
		return 0, false
	}
	p, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	return p, err == nil
}

// fdFlags returns the open flags of descriptor fd of tid as the kernel
// keeps them (/proc/TID/fdinfo/FD), less O_CLOEXEC, which fdinfo adds
// for close-on-exec: the file's f_flags, as the eBPF backend reads them.
func fdFlags(proc string, tid int, fd int32) (uint32, bool) {
	b, err := fdInfo(proc, tid, fd)
	if err != nil {
		return 0, false
	}
	f, ok := procfs.FDInfoFlags(b)
	return f &^ unix.O_CLOEXEC, ok
}

// fdFile returns the inode and the kernel's dev_t of the file behind
// descriptor fd of tid.
func fdFile(proc string, tid int, fd int32) (ino uint64, dev uint32, ok bool) {
	var st unix.Stat_t
	if unix.Stat(proc+"/"+strconv.Itoa(tid)+"/fd/"+strconv.Itoa(int(fd)), &st) != nil {
		return 0, 0, false
	}
	return st.Ino, unix.Major(st.Dev)<<20 | unix.Minor(st.Dev), true
}

// maxFrames is the most frames of a user stack (the eBPF backend's
// MAX_STACK_DEPTH).
const maxFrames = 127

// userStack walks the user stack of the stopped thread tid by frame
// pointers, as the kernel's walk does for the eBPF backend: the program
// counter, then each frame record's return address ([fp] the caller's
// frame pointer, [fp+8] the return address), while frame pointers go up
// the stack. Code built without frame pointers ends the walk early (or
// reads a wrong frame, which the decoder cuts at the first address no
// module holds).
func userStack(tid int) []uint64 {
	pc, fp, err := frameRegs(tid)
	if err != nil {
		return nil
	}
	ips := []uint64{pc}
	var rec [16]byte
	for len(ips) < maxFrames && fp != 0 && fp%8 == 0 {
		if n, _ := readMem(tid, fp, rec[:]); n != len(rec) {
			break
		}
		next, ret := binary.LittleEndian.Uint64(rec[:]), binary.LittleEndian.Uint64(rec[8:])
		if ret == 0 {
			break
		}
		ips = append(ips, ret)
		if next <= fp {
			break
		}
		fp = next
	}
	return ips
}
