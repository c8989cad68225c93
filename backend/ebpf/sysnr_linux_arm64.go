package ebpf

import "golang.org/x/sys/unix"

// sysNumbers maps each traced kind to its arm64 system call number. The
// generic table has no open, creat, rename, mkdir, rmdir, unlink, dup2,
// getdents, stat or lstat: libc uses the *at forms.
var sysNumbers = map[sysKind]int{
	kOpenat: unix.SYS_OPENAT, kOpenat2: unix.SYS_OPENAT2,
	kRead: unix.SYS_READ, kPread64: unix.SYS_PREAD64, kReadv: unix.SYS_READV, kPreadv: unix.SYS_PREADV,
	kPreadv2: unix.SYS_PREADV2, kWrite: unix.SYS_WRITE, kPwrite64: unix.SYS_PWRITE64, kWritev: unix.SYS_WRITEV,
	kPwritev: unix.SYS_PWRITEV, kPwritev2: unix.SYS_PWRITEV2, kClose: unix.SYS_CLOSE,
	kCloseRange: unix.SYS_CLOSE_RANGE, kLseek: unix.SYS_LSEEK, kFsync: unix.SYS_FSYNC,
	kFdatasync: unix.SYS_FDATASYNC, kSyncFileRange: unix.SYS_SYNC_FILE_RANGE, kSyncfs: unix.SYS_SYNCFS,
	kTruncate: unix.SYS_TRUNCATE, kFtruncate: unix.SYS_FTRUNCATE, kFallocate: unix.SYS_FALLOCATE,
	kUnlinkat: unix.SYS_UNLINKAT, kRenameat: unix.SYS_RENAMEAT, kRenameat2: unix.SYS_RENAMEAT2,
	kMkdirat: unix.SYS_MKDIRAT, kNewfstatat: unix.SYS_FSTATAT, kStatx: unix.SYS_STATX, kFstat: unix.SYS_FSTAT,
	kGetdents64: unix.SYS_GETDENTS64, kMmap: unix.SYS_MMAP,
	kSendfile: unix.SYS_SENDFILE, kCopyFileRange: unix.SYS_COPY_FILE_RANGE, kSplice: unix.SYS_SPLICE,
	kDup: unix.SYS_DUP, kDup3: unix.SYS_DUP3, kFcntl: unix.SYS_FCNTL,
	kChdir: unix.SYS_CHDIR, kFchdir: unix.SYS_FCHDIR, kExecve: unix.SYS_EXECVE, kExecveat: unix.SYS_EXECVEAT,
	kReadlinkat: unix.SYS_READLINKAT, kFaccessat: unix.SYS_FACCESSAT, kFaccessat2: unix.SYS_FACCESSAT2,
	kFchmod: unix.SYS_FCHMOD, kFchmodat: unix.SYS_FCHMODAT, kFchmodat2: unix.SYS_FCHMODAT2,
	kFchown: unix.SYS_FCHOWN, kFchownat: unix.SYS_FCHOWNAT, kUtimensat: unix.SYS_UTIMENSAT,
	kLinkat: unix.SYS_LINKAT, kSymlinkat: unix.SYS_SYMLINKAT, kMknodat: unix.SYS_MKNODAT,
	kFadvise64: unix.SYS_FADVISE64,
	kGetxattr:  unix.SYS_GETXATTR, kLgetxattr: unix.SYS_LGETXATTR, kFgetxattr: unix.SYS_FGETXATTR,
	kSetxattr: unix.SYS_SETXATTR, kLsetxattr: unix.SYS_LSETXATTR, kFsetxattr: unix.SYS_FSETXATTR,
	kListxattr: unix.SYS_LISTXATTR, kLlistxattr: unix.SYS_LLISTXATTR, kFlistxattr: unix.SYS_FLISTXATTR,
	kRemovexattr: unix.SYS_REMOVEXATTR, kLremovexattr: unix.SYS_LREMOVEXATTR, kFremovexattr: unix.SYS_FREMOVEXATTR,
	kFlock: unix.SYS_FLOCK, kSync: unix.SYS_SYNC, kMsync: unix.SYS_MSYNC, kIoctl: unix.SYS_IOCTL,
	kEventfd2: unix.SYS_EVENTFD2, kMemfdCreate: unix.SYS_MEMFD_CREATE,
	kSocket: unix.SYS_SOCKET, kAccept: unix.SYS_ACCEPT, kAccept4: unix.SYS_ACCEPT4,
	kPipe2: unix.SYS_PIPE2, kSocketpair: unix.SYS_SOCKETPAIR,
	kIoSubmit: unix.SYS_IO_SUBMIT, kIoGetevents: unix.SYS_IO_GETEVENTS, kIoPgetevents: unix.SYS_IO_PGETEVENTS,
	kIoUringEnter: unix.SYS_IO_URING_ENTER,
}
