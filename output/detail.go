package output

import (
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/event"
)

// bitName names one bit (or, with mask, a multi-bit field value).
type bitName struct {
	bit  uint32
	name string
}

// Linux open flags (asm-generic values, also x86; arm64 swaps O_DIRECT,
// O_LARGEFILE, O_DIRECTORY and O_NOFOLLOW with each other).
var linuxOpenFlags = []bitName{
	{0x40, "O_CREAT"}, {0x80, "O_EXCL"}, {0x100, "O_NOCTTY"}, {0x200, "O_TRUNC"},
	{0x400, "O_APPEND"}, {0x800, "O_NONBLOCK"}, {0x1000, "O_DSYNC"}, {0x2000, "O_ASYNC"},
	{0x4000, "O_DIRECT"}, {0x8000, "O_LARGEFILE"}, {0x10000, "O_DIRECTORY"},
	{0x20000, "O_NOFOLLOW"}, {0x40000, "O_NOATIME"}, {0x80000, "O_CLOEXEC"},
	{0x100000, "O_SYNC"}, {0x200000, "O_PATH"}, {0x400000, "O_TMPFILE"},
}

// Windows CreateOptions (FILE_* without the prefix).
var winCreateOptions = []bitName{
	{0x1, "DIRECTORY_FILE"}, {0x2, "WRITE_THROUGH"}, {0x4, "SEQUENTIAL_ONLY"},
	{0x8, "NO_INTERMEDIATE_BUFFERING"}, {0x10, "SYNCHRONOUS_IO_ALERT"},
	{0x20, "SYNCHRONOUS_IO_NONALERT"}, {0x40, "NON_DIRECTORY_FILE"},
	{0x80, "CREATE_TREE_CONNECTION"}, {0x100, "COMPLETE_IF_OPLOCKED"},
	{0x200, "NO_EA_KNOWLEDGE"}, {0x400, "OPEN_REMOTE_INSTANCE"}, {0x800, "RANDOM_ACCESS"},
	{0x1000, "DELETE_ON_CLOSE"}, {0x2000, "OPEN_BY_FILE_ID"}, {0x4000, "OPEN_FOR_BACKUP_INTENT"},
	{0x8000, "NO_COMPRESSION"}, {0x10000, "OPEN_REQUIRING_OPLOCK"},
	{0x100000, "RESERVE_OPFILTER"}, {0x200000, "OPEN_REPARSE_POINT"},
	{0x400000, "OPEN_NO_RECALL"}, {0x800000, "OPEN_FOR_FREE_SPACE_QUERY"},
}

// Windows ShareAccess.
var winShare = []bitName{{0x1, "READ"}, {0x2, "WRITE"}, {0x4, "DELETE"}}

// Windows CreateDisposition values.
var winDispositions = [...]string{"SUPERSEDE", "OPEN", "CREATE", "OPEN_IF", "OVERWRITE", "OVERWRITE_IF"}

// Windows FileInformationClass values iotrace names.
var winInfoClasses = map[uint32]string{
	1: "FileDirectoryInformation", 2: "FileFullDirectoryInformation",
	3: "FileBothDirectoryInformation", 4: "FileBasicInformation",
	5: "FileStandardInformation", 6: "FileInternalInformation", 7: "FileEaInformation",
	8: "FileAccessInformation", 9: "FileNameInformation", 10: "FileRenameInformation",
	11: "FileLinkInformation", 12: "FileNamesInformation", 13: "FileDispositionInformation",
	14: "FilePositionInformation", 16: "FileModeInformation", 17: "FileAlignmentInformation",
	18: "FileAllInformation", 19: "FileAllocationInformation", 20: "FileEndOfFileInformation",
	22: "FileStreamInformation", 28: "FileCompressionInformation",
	34: "FileNetworkOpenInformation", 35: "FileAttributeTagInformation",
	37: "FileIdBothDirectoryInformation", 38: "FileIdFullDirectoryInformation",
	48: "FileNormalizedNameInformation", 59: "FileIdInformation",
	60: "FileIdExtdDirectoryInformation", 64: "FileDispositionInformationEx",
	65: "FileRenameInformationEx", 68: "FileStatInformation",
	70: "FileStatLxInformation", 71: "FileCaseSensitiveInformation",
}

var seekWhence = [...]string{"SEEK_SET", "SEEK_CUR", "SEEK_END", "SEEK_DATA", "SEEK_HOLE"}

// appendBits appends the names of the set bits of v separated by '|', and
// the hex value of any bits left over. It appends nothing for 0.
func appendBits(b []byte, v uint32, names []bitName) []byte {
	first := true
	sep := func() {
		if !first {
			b = append(b, '|')
		}
		first = false
	}
	for _, n := range names {
		if v&n.bit == n.bit {
			sep()
			b = append(b, n.name...)
			v &^= n.bit
		}
	}
	if v != 0 {
		sep()
		b = appendHex(b, uint64(v))
	}
	return b
}

