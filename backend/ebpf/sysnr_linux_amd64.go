package ebpf

import "golang.org/x/sys/unix"

// sysNumbers maps each traced kind to its x86-64 system call number.
var sysNumbers = map[sysKind]int{
	kOpen: unix.SYS_OPEN, kOpenat: unix.SYS_OPENAT, kOpenat2: unix.SYS_OPENAT2, kCreat: unix.SYS_CREAT,
	kRead: unix.SYS_READ, kPread64: unix.SYS_PREAD64, kReadv: unix.SYS_READV, kPreadv: unix.SYS_PREADV,
	kPreadv2: unix.SYS_PREADV2, kWrite: unix.SYS_WRITE, kPwrite64: unix.SYS_PWRITE64, kWritev: unix.SYS_WRITEV,
	kPwritev: unix.SYS_PWRITEV, kPwritev2: unix.SYS_PWRITEV2, kClose: unix.SYS_CLOSE,
	kCloseRange: unix.SYS_CLOSE_RANGE, kLseek: unix.SYS_LSEEK, kFsync: unix.SYS_FSYNC,
	kFdatasync: unix.SYS_FDATASYNC, kSyncFileRange: unix.SYS_SYNC_FILE_RANGE, kSyncfs: unix.SYS_SYNCFS,
	kTruncate: unix.SYS_TRUNCATE, kFtruncate: unix.SYS_FTRUNCATE, kFallocate: unix.SYS_FALLOCATE,
	kUnlink: unix.SYS_UNLINK, kUnlinkat: unix.SYS_UNLINKAT, kRename: unix.SYS_RENAME,
	kRenameat: unix.SYS_RENAMEAT, kRenameat2: unix.SYS_RENAMEAT2, kMkdir: unix.SYS_MKDIR,
	kMkdirat: unix.SYS_MKDIRAT, kRmdir: unix.SYS_RMDIR, kNewfstatat: unix.SYS_NEWFSTATAT,
	kStatx: unix.SYS_STATX, kFstat: unix.SYS_FSTAT, kStat: unix.SYS_STAT, kLstat: unix.SYS_LSTAT,
	kGetdents64: unix.SYS_GETDENTS64, kGetdents: unix.SYS_GETDENTS, kMmap: unix.SYS_MMAP,
	kSendfile: unix.SYS_SENDFILE, kCopyFileRange: unix.SYS_COPY_FILE_RANGE, kSplice: unix.SYS_SPLICE,
	kDup: unix.SYS_DUP, kDup2: unix.SYS_DUP2, kDup3: unix.SYS_DUP3, kFcntl: unix.SYS_FCNTL,
	kChdir: unix.SYS_CHDIR, kFchdir: unix.SYS_FCHDIR, kExecve: unix.SYS_EXECVE, kExecveat: unix.SYS_EXECVEAT,
}
