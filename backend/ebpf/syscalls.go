package ebpf

import "github.com/iotrace/iotrace/event"

// sysKind identifies a traced system call independently of the
// architecture's syscall numbers. It travels in the attach cookie of the
// tracepoint links and in every record.
type sysKind uint16

// Traced system calls. Values are stable within one build only (records
// are decoded by the same binary that loaded the programs).
const (
	kNone sysKind = iota
	kOpen
	kOpenat
	kOpenat2
	kCreat
	kRead
	kPread64
	kReadv
	kPreadv
	kPreadv2
	kWrite
	kPwrite64
	kWritev
	kPwritev
	kPwritev2
	kClose
	kCloseRange
	kLseek
	kFsync
	kFdatasync
	kSyncFileRange
	kSyncfs
	kTruncate
	kFtruncate
	kFallocate
	kUnlink
	kUnlinkat
	kRename
	kRenameat
	kRenameat2
	kMkdir
	kMkdirat
	kRmdir
	kNewfstatat
	kStatx
	kFstat
	kStat
	kLstat
	kGetdents64
	kGetdents
	kMmap
	kSendfile
	kCopyFileRange
	kSplice
	kDup
	kDup2
	kDup3
	kFcntl
	kChdir
	kFchdir
	kExecve
	kExecveat
	numKinds
)

// Cookie bits, mirrored in bpf/iotrace.bpf.c (CK_*).
const (
	ckFPos    = 1 << 32 // read f_pos, inode and f_flags of args[0] at enter
	ckIOV     = 1 << 33 // sum the iovec lengths of args[1]/args[2]
	ckMmap    = 1 << 34 // file-backed mappings only
	ckFcntl   = 1 << 35 // fcntl dup forms and F_SETFD only
	ckOpenat2 = 1 << 36 // read struct open_how
	ckNewFD   = 1 << 37 // inode of the returned fd at exit
	ckPosArg  = 1 << 38 // preadv2/pwritev2: offset -1 means the file position
	noArg     = 0xf
)

// sysInfo describes one traced system call.
type sysInfo struct {
	// Name is the system call's name (Event.Native).
	Name string
	// TP is the tracepoint name without the sys_enter_/sys_exit_ prefix.
	TP string
	// Op is the normalized operation.
	Op event.Op
	// Path0 and Path1 are the argument indexes of path strings, -1 for
	// none.
	Path0, Path1 int8
	// Flags are cookie bits.
	Flags uint64
	// State marks system calls that change the descriptor table or the
	// working directory: they are traced even when their op is filtered
	// out, so that names stay right.
	State bool
}