// appendLinuxOpenFlags appends O_RDONLY|O_CLOEXEC style names.
func appendLinuxOpenFlags(b []byte, v uint32) []byte {
	switch v & 3 {
	case 0:
		b = append(b, "O_RDONLY"...)
	case 1:
		b = append(b, "O_WRONLY"...)
	case 2:
		b = append(b, "O_RDWR"...)
	default:
		b = append(b, "O_ACCMODE"...)
	}
	v &^= 3
	if v&0x400000 != 0 {
		v &^= 0x10000 // O_TMPFILE includes O_DIRECTORY
	}
	if v&0x100000 != 0 {
		v &^= 0x1000 // O_SYNC includes O_DSYNC
	}
	if v != 0 {
		b = append(b, '|')
		b = appendBits(b, v, linuxOpenFlags)
	}
	return b
}

// resultName appends the result of e: the bytes done for a successful
// transfer, "ok", "eof", "?" when the completion was not seen, or the
// errno / NTSTATUS name of a failure.
func appendResult(b []byte, e *event.Event, windows bool) []byte {
	switch {
	case e.Status == event.StatusUnknown:
		if e.Flags&event.FlagNoCompletion != 0 {
			return append(b, "-"...)
		}
		if e.Code == 0 {
			return append(b, "?"...)
		}
		return appendCode(b, e.Code, windows)
	case e.Status.Failed():
		if e.Code == 0 {
			return append(b, e.Status.String()...)
		}
		return appendCode(b, e.Code, windows)
	case e.Status == event.StatusEOF:
		return append(b, "EOF"...)
	}
	if e.Bytes >= 0 && e.Layer == event.LayerFile && (e.Op.IsRead() || e.Op.IsWrite() || e.Op == event.OpCopy || e.Op == event.OpReadDir) {
		return strconv.AppendInt(b, e.Bytes, 10)
	}
	return append(b, "ok"...)
}

// appendCode appends an errno or NTSTATUS name.
func appendCode(b []byte, code uint32, windows bool) []byte {
	if windows {
		return append(b, event.NTSTATUSName(code)...)
	}
	return append(b, event.ErrnoName(code)...)
}

// codeName returns the errno or NTSTATUS name of a non-zero code.
func codeName(code uint32, windows bool) string {
	if windows {
		return event.NTSTATUSName(code)
	}
	return event.ErrnoName(code)
}

// appendRWBS appends the kernel's rwbs letters for a block event: F
// (preflush), the op (R, W, D discard, F flush; W for a flush that is a
// preflush write), then F (FUA), A (readahead), S (sync), M (metadata).
func appendRWBS(b []byte, e *event.Event) []byte {
	if e.Flags&event.FlagPreflush != 0 {
		b = append(b, 'F')
	}
	switch e.Op {
	case event.OpBlockRead:
		b = append(b, 'R')
	case event.OpBlockWrite:
		b = append(b, 'W')
	case event.OpBlockDiscard:
		b = append(b, 'D')
	case event.OpBlockFlush:
		// A flush with the preflush flag is the kernel's empty write
		// carrying it (blkdev_issue_flush): "FW", as blktrace shows it
		// and as the eBPF backend's NATIVE column says.
		if e.Flags&event.FlagPreflush != 0 {
			b = append(b, 'W')
		} else {
			b = append(b, 'F')
		}
	default:
		b = append(b, 'N')
	}
	if e.Flags&event.FlagFUA != 0 {
		b = append(b, 'F')
	}
	if e.Flags&event.FlagReadahead != 0 {
		b = append(b, 'A')
	}
	if e.Flags&event.FlagSync != 0 {
		b = append(b, 'S')
	}
	if e.Flags&event.FlagMeta != 0 {
		b = append(b, 'M')
	}
	return b
}

