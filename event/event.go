package event

// Event is one operation: a system call or file-system request paired from
// its start to its end, or a block I/O paired from submission to completion.
//
// Fields that do not apply hold their "none" value: -1 for FD and Offset,
// 0 for the rest. Sinks receive a *Event that is valid only for the duration
// of the call; copy it (a plain struct copy is enough) to keep it.
type Event struct {
	// ID identifies the event within its trace (unique, not necessarily
	// dense). Cause refers to it.
	ID uint64
	// Source is where the event was captured.
	Source Source
	// Layer is LayerFile or LayerBlock (or LayerMarker).
	Layer Layer
	// Op is the normalized operation.
	Op Op
	// Native is the OS-native operation name: "pread64", "FileIo/Read",
	// "DiskIo/Write", "io_uring/READV".
	Native string

	// Time is the start of the operation in nanoseconds from the trace
	// start (syscall enter, request issue, bio queue).
	Time int64
	// Duration is the time from start to completion in nanoseconds, or 0
	// when the event has no completion (see FlagNoCompletion).
	Duration int64
	// Wait is, for block I/O, the time from queue to issue to the driver;
	// Duration-Wait is the device service time. 0 elsewhere.
	Wait int64

	// CPU is the processor the operation started on.
	CPU uint32
	// Pid and Tid identify the thread that issued the operation (for block
	// I/O the submitter, never the thread current at completion).
	Pid, Tid uint32
	// ProcStart is the start time of process Pid (ns from trace start,
	// negative when it started before the trace; 0 when unknown). Together
	// with Pid it forms the ProcessKey.
	ProcStart int64
	// Comm is the process name (Linux comm, Windows image name).
	Comm string

	// Path is the file the operation applies to, resolved when known.
	Path string
	// Path2 is a second path: the new name of a rename, a link target.
	Path2 string
	// FD is the Linux file descriptor, or -1.
	FD int32
	// FileObject is the Windows FILE_OBJECT address (per open).
	FileObject uint64
	// FileKey is the Windows FileKey (the FILE_OBJECT's FsContext: per
	// file, shared by every open of it).
	FileKey uint64
	// Inode is the Linux inode number of the file, when known (writeback
	// bios, opens); with Dev it identifies the file.
	Inode uint64

	// Offset is the file offset of a file-layer read or write, the byte
	// offset on the device of a block I/O (Sector*512 on Linux, DiskIo
	// ByteOffset on Windows), or -1.
	Offset int64
	// Size is the byte count requested.
	Size uint64
	// Bytes is the byte count done (a read's return value, an
	// OpEnd's ExtraInfo), or -1 when unknown.
	Bytes int64

	// Status is the normalized outcome.
	Status Status
	// Code is the raw result: a Linux errno (positive) or an NTSTATUS.
	Code uint32

	// Flags are normalized flags (FlagDirect, FlagSync, ...).
	Flags Flags
	// OpenFlags are the raw open flags (Linux O_*) or the Windows
	// CreateOptions (without the disposition byte).
	OpenFlags uint32
	// Mode is the Linux creation mode or the Windows ShareAccess.
	Mode uint32
	// Disposition is the Windows CreateDisposition (FILE_OPEN=1, ...).
	Disposition uint8
	// Priority is the I/O priority (Windows 0-7, Linux ioprio class).
	Priority uint8
	// IOFlags are raw I/O flags: Windows IoFlags or IrpFlags, Linux bio
	// opf (req_op | req_flags).
	IOFlags uint32
	// Info is op-specific: Windows FileInformationClass, lseek whence,
	// fcntl lock command, a dup's new descriptor, io_uring opcode.
	Info uint32

	// Dev is the block device (or, for file events, the device holding
	// the file when known).
	Dev Device
	// Sector is the device sector (512 bytes) of a block I/O.
	Sector uint64

	// Request is the kernel's id of the in-flight request, used for
	// pairing: a bio address, an IRP address.
	Request uint64
	// Cause is the ID of the file-layer event that caused this block
	// event, 0 when none or unknown.
	Cause uint64
	// CausedIOs and CausedBytes count, on a file-layer event, the block
	// I/Os it caused and their bytes.
	CausedIOs   uint32
	CausedBytes uint64

	// ReadCached, ReadAhead, ReadDisk and ReadWaited say where the bytes
	// of a read of a regular file came from (Linux page cache, see
	// docs/block.md): already in memory (cached before the trace or
	// before this process touched them, or never from disk); brought in
	// during the trace by this process's read-ahead, complete when the
	// read began (ReadAheadFrom: the read whose read-ahead brought in
	// most of them, 0 when none did, as for a page fault's); read from
	// disk for this read (its own block I/O, or O_DIRECT); waited for on
	// disk I/O already in flight. On a classified read they add up to
	// Bytes; Bytes minus their sum is what could not be classified (all
	// 0: the read was not classified). 0 on every other event.
	ReadCached, ReadAhead, ReadDisk, ReadWaited uint64
	// ReadAheadFrom: see ReadAhead.
	ReadAheadFrom uint64

	// Note is free text: a marker's message, an io_uring op name.
	Note string

	// Stack is the ID of the stack (a FactStack of the same trace) that
	// issued the operation, 0 when none was captured.
	Stack uint64
}