var sysTable = [numKinds]sysInfo{
	kOpen:          {"open", "open", event.OpOpen, 0, -1, ckNewFD, true},
	kOpenat:        {"openat", "openat", event.OpOpen, 1, -1, ckNewFD, true},
	kOpenat2:       {"openat2", "openat2", event.OpOpen, 1, -1, ckNewFD | ckOpenat2, true},
	kCreat:         {"creat", "creat", event.OpOpen, 0, -1, ckNewFD, true},
	kRead:          {"read", "read", event.OpRead, -1, -1, ckFPos, false},
	kPread64:       {"pread64", "pread64", event.OpRead, -1, -1, 0, false},
	kReadv:         {"readv", "readv", event.OpRead, -1, -1, ckFPos | ckIOV, false},
	kPreadv:        {"preadv", "preadv", event.OpRead, -1, -1, ckIOV, false},
	kPreadv2:       {"preadv2", "preadv2", event.OpRead, -1, -1, ckIOV | ckFPos | ckPosArg, false},
	kWrite:         {"write", "write", event.OpWrite, -1, -1, ckFPos, false},
	kPwrite64:      {"pwrite64", "pwrite64", event.OpWrite, -1, -1, 0, false},
	kWritev:        {"writev", "writev", event.OpWrite, -1, -1, ckFPos | ckIOV, false},
	kPwritev:       {"pwritev", "pwritev", event.OpWrite, -1, -1, ckIOV, false},
	kPwritev2:      {"pwritev2", "pwritev2", event.OpWrite, -1, -1, ckIOV | ckFPos | ckPosArg, false},
	kClose:         {"close", "close", event.OpClose, -1, -1, 0, true},
	kCloseRange:    {"close_range", "close_range", event.OpClose, -1, -1, 0, true},
	kLseek:         {"lseek", "lseek", event.OpSeek, -1, -1, 0, false},
	kFsync:         {"fsync", "fsync", event.OpFlush, -1, -1, 0, false},
	kFdatasync:     {"fdatasync", "fdatasync", event.OpFlush, -1, -1, 0, false},
	kSyncFileRange: {"sync_file_range", "sync_file_range", event.OpFlush, -1, -1, 0, false},
	kSyncfs:        {"syncfs", "syncfs", event.OpFlush, -1, -1, 0, false},
	kTruncate:      {"truncate", "truncate", event.OpSetInfo, 0, -1, 0, false},
	kFtruncate:     {"ftruncate", "ftruncate", event.OpSetInfo, -1, -1, 0, false},
	kFallocate:     {"fallocate", "fallocate", event.OpSetInfo, -1, -1, 0, false},
	kUnlink:        {"unlink", "unlink", event.OpDelete, 0, -1, 0, false},
	kUnlinkat:      {"unlinkat", "unlinkat", event.OpDelete, 1, -1, 0, false},
	kRename:        {"rename", "rename", event.OpRename, 0, 1, 0, true},
	kRenameat:      {"renameat", "renameat", event.OpRename, 1, 3, 0, true},
	kRenameat2:     {"renameat2", "renameat2", event.OpRename, 1, 3, 0, true},
	kMkdir:         {"mkdir", "mkdir", event.OpMkdir, 0, -1, 0, false},
	kMkdirat:       {"mkdirat", "mkdirat", event.OpMkdir, 1, -1, 0, false},
	kRmdir:         {"rmdir", "rmdir", event.OpDelete, 0, -1, 0, false},
	kNewfstatat:    {"newfstatat", "newfstatat", event.OpStat, 1, -1, 0, false},
	kStatx:         {"statx", "statx", event.OpStat, 1, -1, 0, false},
	kFstat:         {"fstat", "newfstat", event.OpStat, -1, -1, 0, false},
	kStat:          {"stat", "newstat", event.OpStat, 0, -1, 0, false},
	kLstat:         {"lstat", "newlstat", event.OpStat, 0, -1, 0, false},
	kGetdents64:    {"getdents64", "getdents64", event.OpReadDir, -1, -1, 0, false},
	kGetdents:      {"getdents", "getdents", event.OpReadDir, -1, -1, 0, false},
	kMmap:          {"mmap", "mmap", event.OpMmap, -1, -1, ckMmap, false},
	kSendfile:      {"sendfile", "sendfile64", event.OpCopy, -1, -1, 0, false},
	kCopyFileRange: {"copy_file_range", "copy_file_range", event.OpCopy, -1, -1, 0, false},
	kSplice:        {"splice", "splice", event.OpCopy, -1, -1, 0, false},
	kDup:           {"dup", "dup", event.OpDup, -1, -1, 0, true},
	kDup2:          {"dup2", "dup2", event.OpDup, -1, -1, 0, true},
	kDup3:          {"dup3", "dup3", event.OpDup, -1, -1, 0, true},
	kFcntl:         {"fcntl", "fcntl", event.OpDup, -1, -1, ckFcntl, true},
	kChdir:         {"chdir", "chdir", event.OpChdir, 0, -1, 0, true},
	kFchdir:        {"fchdir", "fchdir", event.OpChdir, -1, -1, 0, true},
	kExecve:        {"execve", "execve", event.OpExec, 0, -1, 0, false},
	kExecveat:      {"execveat", "execveat", event.OpExec, 1, -1, 0, false},
}

// info returns the description of k, or nil for an unknown kind.
func (k sysKind) info() *sysInfo {
	if k == kNone || k >= numKinds {
		return nil
	}
	return &sysTable[k]
}

// cookie is the attach cookie of k's links.
func (k sysKind) cookie() uint64 {
	in := &sysTable[k]
	p0, p1 := uint64(noArg), uint64(noArg)
	if in.Path0 >= 0 {
		p0 = uint64(in.Path0)
	}
	if in.Path1 >= 0 {
		p1 = uint64(in.Path1)
	}
	return uint64(k) | p0<<16 | p1<<20 | in.Flags
}

// SyscallNames lists the traced system calls with the tracepoint each is
// attached to and its op, in table order (for documentation and the
// backends command).
func SyscallNames() []struct {
	Name, Tracepoint string
	Op               event.Op
} {
	out := make([]struct {
		Name, Tracepoint string
		Op               event.Op
	}, 0, numKinds)
	for k := kNone + 1; k < numKinds; k++ {
		in := &sysTable[k]
		out = append(out, struct {
			Name, Tracepoint string
			Op               event.Op
		}{in.Name, "syscalls:sys_enter_" + in.TP + " + sys_exit_" + in.TP, in.Op})
	}
	return out
}