// appendFileDetail appends the Process Monitor-like detail of a file
// event as space-separated key=value items, each preceded by a space.
func appendFileDetail(b []byte, e *event.Event, windows bool) []byte {
	if e.Op == event.OpOpen {
		if windows {
			if e.Disposition != 0 || e.OpenFlags != 0 || e.Mode != 0 {
				b = append(b, " disposition="...)
				if int(e.Disposition) < len(winDispositions) {
					b = append(b, winDispositions[e.Disposition]...)
				} else {
					b = strconv.AppendUint(b, uint64(e.Disposition), 10)
				}
			}
			if e.OpenFlags != 0 {
				b = append(b, " options="...)
				b = appendBits(b, e.OpenFlags, winCreateOptions)
			}
			if e.Mode != 0 {
				b = append(b, " share="...)
				b = appendBits(b, e.Mode, winShare)
			}
		} else {
			b = append(b, " flags="...)
			b = appendLinuxOpenFlags(b, e.OpenFlags)
			if e.Mode != 0 || e.OpenFlags&(0x40|0x400000) != 0 {
				b = append(b, " mode=0"...)
				b = strconv.AppendUint(b, uint64(e.Mode), 8)
			}
		}
	}
	if e.Info != 0 {
		switch {
		case windows && (e.Op == event.OpStat || e.Op == event.OpSetInfo || e.Op == event.OpReadDir || e.Op == event.OpDelete || e.Op == event.OpRename):
			b = append(b, " class="...)
			if n, ok := winInfoClasses[e.Info]; ok {
				b = append(b, n...)
			} else {
				b = strconv.AppendUint(b, uint64(e.Info), 10)
			}
		case !windows && strings.HasPrefix(e.Native, "io_uring"):
			// Info is the request's opcode; the backend names the ones
			// it knows in Native ("io_uring/READ").
			b = append(b, " opcode="...)
			if _, name, ok := strings.Cut(e.Native, "/"); ok && name != "" {
				b = append(b, name...)
			} else {
				b = strconv.AppendUint(b, uint64(e.Info), 10)
			}
		case !windows && e.Op == event.OpSeek && int(e.Info) < len(seekWhence):
			b = append(b, " whence="...)
			b = append(b, seekWhence[e.Info]...)
		default:
			b = append(b, " info="...)
			b = strconv.AppendUint(b, uint64(e.Info), 10)
		}
	}
	if e.FD >= 0 && e.Path != "" {
		b = append(b, " fd="...)
		b = strconv.AppendInt(b, int64(e.FD), 10)
	}
	if e.IOFlags != 0 {
		b = append(b, " ioflags="...)
		b = appendHex(b, uint64(e.IOFlags))
	}
	if e.Priority != 0 {
		b = append(b, " prio="...)
		b = strconv.AppendUint(b, uint64(e.Priority), 10)
	}
	if e.Flags != 0 {
		b = append(b, " ["...)
		b = appendFlags(b, e.Flags, '|')
		b = append(b, ']')
	}
	if e.CausedIOs != 0 {
		b = append(b, " → "...)
		b = strconv.AppendUint(b, uint64(e.CausedIOs), 10)
		b = append(b, " I/O "...)
		b = appendBytes(b, e.CausedBytes)
	}
	if e.ReadKnown() != 0 {
		b = appendProvenance(b, e)
	}
	return b
}

// appendProvenance appends where a read's bytes came from: " ← cached
// 4.0 KiB, read-ahead 60 KiB (#123), disk …, waited …" (the parts that
// are not 0; what is left of Bytes was not classified).
func appendProvenance(b []byte, e *event.Event) []byte {
	sep := " ← "
	for _, p := range [...]struct {
		name string
		v    uint64
	}{{"cached ", e.ReadCached}, {"read-ahead ", e.ReadAhead}, {"disk ", e.ReadDisk}, {"waited ", e.ReadWaited}} {
		if p.v == 0 {
			continue
		}
		b = append(b, sep...)
		b = append(b, p.name...)
		b = appendBytes(b, p.v)
		if p.name == "read-ahead " && e.ReadAheadFrom != 0 {
			b = append(b, " (#"...)
			b = strconv.AppendUint(b, e.ReadAheadFrom, 10)
			b = append(b, ')')
		}
		sep = ", "
	}
	if e.Bytes > 0 && uint64(e.Bytes) > e.ReadKnown() {
		b = append(b, sep...)
		b = append(b, "unknown "...)
		b = appendBytes(b, uint64(e.Bytes)-e.ReadKnown())
	}
	return b
}

// appendFlags appends the names of the set normalized flags separated by
// sep, without allocating.
func appendFlags(b []byte, f event.Flags, sep byte) []byte {
	first := true
	for i := 0; f>>i != 0; i++ {
		if f&(1<<i) == 0 {
			continue
		}
		if !first {
			b = append(b, sep)
		}
		first = false
		b = append(b, flagName(event.Flags(1<<i))...)
	}
	return b
}

// flagNames holds the name of each single flag, taken from
// event.Flags.String once.
var flagNames = func() [32]string {
	var n [32]string
	for i := range n {
		n[i] = event.Flags(1 << i).String()
		if n[i] == "" {
			n[i] = "bit" + strconv.Itoa(i)
		}
	}
	return n
}()

func flagName(f event.Flags) string {
	for i := range flagNames {
		if f == 1<<i {
			return flagNames[i]
		}
	}
	return ""
}

// parseFlag is the inverse of flagName.
func parseFlag(s string) (event.Flags, bool) {
	for i, n := range flagNames {
		if n == s {
			return 1 << i, true
		}
	}
	return 0, false
}
