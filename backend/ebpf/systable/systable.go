package systable

import (
	"fmt"
	"sync"

	"github.com/iotrace/iotrace/event"
)

// Call identifies a row of Table: row i is Call i+1 (0 is no call). It
// travels in the BPF programs' per-call descriptor and in every record;
// values are stable within one build only (records are decoded by the
// binary that loaded the programs).
type Call uint16

// Arg is what one argument of a call is: how Decode reads it into the
// event, or what the tracer must resolve.
type Arg uint8

// Argument roles. Other, Buf and the roles Decode leaves to the tracer
// (FD, DirFD, the strings) name the argument for the reader of the table.
const (
	Other Arg = iota // not decoded (a pointer to a struct, a count, a value the event has no field for)
	Buf              // a buffer the call reads or fills (not decoded)

	// Descriptors and directories: the tracer names them.
	FD     // the descriptor the call acts on: Event.FD, its file's path and inode
	OutFD  // the descriptor a copy writes to: Event.Info, its path Event.Path2
	DirFD  // the directory Path is relative to (AT_FDCWD when the call has none)
	DirFD2 // the directory Path2 is relative to

	// Strings in the caller's memory (at most two a call, read in order
	// of the arguments: the first is string 0, the second string 1).
	Path     // a path: Event.Path, resolved against DirFD
	Path2    // a second path: Event.Path2, resolved against DirFD2 (rename, link's existing file)
	Target   // a symbolic link's target, as written: Event.Path2
	AttrName // an extended attribute's name: Event.Note
	FDLabel  // the name a new descriptor is given (memfd_create): used in NewName

	// Values.
	OpenFlags   // O_* flags: Event.OpenFlags
	OpenHow     // struct open_how *: the tracer puts how.flags in this argument and how.mode in the next (Event.OpenFlags, Event.Mode)
	Mode        // Event.Mode
	Info        // Event.Info: flags, a command, advice, a whence
	Offset      // Event.Offset
	PosOffset   // Event.Offset, where -1 means the file position (preadv2)
	Size        // Event.Size
	IOV         // a struct iovec array (its count follows): Event.Size is the sum of the lengths, read by the tracer
	AtFlags     // AT_* flags: AT_EMPTY_PATH makes the call act on DirFD itself (with EmptyPath)
	AtFlagsInfo // AT_* flags, also Event.Info
	Prot        // PROT_* flags: Event.IOFlags
	IoctlReq    // an ioctl request code: Event.Info, its name Event.Note
	FirstFD     // the first descriptor of a range: Event.FD (not named)
	LastFD      // the last descriptor of a range (after FirstFD): Event.Size is the range's length
	FDPair      // an int[2] the call fills with two new descriptors, read by the tracer at exit
	numArgs
)

// Result is what a call's return value is, beyond 0 or -errno.
type Result uint8

const (
	RetStatus Result = iota // 0 or -errno only
	RetBytes                // a byte count: Event.Bytes
	RetOffset               // the resulting file offset: Event.Offset
	RetFD                   // a new descriptor: Event.FD
	RetDupFD                // a new descriptor, a copy of the FD argument: Event.Info
)

// Kernel is what the tracer reads in the kernel, beyond the argument
// registers and what the roles ask for (IOV, PosOffset, OpenHow, FDPair).
type Kernel uint8

const (
	ReadFilePos    Kernel = 1 << iota // the FD argument's file at entry: position, inode, open flags
	ReadNewFile                       // the returned descriptor's file at exit: inode, open flags
	FileMapsOnly                      // mmap: only file-backed mappings are calls worth recording
	FcntlForms                        // fcntl: only the dup, F_SETFD and lock commands; a lock's struct flock is read
	AsyncSubmit                       // io_submit: its requests are events of their own, the call is not
	AsyncReap                         // io_getevents, io_pgetevents: they complete those requests
	AsyncRingEnter                    // io_uring_enter: its requests are io_uring events
)

// Flags are properties of a call.
type Flags uint8

const (
	// KeepNames: the call changes the names of descriptors or the working
	// directory, so it is traced whatever ops are selected.
	KeepNames Flags = 1 << iota
	// EmptyPath: an empty Path with AT_EMPTY_PATH in its flags means the
	// call acts on DirFD itself.
	EmptyPath
	// NullPath: a NULL Path means the call acts on DirFD itself
	// (utimensat).
	NullPath
	// AlwaysCloexec: the new descriptor has close-on-exec whatever the
	// arguments (pidfd_open).
	AlwaysCloexec
	// ReusesFD0: an Args[0] other than -1 is an existing descriptor the
	// call changes, and returns (signalfd): no new descriptor then.
	ReusesFD0
)

// Handler names what a call does beyond what its roles say: the special
// cases, each implemented by the tracer (backend/ebpf/handlers.go).
type Handler uint8

