package systable

import "github.com/iotrace/iotrace/event"

// Close-on-exec flags of the calls that make descriptors.
const (
	oCloexec          = 0o2000000 // O_CLOEXEC, also SOCK_, EFD_, TFD_, SFD_, EPOLL_ and IN_CLOEXEC
	mfdCloexec        = 1         // MFD_CLOEXEC
	fanCloexec        = 1         // FAN_CLOEXEC
	perfFlagFDCloexec = 1 << 3    // PERF_FLAG_FD_CLOEXEC
)

// Table is every traced system call, one row each, by family. A call's
// number on each architecture comes from numbers.go; a call an
// architecture lacks is reported as not traced there. docs/linux.md,
// "Adding a system call", says what a new row needs.
var Table = []Row{
	// Opens.
	{Name: "open", Op: event.OpOpen, Args: []Arg{Path, OpenFlags, Mode}, Ret: RetFD, Kernel: ReadNewFile, Do: DoOpen, Flags: KeepNames},
	{Name: "openat", Op: event.OpOpen, Args: []Arg{DirFD, Path, OpenFlags, Mode}, Ret: RetFD, Kernel: ReadNewFile, Do: DoOpen, Flags: KeepNames},
	{Name: "openat2", Op: event.OpOpen, Args: []Arg{DirFD, Path, OpenHow, Other}, Ret: RetFD, Kernel: ReadNewFile, Do: DoOpen, Flags: KeepNames},
	{Name: "creat", Op: event.OpOpen, Args: []Arg{Path, Mode}, Ret: RetFD, Kernel: ReadNewFile, Do: DoCreat, Flags: KeepNames},
	{Name: "open_by_handle_at", Op: event.OpOpen, Args: []Arg{Info, Other, OpenFlags}, Ret: RetFD, Kernel: ReadNewFile, Do: DoOpenByHandle, Flags: KeepNames},

	// Reads and writes.
	{Name: "read", Op: event.OpRead, Args: []Arg{FD, Buf, Size}, Ret: RetBytes, Kernel: ReadFilePos},
	{Name: "pread64", Op: event.OpRead, Args: []Arg{FD, Buf, Size, Offset}, Ret: RetBytes, Kernel: ReadFilePos},
	{Name: "readv", Op: event.OpRead, Args: []Arg{FD, IOV, Other}, Ret: RetBytes, Kernel: ReadFilePos},
	{Name: "preadv", Op: event.OpRead, Args: []Arg{FD, IOV, Other, Offset}, Ret: RetBytes, Kernel: ReadFilePos},
	{Name: "preadv2", Op: event.OpRead, Args: []Arg{FD, IOV, Other, PosOffset, Other, Info}, Ret: RetBytes, Kernel: ReadFilePos},
	{Name: "write", Op: event.OpWrite, Args: []Arg{FD, Buf, Size}, Ret: RetBytes, Kernel: ReadFilePos},
	{Name: "pwrite64", Op: event.OpWrite, Args: []Arg{FD, Buf, Size, Offset}, Ret: RetBytes},
	{Name: "writev", Op: event.OpWrite, Args: []Arg{FD, IOV, Other}, Ret: RetBytes, Kernel: ReadFilePos},
	{Name: "pwritev", Op: event.OpWrite, Args: []Arg{FD, IOV, Other, Offset}, Ret: RetBytes},
	{Name: "pwritev2", Op: event.OpWrite, Args: []Arg{FD, IOV, Other, PosOffset, Other, Info}, Ret: RetBytes, Kernel: ReadFilePos},

	// Closes and seeks.
	{Name: "close", Op: event.OpClose, Args: []Arg{FD}, Do: DoClose, Flags: KeepNames},
	{Name: "close_range", Op: event.OpClose, Args: []Arg{FirstFD, LastFD, Info}, Do: DoCloseRange, Flags: KeepNames},
	{Name: "lseek", Op: event.OpSeek, Args: []Arg{FD, Offset, Info}, Ret: RetOffset},

	// Flushes.
	{Name: "fsync", Op: event.OpFlush, Args: []Arg{FD}},
	{Name: "fdatasync", Op: event.OpFlush, Args: []Arg{FD}, Event: event.FlagSync},
	{Name: "sync_file_range", Op: event.OpFlush, Args: []Arg{FD, Offset, Size, Info}},
	{Name: "syncfs", Op: event.OpFlush, Args: []Arg{FD}},
	{Name: "sync", Op: event.OpFlush},
	{Name: "msync", Op: event.OpFlush, Args: []Arg{Other, Size, Info}},

	// Sizes and space.
	{Name: "truncate", Op: event.OpSetInfo, Args: []Arg{Path, Size}},
	{Name: "ftruncate", Op: event.OpSetInfo, Args: []Arg{FD, Size}},
	{Name: "fallocate", Op: event.OpSetInfo, Args: []Arg{FD, Info, Offset, Size}},

	// Names in directories.
	{Name: "unlink", Op: event.OpDelete, Args: []Arg{Path}, Do: DoUnlink},
	{Name: "unlinkat", Op: event.OpDelete, Args: []Arg{DirFD, Path, Info}, Do: DoUnlink},
	{Name: "rmdir", Op: event.OpDelete, Args: []Arg{Path}, Do: DoUnlink},
	{Name: "rename", Op: event.OpRename, Args: []Arg{Path, Path2}, Do: DoRename, Flags: KeepNames},
	{Name: "renameat", Op: event.OpRename, Args: []Arg{DirFD, Path, DirFD2, Path2}, Do: DoRename, Flags: KeepNames},
	{Name: "renameat2", Op: event.OpRename, Args: []Arg{DirFD, Path, DirFD2, Path2, Info}, Do: DoRename, Flags: KeepNames},
	{Name: "mkdir", Op: event.OpMkdir, Args: []Arg{Path, Mode}},
	{Name: "mkdirat", Op: event.OpMkdir, Args: []Arg{DirFD, Path, Mode}},
	{Name: "mknod", Op: event.OpMknod, Args: []Arg{Path, Mode, Info}},
	{Name: "mknodat", Op: event.OpMknod, Args: []Arg{DirFD, Path, Mode, Info}},
	{Name: "link", Op: event.OpLink, Args: []Arg{Path2, Path}},
	{Name: "linkat", Op: event.OpLink, Args: []Arg{DirFD2, Path2, DirFD, Path, AtFlags}},
	{Name: "symlink", Op: event.OpLink, Args: []Arg{Target, Path}},
	{Name: "symlinkat", Op: event.OpLink, Args: []Arg{Target, DirFD, Path}},

	// Metadata.
	{Name: "newfstatat", Op: event.OpStat, Args: []Arg{DirFD, Path, Other, AtFlagsInfo}, Flags: EmptyPath},
	{Name: "statx", Op: event.OpStat, Args: []Arg{DirFD, Path, AtFlagsInfo, Other, Other}, Flags: EmptyPath},
	{Name: "fstat", Op: event.OpStat, Args: []Arg{FD, Other}},
	{Name: "stat", Op: event.OpStat, Args: []Arg{Path, Other}},
	{Name: "lstat", Op: event.OpStat, Args: []Arg{Path, Other}},
	{Name: "name_to_handle_at", Op: event.OpStat, Args: []Arg{DirFD, Path, Other, Other, AtFlagsInfo}, Flags: EmptyPath},
	{Name: "file_getattr", Op: event.OpStat, Args: []Arg{DirFD, Path, Other, Other, AtFlags}, Flags: EmptyPath},
	{Name: "cachestat", Op: event.OpStat, Args: []Arg{FD, Other, Other, Info}},
	{Name: "readlink", Op: event.OpReadlink, Args: []Arg{Path, Buf, Size}, Ret: RetBytes},
	{Name: "readlinkat", Op: event.OpReadlink, Args: []Arg{DirFD, Path, Buf, Size}, Ret: RetBytes},
	{Name: "access", Op: event.OpAccess, Args: []Arg{Path, Info}},
	{Name: "faccessat", Op: event.OpAccess, Args: []Arg{DirFD, Path, Info}},
	{Name: "faccessat2", Op: event.OpAccess, Args: []Arg{DirFD, Path, Info, AtFlags}, Flags: EmptyPath},
	{Name: "chmod", Op: event.OpSetAttr, Args: []Arg{Path, Mode}},
	{Name: "fchmod", Op: event.OpSetAttr, Args: []Arg{FD, Mode}},
	{Name: "fchmodat", Op: event.OpSetAttr, Args: []Arg{DirFD, Path, Mode}},
	{Name: "fchmodat2", Op: event.OpSetAttr, Args: []Arg{DirFD, Path, Mode, AtFlags}, Flags: EmptyPath},
	{Name: "chown", Op: event.OpSetAttr, Args: []Arg{Path, Other, Other}},
	{Name: "fchown", Op: event.OpSetAttr, Args: []Arg{FD, Other, Other}},
	{Name: "fchownat", Op: event.OpSetAttr, Args: []Arg{DirFD, Path, Other, Other, AtFlags}, Flags: EmptyPath},
	{Name: "lchown", Op: event.OpSetAttr, Args: []Arg{Path, Other, Other}},
	{Name: "utimensat", Op: event.OpSetAttr, Args: []Arg{DirFD, Path, Other, AtFlags}, Flags: EmptyPath | NullPath},
	{Name: "futimesat", Op: event.OpSetAttr, Args: []Arg{DirFD, Path, Other}},
	{Name: "utimes", Op: event.OpSetAttr, Args: []Arg{Path, Other}},
	{Name: "utime", Op: event.OpSetAttr, Args: []Arg{Path, Other}},
	{Name: "file_setattr", Op: event.OpSetAttr, Args: []Arg{DirFD, Path, Other, Other, AtFlags}, Flags: EmptyPath},

	// Extended attributes.
	{Name: "getxattr", Op: event.OpXattr, Args: []Arg{Path, AttrName, Buf, Size}, Ret: RetBytes},
	{Name: "lgetxattr", Op: event.OpXattr, Args: []Arg{Path, AttrName, Buf, Size}, Ret: RetBytes},
	{Name: "fgetxattr", Op: event.OpXattr, Args: []Arg{FD, AttrName, Buf, Size}, Ret: RetBytes},
	{Name: "getxattrat", Op: event.OpXattr, Args: []Arg{DirFD, Path, AtFlags, AttrName, Other, Other}, Ret: RetBytes, Flags: EmptyPath},
	{Name: "setxattr", Op: event.OpXattr, Args: []Arg{Path, AttrName, Buf, Size, Info}},
	{Name: "lsetxattr", Op: event.OpXattr, Args: []Arg{Path, AttrName, Buf, Size, Info}},
	{Name: "fsetxattr", Op: event.OpXattr, Args: []Arg{FD, AttrName, Buf, Size, Info}},
	{Name: "setxattrat", Op: event.OpXattr, Args: []Arg{DirFD, Path, AtFlags, AttrName, Other, Other}, Flags: EmptyPath},
	{Name: "listxattr", Op: event.OpXattr, Args: []Arg{Path, Buf, Size}, Ret: RetBytes},
	{Name: "llistxattr", Op: event.OpXattr, Args: []Arg{Path, Buf, Size}, Ret: RetBytes},
	{Name: "flistxattr", Op: event.OpXattr, Args: []Arg{FD, Buf, Size}, Ret: RetBytes},
	{Name: "listxattrat", Op: event.OpXattr, Args: []Arg{DirFD, Path, AtFlags, Buf, Size}, Ret: RetBytes, Flags: EmptyPath},
	{Name: "removexattr", Op: event.OpXattr, Args: []Arg{Path, AttrName}},
	{Name: "lremovexattr", Op: event.OpXattr, Args: []Arg{Path, AttrName}},
	{Name: "fremovexattr", Op: event.OpXattr, Args: []Arg{FD, AttrName}},
	{Name: "removexattrat", Op: event.OpXattr, Args: []Arg{DirFD, Path, AtFlags, AttrName}, Flags: EmptyPath},

	// Directories, mappings, copies.
	{Name: "getdents64", Op: event.OpReadDir, Args: []Arg{FD, Buf, Size}, Ret: RetBytes},
	{Name: "getdents", Op: event.OpReadDir, Args: []Arg{FD, Buf, Size}, Ret: RetBytes},
	{Name: "mmap", Op: event.OpMmap, Args: []Arg{Other, Size, Prot, Info, FD, Offset}, Kernel: FileMapsOnly, Do: DoMmap},
	{Name: "sendfile", Op: event.OpCopy, Args: []Arg{OutFD, FD, Other, Size}, Ret: RetBytes},
	{Name: "copy_file_range", Op: event.OpCopy, Args: []Arg{FD, Other, OutFD, Other, Size, Other}, Ret: RetBytes},
	{Name: "splice", Op: event.OpCopy, Args: []Arg{FD, Other, OutFD, Other, Size, Other}, Ret: RetBytes},
	{Name: "tee", Op: event.OpCopy, Args: []Arg{FD, OutFD, Size, Other}, Ret: RetBytes},
	{Name: "vmsplice", Op: event.OpCopy, Args: []Arg{FD, IOV, Other, Info}, Ret: RetBytes},

	// Advice, locks, control.
	{Name: "fadvise64", Op: event.OpAdvise, Args: []Arg{FD, Offset, Size, Info}},
	{Name: "readahead", Op: event.OpAdvise, Args: []Arg{FD, Offset, Size}},
	{Name: "flock", Op: event.OpLock, Args: []Arg{FD, Info}},
	{Name: "ioctl", Op: event.OpFSControl, Args: []Arg{FD, IoctlReq, Other}},

	// Descriptors and the working directory.
	{Name: "dup", Op: event.OpDup, Args: []Arg{FD}, Ret: RetDupFD, Do: DoDup, Flags: KeepNames},
	{Name: "dup2", Op: event.OpDup, Args: []Arg{FD, Other}, Ret: RetDupFD, Do: DoDup, Flags: KeepNames},
	{Name: "dup3", Op: event.OpDup, Args: []Arg{FD, Other, Other}, Ret: RetDupFD, Do: DoDup, Flags: KeepNames, CloexecArg: 2, CloexecBit: oCloexec},
	{Name: "fcntl", Op: event.OpDup, Args: []Arg{FD, Other, Other}, Kernel: FcntlForms, Do: DoFcntl, Flags: KeepNames},
	{Name: "chdir", Op: event.OpChdir, Args: []Arg{Path}, Do: DoChdir, Flags: KeepNames},
	{Name: "fchdir", Op: event.OpChdir, Args: []Arg{FD}, Do: DoFchdir, Flags: KeepNames},
	{Name: "execve", Op: event.OpExec, Args: []Arg{Path, Other, Other}},
	{Name: "execveat", Op: event.OpExec, Args: []Arg{DirFD, Path, Other, Other, AtFlags}, Flags: EmptyPath},

	// Descriptors without a path.
	{Name: "eventfd", Op: event.OpOpen, Args: []Arg{Other}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:[eventfd]"},
	{Name: "eventfd2", Op: event.OpOpen, Args: []Arg{Other, Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:[eventfd]", CloexecArg: 1, CloexecBit: oCloexec},
	{Name: "timerfd_create", Op: event.OpOpen, Args: []Arg{Other, Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:[timerfd]", CloexecArg: 1, CloexecBit: oCloexec},
	{Name: "signalfd", Op: event.OpOpen, Args: []Arg{Other, Other, Other}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames | ReusesFD0, NewName: "anon_inode:[signalfd]"},
	{Name: "signalfd4", Op: event.OpOpen, Args: []Arg{Other, Other, Other, Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames | ReusesFD0, NewName: "anon_inode:[signalfd]", CloexecArg: 3, CloexecBit: oCloexec},
	{Name: "epoll_create", Op: event.OpOpen, Args: []Arg{Other}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:[eventpoll]"},
	{Name: "epoll_create1", Op: event.OpOpen, Args: []Arg{Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:[eventpoll]", CloexecArg: 0, CloexecBit: oCloexec},
	{Name: "inotify_init", Op: event.OpOpen, Args: []Arg{}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:inotify"},
	{Name: "inotify_init1", Op: event.OpOpen, Args: []Arg{Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:inotify", CloexecArg: 0, CloexecBit: oCloexec},
	{Name: "fanotify_init", Op: event.OpOpen, Args: []Arg{Info, Other}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:[fanotify]", CloexecArg: 0, CloexecBit: fanCloexec},
	{Name: "pidfd_open", Op: event.OpOpen, Args: []Arg{Other, Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames | AlwaysCloexec, NewName: "anon_inode:[pidfd]"},
	{Name: "userfaultfd", Op: event.OpOpen, Args: []Arg{Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:[userfaultfd]", CloexecArg: 0, CloexecBit: oCloexec},
	{Name: "perf_event_open", Op: event.OpOpen, Args: []Arg{Other, Other, Other, Other, Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "anon_inode:[perf_event]", CloexecArg: 4, CloexecBit: perfFlagFDCloexec},
	{Name: "memfd_create", Op: event.OpOpen, Args: []Arg{FDLabel, Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "memfd:%s", CloexecArg: 1, CloexecBit: mfdCloexec},
	{Name: "socket", Op: event.OpOpen, Args: []Arg{Info, Other, Other}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "socket:[%d]", CloexecArg: 1, CloexecBit: oCloexec},
	{Name: "accept", Op: event.OpOpen, Args: []Arg{FD, Other, Other}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "socket:[%d]"},
	{Name: "accept4", Op: event.OpOpen, Args: []Arg{FD, Other, Other, Info}, Ret: RetFD, Kernel: ReadNewFile, Do: DoNewFD, Flags: KeepNames, NewName: "socket:[%d]", CloexecArg: 3, CloexecBit: oCloexec},
	{Name: "pipe", Op: event.OpOpen, Args: []Arg{FDPair}, Do: DoFDPair, Flags: KeepNames, NewName: "pipe:[%d]"},
	{Name: "pipe2", Op: event.OpOpen, Args: []Arg{FDPair, Info}, Do: DoFDPair, Flags: KeepNames, NewName: "pipe:[%d]", CloexecArg: 1, CloexecBit: oCloexec},
	{Name: "socketpair", Op: event.OpOpen, Args: []Arg{Info, Other, Other, FDPair}, Do: DoFDPair, Flags: KeepNames, NewName: "socket:[%d]", CloexecArg: 1, CloexecBit: oCloexec},

	// Asynchronous I/O: no event of their own; their requests are events
	// (docs/linux.md, "Traced system calls").
	{Name: "io_submit", Op: event.OpAsync, Args: []Arg{Other, Other, Other}, Kernel: AsyncSubmit},
	{Name: "io_getevents", Op: event.OpAsync, Args: []Arg{Other, Other, Other, Other, Other}, Kernel: AsyncReap},
	{Name: "io_pgetevents", Op: event.OpAsync, Args: []Arg{Other, Other, Other, Other, Other, Other}, Kernel: AsyncReap},
	{Name: "io_uring_enter", Op: event.OpAsync, Args: []Arg{Other, Other, Other, Other, Other, Other}, Kernel: AsyncRingEnter},
}

// ioctlNames names the common file and block ioctl request codes (the
// same numbers on amd64 and arm64); others keep the raw code in Info.
var ioctlNames = map[uint32]string{
	0x40049409: "FICLONE",
	0x4020940d: "FICLONERANGE",
	0xc0189436: "FIDEDUPERANGE",
	0x80086601: "FS_IOC_GETFLAGS",
	0x40086602: "FS_IOC_SETFLAGS",
	0x80087601: "FS_IOC_GETVERSION",
	0xc020660b: "FS_IOC_FIEMAP",
	0x801c581f: "FS_IOC_FSGETXATTR",
	0x401c5820: "FS_IOC_FSSETXATTR",
	0x541b:     "FIONREAD",
	0x5421:     "FIONBIO",
	0x5451:     "FIOCLEX",
	0x5450:     "FIONCLEX",
	1:          "FIBMAP",
	2:          "FIGETBSZ",
	0x80081272: "BLKGETSIZE64",
	0x1260:     "BLKGETSIZE",
	0x1268:     "BLKSSZGET",
	0x1261:     "BLKFLSBUF",
	0x1277:     "BLKDISCARD",
	0x5401:     "TCGETS",
	0x5402:     "TCSETS",
	0x5413:     "TIOCGWINSZ",
}