// Reset sets e to an empty event with the "none" values for FD, Offset and
// Bytes.
func (e *Event) Reset() {
	*e = Event{FD: -1, Offset: -1, Bytes: -1}
}

// New returns an empty event (see [Event.Reset]).
func New() Event { return Event{FD: -1, Offset: -1, Bytes: -1} }

// End returns the completion time (Time + Duration).
func (e *Event) End() int64 { return e.Time + e.Duration }

// Thread returns the key of the issuing thread.
func (e *Event) Thread() ThreadKey { return MakeThreadKey(e.Pid, e.Tid, e.CPU) }

// Process returns the key of the issuing process.
func (e *Event) Process() ProcessKey { return ProcessKey{Pid: e.Pid, Start: e.ProcStart} }

// ReadKnown returns the bytes of a read whose provenance is known (the
// sum of ReadCached, ReadAhead, ReadDisk and ReadWaited).
func (e *Event) ReadKnown() uint64 { return e.ReadCached + e.ReadAhead + e.ReadDisk + e.ReadWaited }

// Failed reports whether the operation completed with an error.
func (e *Event) Failed() bool { return e.Status.Failed() }

// HasHandle reports whether the event names a file by a handle (an fd or a
// FileObject/FileKey) rather than, or as well as, by path.
func (e *Event) HasHandle() bool { return e.FD >= 0 || e.FileObject != 0 || e.FileKey != 0 }

// Flags are normalized event flags.
type Flags uint32

// Event flags. Block flags follow the kernel's rwbs letters.
const (
	FlagDirect           Flags = 1 << iota // O_DIRECT / non-cached I/O
	FlagSync                               // synchronous (REQ_SYNC, O_SYNC)
	FlagFUA                                // forced unit access
	FlagMeta                               // metadata I/O
	FlagPreflush                           // preceded by a cache flush
	FlagReadahead                          // readahead
	FlagWriteback                          // queued by a writeback thread, not by the process
	FlagPaging                             // paging I/O (Windows), page fault
	FlagNoCompletion                       // start seen, completion never seen
	FlagNoStart                            // completion seen, start never seen
	FlagCacheHit                           // read served from the page cache
	FlagAppend                             // append write
	FlagCreated                            // open created the file
	FlagTruncated                          // path or data truncated at capture
	FlagPathLate                           // path resolved after capture (user space)
	FlagDiscard                            // discard / write zeroes
	FlagWaitedIO                           // read queued no I/O itself but waited for I/O in flight (read-ahead, another reader)
	FlagFtraceCompletion                   // completion no BPF program saw, its time taken from the kernel's trace buffer (Linux block)
)

var flagNames = [...]string{
	"direct", "sync", "fua", "meta", "preflush", "readahead", "writeback",
	"paging", "no-completion", "no-start", "cache-hit", "append", "created",
	"truncated", "path-late", "discard", "waited-io", "ftrace-completion",
}

// String lists the set flags separated by '|'.
func (f Flags) String() string {
	if f == 0 {
		return ""
	}
	var b []byte
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			if len(b) > 0 {
				b = append(b, '|')
			}
			b = append(b, n...)
		}
	}
	return string(b)
}

// Device identifies a block device: Linux major:minor, or a Windows disk
// number (Major holds the disk number, Minor is 0, and IsDisk is set).
type Device struct {
	Major, Minor uint32
	// IsDisk marks a Windows disk number in Major.
	IsDisk bool
}

// IsZero reports whether no device is set.
func (d Device) IsZero() bool { return d == Device{} }

// String renders "8:0" or "disk0".
func (d Device) String() string {
	if d.IsZero() {
		return ""
	}
	if d.IsDisk {
		return "disk" + utoa(uint64(d.Major))
	}
	return utoa(uint64(d.Major)) + ":" + utoa(uint64(d.Minor))
}

func utoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}