const (
	Generic        Handler = iota // the roles say it all
	DoOpen                        // a new descriptor named by Path (open, openat, openat2)
	DoCreat                       // open with O_CREAT|O_WRONLY|O_TRUNC
	DoOpenByHandle                // a new descriptor named from what the system shows for it (open_by_handle_at)
	DoClose                       // the descriptor is no longer named
	DoCloseRange                  // the descriptors FirstFD..LastFD are closed, or marked close-on-exec
	DoUnlink                      // open files named Path become "Path (deleted)"
	DoRename                      // open files at or below Path are named after Path2
	DoDup                         // the new descriptor is named like FD (dup, dup2, dup3)
	DoFcntl                       // F_DUPFD as DoDup, F_SETFD close-on-exec (no event), locks (OpLock)
	DoChdir                       // Path becomes the working directory
	DoFchdir                      // FD's directory becomes the working directory
	DoMmap                        // an executable mapping of a file is a module (--stacks)
	DoNewFD                       // a new descriptor without a path, named after NewName
	DoFDPair                      // two new descriptors (pipe, socketpair), named after NewName
	NumHandlers
)

// Row describes one traced system call.
type Row struct {
	// Name is the kernel's (and strace's) name: Event.Native.
	Name string
	// Op is the normalized operation.
	Op event.Op
	// Args are the call's arguments, in order.
	Args []Arg
	// Ret is what the return value is.
	Ret Result
	// Kernel is what the tracer reads in the kernel.
	Kernel Kernel
	// Do is the handler for what the roles do not say.
	Do Handler
	// Flags are properties of the call.
	Flags Flags
	// Event are flags every event of the call has (fdatasync: sync).
	Event event.Flags
	// NewName is what /proc/PID/fd shows for a new descriptor without a
	// path: "anon_inode:[eventfd]", with %s the FDLabel ("memfd:%s"), with
	// %d its inode ("socket:[%d]").
	NewName string
	// CloexecArg and CloexecBit locate a new descriptor's close-on-exec
	// flag: Args[CloexecArg]&CloexecBit (CloexecBit 0: none).
	CloexecArg int8
	CloexecBit uint32

	// strings are the arguments of strings 0 and 1, -1 for none; slot
	// the string of each role (-1: none). Set by init.
	strings [2]int8
	slot    [numArgs]int8
	// fdArg, sizeArg and offsetArg are the arguments of the FD, Size and
	// Offset (or PosOffset) roles, -1 for none, and rest the others
	// Decode reads: the read and write calls, most of the traffic, decode
	// without a loop. Set by init.
	fdArg, sizeArg, offsetArg int8
	rest                      []argRole
}

// argRole is an argument and its role.
type argRole struct {
	i    int8
	role Arg
}

// AtFDCWD is the directory descriptor that means the working directory.
const AtFDCWD = -100

// Refs are what a call's arguments refer to that only the tracer can
// resolve: descriptors, directories, and the flags that say which.
type Refs struct {
	// FD is the descriptor the call acts on, when HasFD.
	FD    int32
	HasFD bool
	// OutFD is the descriptor a copy writes to, when HasOutFD.
	OutFD    int32
	HasOutFD bool
	// Dir are the directories Path and Path2 are relative to.
	Dir [2]int32
	// AtFlags are the call's AT_* flags.
	AtFlags uint32
	// IOV says Event.Size is the iovec lengths' sum, for the tracer to set.
	IOV bool
}

// fd is a descriptor argument: the low 32 bits, signed.
func fd(a uint64) int32 { return int32(uint32(a)) }

// Decode sets the event fields the call's argument registers a give
// (Mode, Info, Offset, Size, OpenFlags, IOFlags, an ioctl's name) and
// sets refs to what they refer to. The tracer then names the descriptors
// and resolves the strings (Row.StringSlot).
func (r *Row) Decode(a *[6]uint64, e *event.Event, refs *Refs) {
	*refs = Refs{Dir: [2]int32{AtFDCWD, AtFDCWD}}
	if i := r.fdArg; i >= 0 {
		refs.FD, refs.HasFD = fd(a[i]), true
	}
	if i := r.sizeArg; i >= 0 {
		e.Size = a[i]
	}
	if i := r.offsetArg; i >= 0 {
		e.Offset = int64(a[i])
	}
	for _, x := range r.rest {
		decodeArg(a, x.i, x.role, e, refs)
	}
}

// decodeArg decodes argument i of role (not FD, Size, Offset: Decode
// reads those).
func decodeArg(a *[6]uint64, i int8, role Arg, e *event.Event, refs *Refs) {
	v := a[i]
	switch role {
	case OutFD:
		refs.OutFD, refs.HasOutFD = fd(v), true
		e.Info = uint32(refs.OutFD)
	case DirFD:
		refs.Dir[0] = fd(v)
	case DirFD2:
		refs.Dir[1] = fd(v)
	case OpenFlags:
		e.OpenFlags = uint32(v)
	case OpenHow:
		e.OpenFlags, e.Mode = uint32(v), uint32(a[i+1])
	case Mode:
		e.Mode = uint32(v)
	case Info:
		e.Info = uint32(v)
	case IOV:
		refs.IOV = true
	case AtFlags:
		refs.AtFlags = uint32(v)
	case AtFlagsInfo:
		refs.AtFlags, e.Info = uint32(v), uint32(v)
	case Prot:
		e.IOFlags = uint32(v)
	case IoctlReq:
		e.Info, e.Note = uint32(v), ioctlNames[uint32(v)]
	case FirstFD:
		e.FD = fd(v)
	case LastFD:
		e.Size = v - a[i-1] + 1
	}
}

