package ebpf

import (
	"encoding/binary"
	"fmt"

	"github.com/iotrace/iotrace/backend/ebpf/systable"
)

// Record types (enum rec_type in bpf/records.h).
const (
	recSyscall    = 1
	recPath       = 2
	recFork       = 3
	recExec       = 4
	recExit       = 5
	recURing      = 6
	recAIO        = 7
	recExecMaps   = 8
	recStack      = 9
	recUStackCopy = 11
	recPageCache  = 10 // page-cache provenance (provenance.go)
	recKick       = 12 // wakes the reader: the per-CPU slots are filling (no data; taken by the intake)
)

// Syscall record flags (enum sys_flags).
const (
	sfPath0Late   = 1 << 0
	sfPath1Late   = 1 << 1
	sfPath0Failed = 1 << 2
	sfPath1Failed = 1 << 3
	sfHaveFile    = 1 << 4
	sfCause       = 1 << 5
	sfIOVPartial  = 1 << 6
	sfIOWait      = 1 << 8  // slept waiting for I/O during the call
	sfWaitedIO    = 1 << 9  // queued no bio; slept for I/O while its file had read I/O in flight
	sfComm        = 1 << 10 // Comm is set (else the thread's last one applies)
	sfReg         = 1 << 11 // the file is a regular file (with sfHaveFile)
	sfBdevFS      = 1 << 12 // its file system has a block device
	sfMemFS       = 1 << 13 // its file system is tmpfs or ramfs
	// sfPos is set by a Decoder's caller only (never by the BPF side):
	// Pos holds the file position at entry, without the rest of the file.
	sfPos = 1 << 15
)

// Fork record flags (enum clone_flags).
const (
	cfFilesShared = 1 << 0
	cfFSShared    = 1 << 1
)

// Record sizes and offsets (checked by _Static_assert in bpf/records.h).
const (
	hdrSize      = 16
	syscallSize  = 168
	pathHdrSize  = 32
	forkSize     = 64
	execHdrSize  = 56
	exitSize     = 40
	uringSize    = 136
	aioSize      = 144
	commLen      = 16
	pathCap      = 4096
	argsCap      = 1024
	maxRecordLen = execHdrSize + pathCap + argsCap
)

var le = binary.LittleEndian

// header is struct rec_hdr.
type header struct {
	Type uint8
	Kind systable.Call
	CPU  uint32
	Time uint64
}

func decodeHeader(b []byte) (header, error) {
	if len(b) < hdrSize {
		return header{}, fmt.Errorf("record of %d bytes, shorter than its %d-byte header", len(b), hdrSize)
	}
	return header{Type: b[0], Kind: systable.Call(le.Uint16(b[2:])), CPU: le.Uint32(b[4:]), Time: le.Uint64(b[8:])}, nil
}

// syscallRec is struct syscall_rec.
type syscallRec struct {
	header
	ID       uint64
	Dur      uint64
	Pid, Tid uint32
	Ret      int64
	Args     [6]uint64
	Size     uint64
	Pos      int64
	Ino      uint64
	Dev      uint32
	FFlags   uint32
	NrBios   uint32
	SFlags   uint32
	BioBytes uint64
	Comm     [commLen]byte
	// UStack and KStack are stack IDs in the stacks map, or -errno (-1:
	// not asked).
	UStack, KStack int32
}

