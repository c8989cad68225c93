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
	// Appended in round six: handled by the generic code driven by
	// argTable (see tracker.generic).
	kReadlink
	kReadlinkat
	kAccess
	kFaccessat
	kFaccessat2
	kChmod
	kFchmod
	kFchmodat
	kFchmodat2
	kChown
	kFchown
	kFchownat
	kLchown
	kUtimensat
	kFutimesat
	kUtimes
	kUtime
	kLink
	kLinkat
	kSymlink
	kSymlinkat
	kMknod
	kMknodat
	kFadvise64
	kGetxattr
	kLgetxattr
	kFgetxattr
	kSetxattr
	kLsetxattr
	kFsetxattr
	kListxattr
	kLlistxattr
	kFlistxattr
	kRemovexattr
	kLremovexattr
	kFremovexattr
	kFlock
	kSync
	kMsync
	kIoctl
	kEventfd
	kEventfd2
	kMemfdCreate
	kSocket
	kAccept
	kAccept4
	kPipe
	kPipe2
	kSocketpair
	// Asynchronous I/O calls (ckAsync): no event of their own; their
	// requests are events (bpf/iotrace.bpf.c, "Asynchronous requests").
	kIoSubmit
	kIoGetevents
	kIoPgetevents
	kIoUringEnter
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
	ckPair    = 1 << 39 // pipe, socketpair: read the int[2] of new descriptors at exit
	ckPairArg = 1 << 24 // times the argument index of that int[2]
	ckRead    = 1 << 40 // a read of fd args[0]: may have waited for I/O in flight (set for every OpRead)
	ckAsync   = 1 << 41 // times the async handler: 1 io_submit, 2 io_getevents/io_pgetevents, 3 io_uring_enter
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
	kPread64:       {"pread64", "pread64", event.OpRead, -1, -1, ckFPos, false},
	kReadv:         {"readv", "readv", event.OpRead, -1, -1, ckFPos | ckIOV, false},
	kPreadv:        {"preadv", "preadv", event.OpRead, -1, -1, ckIOV | ckFPos, false},
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

	kReadlink:     {"readlink", "readlink", event.OpReadlink, 0, -1, 0, false},
	kReadlinkat:   {"readlinkat", "readlinkat", event.OpReadlink, 1, -1, 0, false},
	kAccess:       {"access", "access", event.OpAccess, 0, -1, 0, false},
	kFaccessat:    {"faccessat", "faccessat", event.OpAccess, 1, -1, 0, false},
	kFaccessat2:   {"faccessat2", "faccessat2", event.OpAccess, 1, -1, 0, false},
	kChmod:        {"chmod", "chmod", event.OpSetAttr, 0, -1, 0, false},
	kFchmod:       {"fchmod", "fchmod", event.OpSetAttr, -1, -1, 0, false},
	kFchmodat:     {"fchmodat", "fchmodat", event.OpSetAttr, 1, -1, 0, false},
	kFchmodat2:    {"fchmodat2", "fchmodat2", event.OpSetAttr, 1, -1, 0, false},
	kChown:        {"chown", "chown", event.OpSetAttr, 0, -1, 0, false},
	kFchown:       {"fchown", "fchown", event.OpSetAttr, -1, -1, 0, false},
	kFchownat:     {"fchownat", "fchownat", event.OpSetAttr, 1, -1, 0, false},
	kLchown:       {"lchown", "lchown", event.OpSetAttr, 0, -1, 0, false},
	kUtimensat:    {"utimensat", "utimensat", event.OpSetAttr, 1, -1, 0, false},
	kFutimesat:    {"futimesat", "futimesat", event.OpSetAttr, 1, -1, 0, false},
	kUtimes:       {"utimes", "utimes", event.OpSetAttr, 0, -1, 0, false},
	kUtime:        {"utime", "utime", event.OpSetAttr, 0, -1, 0, false},
	kLink:         {"link", "link", event.OpLink, 0, 1, 0, false},
	kLinkat:       {"linkat", "linkat", event.OpLink, 1, 3, 0, false},
	kSymlink:      {"symlink", "symlink", event.OpLink, 0, 1, 0, false},
	kSymlinkat:    {"symlinkat", "symlinkat", event.OpLink, 0, 2, 0, false},
	kMknod:        {"mknod", "mknod", event.OpMknod, 0, -1, 0, false},
	kMknodat:      {"mknodat", "mknodat", event.OpMknod, 1, -1, 0, false},
	kFadvise64:    {"fadvise64", "fadvise64", event.OpAdvise, -1, -1, 0, false},
	kGetxattr:     {"getxattr", "getxattr", event.OpXattr, 0, 1, 0, false},
	kLgetxattr:    {"lgetxattr", "lgetxattr", event.OpXattr, 0, 1, 0, false},
	kFgetxattr:    {"fgetxattr", "fgetxattr", event.OpXattr, -1, 1, 0, false},
	kSetxattr:     {"setxattr", "setxattr", event.OpXattr, 0, 1, 0, false},
	kLsetxattr:    {"lsetxattr", "lsetxattr", event.OpXattr, 0, 1, 0, false},
	kFsetxattr:    {"fsetxattr", "fsetxattr", event.OpXattr, -1, 1, 0, false},
	kListxattr:    {"listxattr", "listxattr", event.OpXattr, 0, -1, 0, false},
	kLlistxattr:   {"llistxattr", "llistxattr", event.OpXattr, 0, -1, 0, false},
	kFlistxattr:   {"flistxattr", "flistxattr", event.OpXattr, -1, -1, 0, false},
	kRemovexattr:  {"removexattr", "removexattr", event.OpXattr, 0, 1, 0, false},
	kLremovexattr: {"lremovexattr", "lremovexattr", event.OpXattr, 0, 1, 0, false},
	kFremovexattr: {"fremovexattr", "fremovexattr", event.OpXattr, -1, 1, 0, false},
	kFlock:        {"flock", "flock", event.OpLock, -1, -1, 0, false},
	kSync:         {"sync", "sync", event.OpFlush, -1, -1, 0, false},
	kMsync:        {"msync", "msync", event.OpFlush, -1, -1, 0, false},
	kIoctl:        {"ioctl", "ioctl", event.OpFSControl, -1, -1, 0, false},
	kEventfd:      {"eventfd", "eventfd", event.OpOpen, -1, -1, ckNewFD, true},
	kEventfd2:     {"eventfd2", "eventfd2", event.OpOpen, -1, -1, ckNewFD, true},
	kMemfdCreate:  {"memfd_create", "memfd_create", event.OpOpen, 0, -1, ckNewFD, true},
	kSocket:       {"socket", "socket", event.OpOpen, -1, -1, ckNewFD, true},
	kAccept:       {"accept", "accept", event.OpOpen, -1, -1, ckNewFD, true},
	kAccept4:      {"accept4", "accept4", event.OpOpen, -1, -1, ckNewFD, true},
	kPipe:         {"pipe", "pipe", event.OpOpen, -1, -1, ckPair, true},
	kPipe2:        {"pipe2", "pipe2", event.OpOpen, -1, -1, ckPair, true},
	kSocketpair:   {"socketpair", "socketpair", event.OpOpen, -1, -1, ckPair | 3*ckPairArg, true},
	kIoSubmit:     {"io_submit", "io_submit", event.OpAsync, -1, -1, 1 * ckAsync, false},
	kIoGetevents:  {"io_getevents", "io_getevents", event.OpAsync, -1, -1, 2 * ckAsync, false},
	kIoPgetevents: {"io_pgetevents", "io_pgetevents", event.OpAsync, -1, -1, 2 * ckAsync, false},
	kIoUringEnter: {"io_uring_enter", "io_uring_enter", event.OpAsync, -1, -1, 3 * ckAsync, false},
}

