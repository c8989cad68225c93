package where

import (
	"fmt"
	"sort"
	"strings"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/suggest"
)

// Kind is the type of a [Field].
type Kind uint8

// Field kinds.
const (
	KindInt    Kind = iota // a number; Int gives it (Uint when Unsigned)
	KindString             // text; Str gives it
	KindEnum               // one name of Names; Int gives its index
	KindBool               // Int gives 0 or 1
	KindFlags              // a set of flag names; Int gives the event.Flags bits
)

var kindNames = [...]string{"int", "string", "enum", "bool", "flags"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// Field is one named property of an event, shared by filter expressions
// and script event values.
type Field struct {
	// Name is what expressions call the field ("latency").
	Name string
	// Kind is its type.
	Kind Kind
	// Doc says in a few words what the field holds.
	Doc string
	// Int returns the value of a KindInt, KindEnum, KindBool or KindFlags
	// field. An unsigned field above the int64 range wraps to negative.
	Int func(e *event.Event) int64
	// Uint returns the exact value of a field with Unsigned set.
	Uint func(e *event.Event) uint64
	// Unsigned marks a KindInt field stored as uint64 (addresses, ids).
	Unsigned bool
	// Str returns the value of a KindString field.
	Str func(e *event.Event) string
	// Names are the values of a KindEnum field, indexed by Int, or the
	// flag names of a KindFlags field, indexed by bit.
	Names []string
	// Parse turns a name into a KindEnum value; it accepts the aliases
	// the event package accepts.
	Parse func(name string) (int64, error)
}

func intField(name, doc string, f func(e *event.Event) int64) *Field {
	return &Field{Name: name, Kind: KindInt, Doc: doc, Int: f}
}

func uintField(name, doc string, f func(e *event.Event) uint64) *Field {
	return &Field{Name: name, Kind: KindInt, Doc: doc, Unsigned: true, Uint: f,
		Int: func(e *event.Event) int64 { return int64(f(e)) }}
}

func strField(name, doc string, f func(e *event.Event) string) *Field {
	return &Field{Name: name, Kind: KindString, Doc: doc, Str: f}
}

// enumNames lists the names of an enum up to the first value the event
// package does not name (it renders those as "kind(N)").
func enumNames(name func(i int) string) []string {
	var out []string
	for i := 0; i < 256; i++ {
		s := name(i)
		if strings.HasSuffix(s, ")") {
			break
		}
		out = append(out, s)
	}
	return out
}

// isWindows reports whether the event's Code is an NTSTATUS rather than a
// Linux errno: by its source when known, else by its magnitude (errno
// values are small, NTSTATUS warnings and errors have the top bits set).
func isWindows(e *event.Event) bool {
	switch e.Source {
	case event.SourceETWLive, event.SourceETLFile:
		return true
	case event.SourceEBPF, event.SourcePtrace:
		return false
	}
	return e.Code >= 0x10000
}

// Errno returns the symbolic name of e's result code ("ENOENT",
// "ACCESS_DENIED"), or "" when the code is 0.
func Errno(e *event.Event) string {
	if e.Code == 0 {
		return ""
	}
	if isWindows(e) {
		return event.NTSTATUSName(e.Code)
	}
	return event.ErrnoName(e.Code)
}

// Result returns e's outcome as a system call would: the bytes done (0
// when unknown) on success, the negated errno on a Linux failure, the
// NTSTATUS as a negative 32-bit number on a Windows failure.
func Result(e *event.Event) int64 {
	if e.Failed() {
		if isWindows(e) {
			return int64(int32(e.Code))
		}
		if e.Code != 0 {
			return -int64(e.Code)
		}
		return -1
	}
	if e.Bytes < 0 {
		return 0
	}
	return e.Bytes
}

var fieldList = []*Field{
	{Name: "op", Kind: KindEnum, Doc: "normalized operation: read, write, open, flush, bread, bwrite, ...",
		Int:   func(e *event.Event) int64 { return int64(e.Op) },
		Names: enumNames(func(i int) string { return event.Op(i).String() }),
		Parse: func(s string) (int64, error) { o, err := event.ParseOp(s); return int64(o), err }},
	{Name: "layer", Kind: KindEnum, Doc: "file (system calls, FileIo) or block (bios, DiskIo), or marker",
		Int:   func(e *event.Event) int64 { return int64(e.Layer) },
		Names: enumNames(func(i int) string { return event.Layer(i).String() }),
		Parse: func(s string) (int64, error) {
			if s == "unknown" {
				return int64(event.LayerUnknown), nil
			}
			l, err := event.ParseLayer(s)
			return int64(l), err
		}},
	{Name: "status", Kind: KindEnum, Doc: "normalized outcome: ok, not-found, denied, io-error, eof, ...",
		Int:   func(e *event.Event) int64 { return int64(e.Status) },
		Names: enumNames(func(i int) string { return event.Status(i).String() }),
		Parse: func(s string) (int64, error) { st, err := event.ParseStatus(s); return int64(st), err }},
	{Name: "source", Kind: KindEnum, Doc: "where the event was captured: ebpf, etw-live, etl-file, ...",
		Int:   func(e *event.Event) int64 { return int64(e.Source) },
		Names: enumNames(func(i int) string { return event.Source(i).String() }),
		Parse: func(s string) (int64, error) { so, err := event.ParseSource(s); return int64(so), err }},
	strField("path", "file the operation applies to (\"\" when unknown)", func(e *event.Event) string { return e.Path }),
	strField("path2", "second path: new name of a rename, link target", func(e *event.Event) string { return e.Path2 }),
	strField("comm", "process name (Linux comm, Windows image name)", func(e *event.Event) string { return e.Comm }),
	strField("native", "OS-native operation name: pread64, FileIo/Read, DiskIo/Write", func(e *event.Event) string { return e.Native }),
	strField("note", "free text: marker message, io_uring op name", func(e *event.Event) string { return e.Note }),
	strField("dev", "block device as major:minor (Linux) or diskN (Windows), \"\" when none", func(e *event.Event) string { return e.Dev.String() }),
	strField("errno", "symbolic result code: ENOENT, ACCESS_DENIED; \"\" on success", Errno),
	intField("time", "start time, ns from the trace start", func(e *event.Event) int64 { return e.Time }),
	intField("end", "completion time, ns from the trace start", func(e *event.Event) int64 { return e.Time + e.Duration }),
	intField("latency", "time from start to completion in ns (0 when no completion was seen)", func(e *event.Event) int64 { return e.Duration }),
	intField("duration", "same as latency", func(e *event.Event) int64 { return e.Duration }),
	intField("wait", "block I/O: ns queued before issue to the driver", func(e *event.Event) int64 { return e.Wait }),
	intField("service", "block I/O: device service time in ns (latency - wait)", func(e *event.Event) int64 { return e.Duration - e.Wait }),
	intField("cpu", "processor the operation started on", func(e *event.Event) int64 { return int64(e.CPU) }),
	intField("pid", "process id of the issuing thread (block I/O: the submitter)", func(e *event.Event) int64 { return int64(e.Pid) }),
	intField("tid", "thread id of the issuing thread", func(e *event.Event) int64 { return int64(e.Tid) }),
	intField("proc_start", "start time of the process, ns from the trace start (0 unknown)", func(e *event.Event) int64 { return e.ProcStart }),
	intField("fd", "Linux file descriptor, -1 when none", func(e *event.Event) int64 { return int64(e.FD) }),
	intField("offset", "file offset of a read or write, -1 when none", func(e *event.Event) int64 { return e.Offset }),
	uintField("size", "bytes requested", func(e *event.Event) uint64 { return e.Size }),
	intField("bytes", "bytes done, -1 when unknown", func(e *event.Event) int64 { return e.Bytes }),
	intField("result", "system-call style result: bytes done, or -errno / negative NTSTATUS on failure", Result),
	intField("code", "raw result code: Linux errno or NTSTATUS", func(e *event.Event) int64 { return int64(e.Code) }),
	{Name: "failed", Kind: KindBool, Doc: "True when the operation completed with an error",
		Int: func(e *event.Event) int64 { return b2i(e.Failed()) }},
	{Name: "flags", Kind: KindFlags, Doc: "set of flags: direct, sync, fua, meta, readahead, writeback, cache-hit, ...",
		Int:   func(e *event.Event) int64 { return int64(e.Flags) },
		Names: flagNameList},
	intField("open_flags", "raw open flags (O_*) or Windows CreateOptions", func(e *event.Event) int64 { return int64(e.OpenFlags) }),
	intField("mode", "Linux creation mode or Windows ShareAccess", func(e *event.Event) int64 { return int64(e.Mode) }),
	intField("disposition", "Windows CreateDisposition", func(e *event.Event) int64 { return int64(e.Disposition) }),
	intField("priority", "I/O priority", func(e *event.Event) int64 { return int64(e.Priority) }),
	intField("io_flags", "raw I/O flags: bio opf, Windows IoFlags/IrpFlags", func(e *event.Event) int64 { return int64(e.IOFlags) }),
	intField("info", "op-specific: FileInformationClass, lseek whence, fcntl lock command, a dup's new descriptor", func(e *event.Event) int64 { return int64(e.Info) }),
	intField("major", "block device major number (Windows: disk number)", func(e *event.Event) int64 { return int64(e.Dev.Major) }),
	intField("minor", "block device minor number", func(e *event.Event) int64 { return int64(e.Dev.Minor) }),
	uintField("sector", "device sector (512 bytes) of a block I/O", func(e *event.Event) uint64 { return e.Sector }),
	uintField("inode", "Linux inode number, 0 when unknown", func(e *event.Event) uint64 { return e.Inode }),
	uintField("file_object", "Windows FILE_OBJECT address", func(e *event.Event) uint64 { return e.FileObject }),
	uintField("file_key", "Windows FileKey", func(e *event.Event) uint64 { return e.FileKey }),
	uintField("request", "kernel id of the request: bio or IRP address", func(e *event.Event) uint64 { return e.Request }),
	uintField("id", "event id within its trace", func(e *event.Event) uint64 { return e.ID }),
	uintField("cause", "block I/O: id of the file-layer event that caused it, 0 when none", func(e *event.Event) uint64 { return e.Cause }),
	intField("caused_ios", "file event: number of block I/Os it caused", func(e *event.Event) int64 { return int64(e.CausedIOs) }),
	uintField("caused_bytes", "file event: bytes of the block I/Os it caused", func(e *event.Event) uint64 { return e.CausedBytes }),
	uintField("read_cached", "read: bytes already in memory (page-cache provenance, docs/block.md)", func(e *event.Event) uint64 { return e.ReadCached }),
	uintField("read_ahead", "read: bytes brought in by this process's read-ahead during the trace", func(e *event.Event) uint64 { return e.ReadAhead }),
	uintField("read_disk", "read: bytes read from disk for this read (its own block I/O, or O_DIRECT)", func(e *event.Event) uint64 { return e.ReadDisk }),
	uintField("read_waited", "read: bytes waited for on disk I/O already in flight", func(e *event.Event) uint64 { return e.ReadWaited }),
	uintField("read_ahead_from", "read: id of the read whose read-ahead brought in most of read_ahead, 0 when none", func(e *event.Event) uint64 { return e.ReadAheadFrom }),
}

var fieldMap = func() map[string]*Field {
	m := make(map[string]*Field, len(fieldList))
	for _, f := range fieldList {
		m[f.Name] = f
	}
	return m
}()

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

var flagNameList = flagNames()

func flagNames() []string {
	var out []string
	for i := 0; i < 32; i++ {
		s := event.Flags(1 << i).String()
		if s == "" {
			break
		}
		out = append(out, s)
	}
	return out
}

// Fields returns every field in documentation order. The slice and the
// fields are shared: do not modify them.
func Fields() []*Field { return fieldList }

// Lookup returns the field called name.
func Lookup(name string) (*Field, bool) {
	f, ok := fieldMap[name]
	return f, ok
}

// FieldNames returns the field names sorted.
func FieldNames() []string {
	out := make([]string, 0, len(fieldList))
	for _, f := range fieldList {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// NameError says that name is not a value of the enum or flags field f:
// the field's names and, when one is near, the name it likely meant
// ("did you mean"). Filters and scripts report unknown names with it.
func (f *Field) NameError(name string) string {
	if f.Kind == KindFlags {
		return fmt.Sprintf("unknown flag %q%s (flags: %s)", name, suggest.Hint(name, f.Names), strings.Join(f.Names, ", "))
	}
	return fmt.Sprintf("%s %q is not one of: %s%s", f.Name, name, strings.Join(f.Names, ", "), suggest.Hint(name, f.Names))
}

// FlagBit returns the event.Flags bit called name ("sync").
func FlagBit(name string) (event.Flags, bool) {
	for i, n := range flagNameList {
		if n == name {
			return 1 << i, true
		}
	}
	return 0, false
}