func (r *syscallRec) decode(b []byte) error {
	if len(b) < syscallSize {
		return fmt.Errorf("syscall record of %d bytes, want %d", len(b), syscallSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.ID = le.Uint64(b[16:])
	r.Dur = le.Uint64(b[24:])
	r.Pid = le.Uint32(b[32:])
	r.Tid = le.Uint32(b[36:])
	r.Ret = int64(le.Uint64(b[40:]))
	for i := range r.Args {
		r.Args[i] = le.Uint64(b[48+8*i:])
	}
	r.Size = le.Uint64(b[96:])
	r.Pos = int64(le.Uint64(b[104:]))
	r.Ino = le.Uint64(b[112:])
	r.Dev = le.Uint32(b[120:])
	r.FFlags = le.Uint32(b[124:])
	r.NrBios = le.Uint32(b[128:])
	r.SFlags = le.Uint32(b[132:])
	r.BioBytes = le.Uint64(b[136:])
	copy(r.Comm[:], b[144:160])
	r.UStack = int32(le.Uint32(b[160:]))
	r.KStack = int32(le.Uint32(b[164:]))
	return nil
}

// pathRec is struct path_rec; Path aliases the record buffer.
type pathRec struct {
	header
	ID    uint64
	Tid   uint32
	Index uint8
	Late  bool
	// Truncated is set when the path filled the capture buffer.
	Truncated bool
	Path      []byte
}

func (r *pathRec) decode(b []byte) error {
	if len(b) < pathHdrSize {
		return fmt.Errorf("path record of %d bytes, shorter than its %d-byte header", len(b), pathHdrSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.ID = le.Uint64(b[16:])
	r.Tid = le.Uint32(b[24:])
	n := int(le.Uint16(b[28:]))
	r.Index = b[30]
	r.Late = b[31] != 0
	if n > len(b)-pathHdrSize {
		return fmt.Errorf("path record: length %d beyond its %d bytes", n, len(b)-pathHdrSize)
	}
	p := b[pathHdrSize : pathHdrSize+n]
	r.Truncated = n >= pathCap
	if n > 0 && p[n-1] == 0 {
		p = p[:n-1]
	}
	r.Path = p
	return nil
}

// forkRec is struct fork_rec.
type forkRec struct {
	header
	PPid, PTid uint32
	Pid, Tid   uint32
	Start      uint64
	CFlags     uint32
	Comm       [commLen]byte
}

func (r *forkRec) decode(b []byte) error {
	if len(b) < forkSize {
		return fmt.Errorf("fork record of %d bytes, want %d", len(b), forkSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.PPid = le.Uint32(b[16:])
	r.PTid = le.Uint32(b[20:])
	r.Pid = le.Uint32(b[24:])
	r.Tid = le.Uint32(b[28:])
	r.Start = le.Uint64(b[32:])
	r.CFlags = le.Uint32(b[40:])
	copy(r.Comm[:], b[48:64])
	return nil
}

// execRec is struct exec_rec; Name and Args alias the record buffer.
type execRec struct {
	header
	Pid, OldPid uint32
	Start       uint64
	Comm        [commLen]byte
	Name, Args  []byte
}

func (r *execRec) decode(b []byte) error {
	if len(b) < execHdrSize {
		return fmt.Errorf("exec record of %d bytes, shorter than its %d-byte header", len(b), execHdrSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.Pid = le.Uint32(b[16:])
	r.OldPid = le.Uint32(b[20:])
	r.Start = le.Uint64(b[24:])
	nl := int(le.Uint16(b[32:]))
	al := int(le.Uint16(b[34:]))
	copy(r.Comm[:], b[40:56])
	data := b[execHdrSize:]
	if nl+al > len(data) {
		return fmt.Errorf("exec record: name %d + args %d bytes beyond its %d data bytes", nl, al, len(data))
	}
	r.Name = trimNUL(data[:nl])
	r.Args = data[nl : nl+al]
	return nil
}

// exitRec is struct exit_rec.
type exitRec struct {
	header
	Pid, Tid uint32
	Start    uint64
	Code     int32
}

func (r *exitRec) decode(b []byte) error {
	if len(b) < exitSize {
		return fmt.Errorf("exit record of %d bytes, want %d", len(b), exitSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.Pid = le.Uint32(b[16:])
	r.Tid = le.Uint32(b[20:])
	r.Start = le.Uint64(b[24:])
	r.Code = int32(le.Uint32(b[32:]))
	return nil
}

// uringRec is struct uring_rec.
type uringRec struct {
	header
	ID       uint64
	Dur      uint64
	Pid, Tid uint32
	UserData uint64
	Req      uint64
	Off      int64
	Res      int32
	FD       int32
	Len      uint32
	Opcode   uint8
	More     bool // a multishot request's completion, more to come
	Comm     [commLen]byte
	// Caused says NrBios and BioBytes are valid (block tracing was on):
	// the bios the request queued.
	Caused   bool
	NrBios   uint32
	BioBytes uint64
	UFlags   uint8  // ufFixed, ufHaveFile
	Ino      uint64 // FD's file at submission (ufHaveFile)
	Dev      uint32
	FFlags   uint32
	UStack   int32 // submitter's user stack ID, or -errno (-1: not asked)
}

// io_uring record flags (enum uring_flags).
const (
	ufFixed    = 1 << 0 // FD is a registered file's index
	ufHaveFile = 1 << 1
)

func (r *uringRec) decode(b []byte) error {
	if len(b) < uringSize {
		return fmt.Errorf("io_uring record of %d bytes, want %d", len(b), uringSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.ID = le.Uint64(b[16:])
	r.Dur = le.Uint64(b[24:])
	r.Pid = le.Uint32(b[32:])
	r.Tid = le.Uint32(b[36:])
	r.UserData = le.Uint64(b[40:])
	r.Req = le.Uint64(b[48:])
	r.Off = int64(le.Uint64(b[56:]))
	r.Res = int32(le.Uint32(b[64:]))
	r.FD = int32(le.Uint32(b[68:]))
	r.Len = le.Uint32(b[72:])
	r.Opcode = b[76]
	r.More = b[77] != 0
	copy(r.Comm[:], b[80:96])
	r.NrBios = le.Uint32(b[96:])
	r.Caused = b[100] != 0
	r.UFlags = b[101]
	r.BioBytes = le.Uint64(b[104:])
	r.Ino = le.Uint64(b[112:])
	r.Dev = le.Uint32(b[120:])
	r.FFlags = le.Uint32(b[124:])
	r.UStack = int32(le.Uint32(b[128:]))
	return nil
}

// AIO record flags (enum aio_flags).
const (
	afIOVPartial = 1 << 0
	afHaveFile   = 1 << 1
	afUnreaped   = 1 << 2
)

// aioRec is struct aio_rec: one iocb from io_submit to its reaping.
type aioRec struct {
	header
	ID       uint64
	Dur      uint64
	Pid, Tid uint32
	Data     uint64 // iocb.aio_data
	IOCB     uint64 // user address of the iocb
	Off      int64
	Res      int64
	NBytes   uint64
	Ctx      uint64
	BioBytes uint64
	NrBios   uint32
	FD       int32
	Opcode   uint16
	Caused   bool
	AFlags   uint8
	FFlags   uint32
	Comm     [commLen]byte
	Ino      uint64 // inode of FD's file at submission (afHaveFile)
	Dev      uint32 // kernel dev_t of its file system (afHaveFile)
	UStack   int32  // submitter's user stack ID, or -errno (-1: not asked)
}

func (r *aioRec) decode(b []byte) error {
	if len(b) < aioSize {
		return fmt.Errorf("AIO record of %d bytes, want %d", len(b), aioSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.ID = le.Uint64(b[16:])
	r.Dur = le.Uint64(b[24:])
	r.Pid = le.Uint32(b[32:])
	r.Tid = le.Uint32(b[36:])
	r.Data = le.Uint64(b[40:])
	r.IOCB = le.Uint64(b[48:])
	r.Off = int64(le.Uint64(b[56:]))
	r.Res = int64(le.Uint64(b[64:]))
	r.NBytes = le.Uint64(b[72:])
	r.Ctx = le.Uint64(b[80:])
	r.BioBytes = le.Uint64(b[88:])
	r.NrBios = le.Uint32(b[96:])
	r.FD = int32(le.Uint32(b[100:]))
	r.Opcode = le.Uint16(b[104:])
	r.Caused = b[106] != 0
	r.AFlags = b[107]
	r.FFlags = le.Uint32(b[108:])
	copy(r.Comm[:], b[112:128])
	r.Ino = le.Uint64(b[128:])
	r.Dev = le.Uint32(b[136:])
	r.UStack = int32(le.Uint32(b[140:]))
	return nil
}

func trimNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// codeMap is struct code_map.
type codeMap struct {
	Start, End, PgOff, Ino uint64
	Dev                    uint32
}

// execMapsRec is struct exec_maps_rec.
type execMapsRec struct {
	header
	Pid         uint32
	Exe, Interp codeMap
}

const execMapsSize = 104

func (r *execMapsRec) decode(b []byte) error {
	if len(b) < execMapsSize {
		return fmt.Errorf("exec maps record of %d bytes, want %d", len(b), execMapsSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.Pid = le.Uint32(b[16:])
	for i, m := range []*codeMap{&r.Exe, &r.Interp} {
		o := 24 + 40*i
		*m = codeMap{Start: le.Uint64(b[o:]), End: le.Uint64(b[o+8:]), PgOff: le.Uint64(b[o+16:]), Ino: le.Uint64(b[o+24:]), Dev: le.Uint32(b[o+32:])}
	}
	return nil
}

// stackRec is struct stack_rec: a user stack sent inline for event ID.
type stackRec struct {
	header
	ID   uint64
	IPs  []uint64
	Stop uint32 // why the walk ended (unwind.Stop), stopUnknown for a frame-pointer walk
}

const stackHdrSize = 32

func (r *stackRec) decode(b []byte) error {
	if len(b) < stackHdrSize {
		return fmt.Errorf("stack record of %d bytes, want at least %d", len(b), stackHdrSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.ID = le.Uint64(b[16:])
	n := int(le.Uint32(b[24:]))
	r.Stop = le.Uint32(b[28:])
	if n > maxStackDepth || stackHdrSize+8*n > len(b) {
		return fmt.Errorf("stack record of %d bytes says %d frames", len(b), n)
	}
	r.IPs = make([]uint64, n)
	for i := range r.IPs {
		r.IPs[i] = le.Uint64(b[stackHdrSize+8*i:])
	}
	return nil
}

// uStackCopyRec is struct ustack_copy_rec: an event's user registers and
// stack, for user space to walk (bpf/unwind.h).
type uStackCopyRec struct {
	header
	ID         uint64
	PC, SP, FP uint64
	MissIno    uint64
	MissDev    uint32
	MissStart  uint64
	MissSize   uint64
	Stack      []byte // from SP up
}

const (
	uStackCopyHdrSize = 80
	uStackCopyMax     = 16384 // UNWIND_COPY_MAX
)

func (r *uStackCopyRec) decode(b []byte) error {
	if len(b) < uStackCopyHdrSize {
		return fmt.Errorf("stack copy record of %d bytes, want at least %d", len(b), uStackCopyHdrSize)
	}
	h, _ := decodeHeader(b)
	r.header = h
	r.ID, r.PC, r.SP, r.FP = le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:]), le.Uint64(b[40:])
	r.MissIno, r.MissDev = le.Uint64(b[48:]), le.Uint32(b[56:])
	n := int(le.Uint32(b[60:]))
	r.MissStart, r.MissSize = le.Uint64(b[64:]), le.Uint64(b[72:])
	if n > uStackCopyMax || uStackCopyHdrSize+n > len(b) {
		return fmt.Errorf("stack copy record of %d bytes says %d bytes of stack", len(b), n)
	}
	r.Stack = append([]byte(nil), b[uStackCopyHdrSize:uStackCopyHdrSize+n]...)
	return nil
}