// Argument roles of the calls the generic decoder handles.
const (
	roleNone   = iota
	roleFD     // a descriptor: Event.FD and its path
	roleDirFD  // the directory descriptor of the path argument that follows
	roleDirFD1 // the directory descriptor of the second path argument
	roleMode   // Event.Mode
	roleInfo   // Event.Info: mode, flags, command, request code, advice
	roleOffset // Event.Offset
	roleSize   // Event.Size
	roleFlags  // AT_* flags: AT_EMPTY_PATH turns the call into one on its dirfd
)

// fdEffect says what a call does to the descriptor table.
type fdEffect uint8

const (
	effNone   fdEffect = iota
	effNewFD           // the result is a new descriptor, named by name()
	effAccept          // the result is a new socket descriptor (args[0] is the listener)
	effPair            // two new descriptors (pipe, socketpair: see ckPair)
)

// argRoles describes the arguments of a call handled by tracker.generic:
// one role per argument, whether the result is a byte count, and the
// descriptor effect with the name the kernel gives the new descriptor.
type argRoles struct {
	Roles  [6]uint8
	Bytes  bool     // the result is a byte count (Event.Bytes)
	Effect fdEffect // descriptor-table effect
	// Name is the /proc/PID/fd name of a new descriptor that has no path:
	// "anon_inode:[eventfd]", or with %s the path argument ("memfd:%s"),
	// or with %d the inode ("socket:[%d]").
	Name string
	// CloexecArg and CloexecBit locate the close-on-exec flag of a new
	// descriptor: args[CloexecArg]&CloexecBit (CloexecBit 0: none).
	CloexecArg int8
	CloexecBit uint32
}

