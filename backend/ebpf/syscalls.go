package ebpf

import (
	"fmt"

	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
)

// The BPF programs' descriptor of a traced call, the value of
// sys_kinds[nr]: the call, the arguments of its strings, and what to read
// beyond the registers. cookie builds it from the call's row of
// systable.Table; bpf/sys_desc.h, which the programs read it with, is
// generated from descC (TestSysDescHeader).
const (
	ckKindMask   = 0xffff // the call (systable.Call)
	ckPathShift  = 16     // string 0's argument index (noArg: none); string 1's 4 bits above
	ckPairShift  = 24     // the argument index of a pipe's int[2]
	ckAsyncShift = 41     // the asynchronous I/O handler: asyncSubmit, asyncReap, asyncRingEnter

	ckFPos    = 1 << 32 // read f_pos, inode and f_flags of args[0] at enter
	ckIOV     = 1 << 33 // sum the iovec lengths of args[1] (count args[2])
	ckMmap    = 1 << 34 // record file-backed mappings only
	ckFcntl   = 1 << 35 // record fcntl dup forms, F_SETFD and locks only (a lock's struct flock is read)
	ckOpenat2 = 1 << 36 // args[2] is a struct open_how *: replace it by its flags, args[3] by its mode
	ckNewFD   = 1 << 37 // read the inode of the returned fd at exit
	ckPosArg  = 1 << 38 // preadv2/pwritev2: the offset args[3] == -1 means the file position
	ckPair    = 1 << 39 // at exit, the int[2] at args[pair] holds two new descriptors
	ckRead    = 1 << 40 // a read of fd args[0]: may have waited for I/O in flight (every OpRead)
	ckExec    = 1 << 43 // execve, execveat: a non-leader thread's state goes to task storage first

	ckPairArg      = 1 << ckPairShift
	ckAsync        = 1 << ckAsyncShift
	asyncSubmit    = 1 // io_submit
	asyncReap      = 2 // io_getevents, io_pgetevents
	asyncRingEnter = 3 // io_uring_enter
	noArg          = 0xf
)

// descC are the C definitions of the descriptor, in bpf/sys_desc.h.
var descC = []struct{ name, def, doc string }{
	{"CK_KIND(c)", fmt.Sprintf("((c) & %#x)", ckKindMask), "the call"},
	{"CK_PATH0(c)", fmt.Sprintf("(((c) >> %d) & 0xf)", ckPathShift), "the argument of string 0, NO_ARG: none"},
	{"CK_PATH1(c)", fmt.Sprintf("(((c) >> %d) & 0xf)", ckPathShift+4), "the argument of string 1, NO_ARG: none"},
	{"NO_ARG", fmt.Sprintf("%#x", noArg), "no argument"},
	{"CK_FPOS", bit(ckFPos), "read f_pos, inode and f_flags of args[0] at enter"},
	{"CK_IOV", bit(ckIOV), "args[1] is an iovec array, args[2] its count: sum the lengths"},
	{"CK_MMAP", bit(ckMmap), "record only file-backed mappings"},
	{"CK_FCNTL", bit(ckFcntl), "record only dup forms, F_SETFD and locks (read a lock's struct flock)"},
	{"CK_OPENAT2", bit(ckOpenat2), "args[2] struct open_how *: replace by its flags, args[3] by its mode"},
	{"CK_NEWFD", bit(ckNewFD), "read the inode of the returned fd at exit"},
	{"CK_POS_ARG", bit(ckPosArg), "preadv2/pwritev2: pos -1 means f_pos"},
	{"CK_PAIR", bit(ckPair), "at exit, the int[2] at args[CK_PAIR_ARG] holds two new descriptors: size = fd0 | fd1 << 32, ino/dev = fd0's inode, pos = fd1's inode"},
	{"CK_PAIR_ARG(c)", fmt.Sprintf("(((c) >> %d) & 0xf)", ckPairShift), "the argument of CK_PAIR's int[2]"},
	{"CK_READ", bit(ckRead), "a read of fd args[0] (see SF_WAITED_IO)"},
	{"CK_EXEC", bit(ckExec), "execve, execveat: a non-leader thread's state moves to its task storage (it takes the leader's ID)"},
	{"CK_ASYNC(c)", fmt.Sprintf("(((c) >> %d) & 3)", ckAsyncShift), "io_submit, io_getevents/io_pgetevents, io_uring_enter: no event of their own, handled in \"Asynchronous requests\""},
	{"ASYNC_SUBMIT", fmt.Sprint(asyncSubmit), "io_submit"},
	{"ASYNC_REAP", fmt.Sprint(asyncReap), "io_getevents, io_pgetevents"},
	{"ASYNC_URING_ENTER", fmt.Sprint(asyncRingEnter), "io_uring_enter"},
}