// StringSlot returns which string (0 or 1) the argument of role is, -1
// when the call has no such argument.
func (r *Row) StringSlot(role Arg) int { return int(r.slot[role]) }

// Strings returns the arguments of strings 0 and 1, -1 for none: what
// the tracer reads from the caller's memory.
func (r *Row) Strings() [2]int { return [2]int{int(r.strings[0]), int(r.strings[1])} }

// Has reports whether one of the call's arguments has role.
func (r *Row) Has(role Arg) bool { return r.Arg(role) >= 0 }

// Arg returns the index of the call's first argument of role, -1 for none.
func (r *Row) Arg(role Arg) int {
	for i, a := range r.Args {
		if a == role {
			return i
		}
	}
	return -1
}

// Calls returns the number of rows: the calls are 1 to Calls().
func Calls() Call { return Call(len(Table)) }

// Lookup returns the row of call c, nil when there is none.
func Lookup(c Call) *Row {
	if c == 0 || int(c) > len(Table) {
		return nil
	}
	return &Table[c-1]
}

// ByName returns the call named name, 0 when it is not traced.
func ByName(name string) Call { return byName()[name] }

// byName and numberOf are built on first use, not at every command's
// start-up.
var byName = sync.OnceValue(func() map[string]Call {
	m := make(map[string]Call, len(Table))
	for i := range Table {
		m[Table[i].Name] = Call(i + 1)
	}
	return m
})

func init() {
	for i := range Table {
		r := &Table[i]
		if err := r.index(); err != nil {
			panic(fmt.Sprintf("systable: %s: %v", r.Name, err))
		}
	}
}

// index sets the row's string slots, and checks what Decode and the
// tracer rely on (TestTable checks it too, with a message).
func (r *Row) index() error {
	if len(r.Args) > 6 {
		return fmt.Errorf("%d arguments, a system call has at most 6", len(r.Args))
	}
	r.strings = [2]int8{-1, -1}
	for i := range r.slot {
		r.slot[i] = -1
	}
	if r.Has(OutFD) && (r.Has(Info) || r.Has(IoctlReq)) {
		return fmt.Errorf("OutFD and Info both set Event.Info")
	}
	r.fdArg, r.sizeArg, r.offsetArg, r.rest = -1, -1, -1, nil
	n := 0
	for i, a := range r.Args {
		one := func(at *int8) error {
			if *at >= 0 {
				return fmt.Errorf("two arguments of role %d", a)
			}
			*at = int8(i)
			return nil
		}
		var err error
		switch a {
		case FD:
			err = one(&r.fdArg)
		case Size:
			err = one(&r.sizeArg)
		case Offset, PosOffset:
			err = one(&r.offsetArg)
		case Other, Buf, FDPair, Path, Path2, Target, AttrName, FDLabel:
		default:
			r.rest = append(r.rest, argRole{int8(i), a})
		}
		if err != nil {
			return err
		}
		switch a {
		case Path, Path2, Target, AttrName, FDLabel:
			if n == 2 {
				return fmt.Errorf("more than two strings")
			}
			if r.slot[a] >= 0 {
				return fmt.Errorf("two arguments of one string role")
			}
			r.strings[n] = int8(i)
			r.slot[a] = int8(n)
			n++
		case OpenHow:
			if i+1 >= 6 {
				return fmt.Errorf("OpenHow has no argument after it for the mode")
			}
		case LastFD:
			if i == 0 || r.Args[i-1] != FirstFD {
				return fmt.Errorf("LastFD not after FirstFD")
			}
		}
	}
	return nil
}

// Number returns the number of the call on architecture goarch (as
// runtime.GOARCH names it), false when the call does not exist there.
func (r *Row) Number(goarch string) (int, bool) {
	nr, ok := numberOf()[goarch][r.Name]
	return nr, ok
}

// Name returns the name of system call nr on goarch, "" when it is not
// known (for naming calls a table does not trace).
func Name(goarch string, nr int) string {
	names := numbers[goarch]
	if nr < 0 || nr >= len(names) {
		return ""
	}
	return names[nr]
}

// ByNumber returns the call number nr is on goarch, 0 when it is not
// traced.
func ByNumber(goarch string, nr int) Call { return byName()[Name(goarch, nr)] }

// numberOf maps each architecture's names to their numbers.
var numberOf = sync.OnceValue(func() map[string]map[string]int {
	m := make(map[string]map[string]int, len(numbers))
	for arch, names := range numbers {
		a := make(map[string]int, len(names))
		for nr, n := range names {
			if n != "" {
				a[n] = nr
			}
		}
		m[arch] = a
	}
	return m
})