var argTable = [numKinds]*argRoles{
	kReadlink:     {Roles: [6]uint8{0, 0, roleSize}, Bytes: true},
	kReadlinkat:   {Roles: [6]uint8{roleDirFD, 0, 0, roleSize}, Bytes: true},
	kAccess:       {Roles: [6]uint8{0, roleInfo}},
	kFaccessat:    {Roles: [6]uint8{roleDirFD, 0, roleInfo}},
	kFaccessat2:   {Roles: [6]uint8{roleDirFD, 0, roleInfo, roleFlags}},
	kChmod:        {Roles: [6]uint8{0, roleMode}},
	kFchmod:       {Roles: [6]uint8{roleFD, roleMode}},
	kFchmodat:     {Roles: [6]uint8{roleDirFD, 0, roleMode}},
	kFchmodat2:    {Roles: [6]uint8{roleDirFD, 0, roleMode, roleFlags}},
	kChown:        {},
	kFchown:       {Roles: [6]uint8{roleFD}},
	kFchownat:     {Roles: [6]uint8{roleDirFD, 0, 0, 0, roleFlags}},
	kLchown:       {},
	kUtimensat:    {Roles: [6]uint8{roleDirFD, 0, 0, roleFlags}},
	kFutimesat:    {Roles: [6]uint8{roleDirFD}},
	kUtimes:       {},
	kUtime:        {},
	kLink:         {},
	kLinkat:       {Roles: [6]uint8{roleDirFD, 0, roleDirFD1, 0, roleFlags}},
	kSymlink:      {},
	kSymlinkat:    {Roles: [6]uint8{0, roleDirFD1}},
	kMknod:        {Roles: [6]uint8{0, roleMode, roleInfo}},
	kMknodat:      {Roles: [6]uint8{roleDirFD, 0, roleMode, roleInfo}},
	kFadvise64:    {Roles: [6]uint8{roleFD, roleOffset, roleSize, roleInfo}},
	kGetxattr:     {Roles: [6]uint8{0, 0, 0, roleSize}, Bytes: true},
	kLgetxattr:    {Roles: [6]uint8{0, 0, 0, roleSize}, Bytes: true},
	kFgetxattr:    {Roles: [6]uint8{roleFD, 0, 0, roleSize}, Bytes: true},
	kSetxattr:     {Roles: [6]uint8{0, 0, 0, roleSize, roleInfo}},
	kLsetxattr:    {Roles: [6]uint8{0, 0, 0, roleSize, roleInfo}},
	kFsetxattr:    {Roles: [6]uint8{roleFD, 0, 0, roleSize, roleInfo}},
	kListxattr:    {Roles: [6]uint8{0, 0, roleSize}, Bytes: true},
	kLlistxattr:   {Roles: [6]uint8{0, 0, roleSize}, Bytes: true},
	kFlistxattr:   {Roles: [6]uint8{roleFD, 0, roleSize}, Bytes: true},
	kRemovexattr:  {},
	kLremovexattr: {},
	kFremovexattr: {Roles: [6]uint8{roleFD}},
	kFlock:        {Roles: [6]uint8{roleFD, roleInfo}},
	kSync:         {},
	kMsync:        {Roles: [6]uint8{0, roleSize, roleInfo}},
	kIoctl:        {Roles: [6]uint8{roleFD, roleInfo}},
	kEventfd:      {Effect: effNewFD, Name: "anon_inode:[eventfd]"},
	kEventfd2:     {Roles: [6]uint8{0, roleInfo}, Effect: effNewFD, Name: "anon_inode:[eventfd]", CloexecArg: 1, CloexecBit: oCloexec},
	kMemfdCreate:  {Roles: [6]uint8{0, roleInfo}, Effect: effNewFD, Name: "memfd:%s", CloexecArg: 1, CloexecBit: mfdCloexec},
	kSocket:       {Roles: [6]uint8{roleInfo}, Effect: effNewFD, Name: "socket:[%d]", CloexecArg: 1, CloexecBit: oCloexec},
	kAccept:       {Roles: [6]uint8{roleFD}, Effect: effAccept, Name: "socket:[%d]"},
	kAccept4:      {Roles: [6]uint8{roleFD, 0, 0, roleInfo}, Effect: effAccept, Name: "socket:[%d]", CloexecArg: 3, CloexecBit: oCloexec},
	kPipe:         {Effect: effPair, Name: "pipe:[%d]"},
	kPipe2:        {Roles: [6]uint8{0, roleInfo}, Effect: effPair, Name: "pipe:[%d]", CloexecArg: 1, CloexecBit: oCloexec},
	kSocketpair:   {Roles: [6]uint8{roleInfo}, Effect: effPair, Name: "socket:[%d]", CloexecArg: 1, CloexecBit: oCloexec},
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
	c := uint64(k) | p0<<16 | p1<<20 | in.Flags
	if in.Op == event.OpRead {
		c |= ckRead
	}
	return c
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

// Untraced lists the file and descriptor system calls strace shows (its
// %file and %desc classes) that iotrace does not trace, with the reason
// (docs/linux.md has the same list). TestStraceCompare checks that every
// call strace reports on its workloads is traced or listed here.
var Untraced = map[string]string{
	"getcwd":            "reads the working directory's name, no file I/O; iotrace keeps the cwd from chdir/fchdir and the /proc rundown",
	"statfs":            "file-system statistics, not a file's",
	"fstatfs":           "file-system statistics, not a file's",
	"poll":              "waits for readiness; the I/O itself is traced",
	"ppoll":             "waits for readiness; the I/O itself is traced",
	"select":            "waits for readiness; the I/O itself is traced",
	"pselect6":          "waits for readiness; the I/O itself is traced",
	"epoll_create1":     "event-polling descriptor: waits, no I/O",
	"epoll_ctl":         "event-polling registration: no I/O",
	"epoll_wait":        "waits for readiness; the I/O itself is traced",
	"epoll_pwait":       "waits for readiness; the I/O itself is traced",
	"inotify_init1":     "change notification on Linux is not traced",
	"inotify_add_watch": "change notification on Linux is not traced",
	"fanotify_init":     "change notification on Linux is not traced",
	"timerfd_create":    "timer descriptor: no file I/O",
	"signalfd4":         "signal descriptor: no file I/O",
	"pidfd_open":        "process descriptor: no file I/O",
	"memfd_secret":      "anonymous secret memory: no file",
}
