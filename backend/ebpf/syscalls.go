package ebpf

import (
	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
)

// The BPF programs' descriptor of a traced call, the value of
// sys_kinds[nr] (bpf/iotrace.bpf.c, CK_*): the call, the arguments of
// its strings, and what to read beyond the registers. cookie builds it
// from the call's row of systable.Table.
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
	{systable.AsyncSubmit, 1 * ckAsync},
	{systable.AsyncReap, 2 * ckAsync},
	{systable.AsyncRingEnter, 3 * ckAsync},
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
		ck |= idx << (16 + 4*i)
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