// bit is the C expression of a descriptor bit.
func bit(b uint64) string {
	for i := 0; i < 64; i++ {
		if b == 1<<i {
			return fmt.Sprintf("(1ULL << %d)", i)
		}
	}
	panic(fmt.Sprintf("descriptor bit %#x is not one bit", b))
}

// kernelBits are the descriptor bits of what a row asks the kernel side
// to read.
var kernelBits = []struct {
	k   systable.Kernel
	bit uint64
}{
	{systable.ReadFilePos, ckFPos},
	{systable.ReadNewFile, ckNewFD},
	{systable.FileMapsOnly, ckMmap},
	{systable.FcntlForms, ckFcntl},
	{systable.AsyncSubmit, asyncSubmit * ckAsync},
	{systable.AsyncReap, asyncReap * ckAsync},
	{systable.AsyncRingEnter, asyncRingEnter * ckAsync},
}

// roleBits are the descriptor bits argument roles imply; the BPF side
// reads them at fixed arguments (TestCookie checks the rows agree).
var roleBits = []struct {
	role systable.Arg
	bit  uint64
}{
	{systable.IOV, ckIOV},          // args[1], count args[2]
	{systable.PosOffset, ckPosArg}, // args[3]
	{systable.OpenHow, ckOpenat2},  // args[2], mode into args[3]
}

// cookie is the descriptor of call c.
func cookie(c systable.Call) uint64 {
	row := systable.Lookup(c)
	ck := uint64(c)
	for i, a := range row.Strings() {
		idx := uint64(noArg)
		if a >= 0 {
			idx = uint64(a)
		}
		ck |= idx << (ckPathShift + 4*i)
	}
	for _, kb := range kernelBits {
		if row.Kernel&kb.k != 0 {
			ck |= kb.bit
		}
	}
	for _, rb := range roleBits {
		if row.Has(rb.role) {
			ck |= rb.bit
		}
	}
	if i := row.Arg(systable.FDPair); i >= 0 {
		ck |= ckPair | uint64(i)*ckPairArg
	}
	if row.Op == event.OpRead {
		ck |= ckRead
	}
	if row.Op == event.OpExec {
		ck |= ckExec
	}
	return ck
}

// async reports whether c is one of the asynchronous I/O calls, which go
// with the asynchronous requests (--layer file traces them only with
// io_uring and AIO).
func async(row *systable.Row) bool {
	return row.Kernel&(systable.AsyncSubmit|systable.AsyncReap|systable.AsyncRingEnter) != 0
}

// SyscallNames lists the traced system calls and the op of each, in
// table order (for documentation and tests).
func SyscallNames() []struct {
	Name string
	Op   event.Op
} {
	out := make([]struct {
		Name string
		Op   event.Op
	}, len(systable.Table))
	for i := range systable.Table {
		out[i].Name, out[i].Op = systable.Table[i].Name, systable.Table[i].Op
	}
	return out
}

// Untraced lists the file and descriptor system calls strace shows that
// iotrace does not trace, with the reason (systable.Untraced).
var Untraced = systable.Untraced
