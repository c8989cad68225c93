package synth

import (
	"strings"

	"github.com/iotrace/iotrace/event"
)

// file is a file of the simulated machine.
type file struct {
	path    string       // as the OS names it: absolute Linux path or NT path
	dos     string       // Windows DOS path; "" on Linux
	dev     event.Device // Linux partition holding the file
	disk    event.Device // block device its I/O goes to
	inode   uint64
	key     uint64 // Windows FileKey
	sector  uint64 // first sector on disk
	size    int64
	dir     bool
	keyUsed bool // Windows: an event carried its FileKey
	named   bool // Windows: a FileKey fact named it
	deleted bool
}

// display is the path shown to users: the Linux path or the DOS path.
func (f *file) display() string {
	if f.dos != "" {
		return f.dos
	}
	return f.path
}

// handle is an open file: a Linux fd or a Windows FileObject.
type handle struct {
	fd     int32
	fo     uint64
	f      *file
	pos    int64
	named  bool   // a fact names it (Windows: its FileObject or FileKey)
	name   string // the name its fd or FileObject fact gave it
	dos    string // Windows: name as a DOS path
	ready  int64  // time its open completed
	direct bool
}

type proc struct {
	pid       uint32
	start     int64
	ppid      uint32
	comm      string
	image     string
	cmdline   string
	threads   []*thread
	handles   []*handle // named handles to regular files and dirs
	hidden    []*handle // handles no fact names (unresolvable)
	nextFD    int32
	cwd       string
	exited    bool
	stdioName string
}

type thread struct {
	p    *proc
	tid  uint32
	cpu  uint32
	busy int64 // the thread is in a call until this time
}

// Linux open flags and friends.
const (
	oWronly    = 0x1
	oRdwr      = 0x2
	oCreat     = 0x40
	oTrunc     = 0x200
	oAppend    = 0x400
	oDirect    = 0x4000
	oDirectory = 0x10000
	oCloexec   = 0x80000
)

// Linux bio opf bits (req_op | req_flags, 6.x layout).
const (
	reqOpRead    = 0
	reqOpWrite   = 1
	reqOpFlush   = 2
	reqOpDiscard = 3
	reqSync      = 1 << 11
	reqMeta      = 1 << 12
	reqFUA       = 1 << 17
	reqPreflush  = 1 << 18
	reqRahead    = 1 << 19
)

// Windows constants.
const (
	fileOpen              = 1
	fileCreate            = 2
	fileOpenIf            = 3
	fileOverwriteIf       = 5
	fileDirectoryFile     = 0x1
	fileNoBuffering       = 0x8
	fileSyncNonAlert      = 0x20
	fileNonDirectoryFile  = 0x40
	shareAll              = 0x7
	fileOpened            = 1
	fileCreated           = 2
	irpNoCache            = 0x1
	irpPagingIO           = 0x2
	irpSyncAPI            = 0x4
	irpSyncPaging         = 0x40
	irpRead               = 0x800
	irpWrite              = 0x1000
	ntEndOfFile           = 0xC0000011
	ntNoMoreFiles         = 0x80000006
	ntNameNotFound        = 0xC0000034
	ntNameCollision       = 0xC0000035
	ntSharingViolation    = 0xC0000043
	ntAccessDenied        = 0xC0000022
	ntDeviceError         = 0xC0000185
	ntDiskFull            = 0xC000007F
	infoStandard          = 5
	infoAllInformation    = 18
	infoNetworkOpen       = 34
	infoBasic             = 4
	infoEndOfFile         = 20
	infoDisposition       = 13
	infoRename            = 10
	infoIDBothDirectory   = 37
	fsctlGetReparsePoint  = 0x900a8
	fsctlFileLevelTrim    = 0x98208
	notifyChangeFileName  = 0x1
	notifyChangeLastWrite = 0x10
	linuxFITRIM           = 0xc0185879
	linuxFSIOCGetFlags    = 0x80086601
	linuxInModifyCreate   = 0x102
	ioringOpReadv         = 1
	linuxSeekSet          = 0
	linuxProtRead         = 1
)

// Linux errno values used.
const (
	eIntr   = 4
	eIO     = 5
	eNoent  = 2
	eAcces  = 13
	eExist  = 17
	eNospc  = 28
	eNotdir = 20
)

var linuxSources = []string{
	"main.c", "parse.c", "lex.c", "eval.c", "gc.c", "io.c", "util.c", "hash.c",
	"table.c", "print.c", "config.c", "net.c",
}

var linuxHeaders = []string{
	"/usr/include/stdio.h", "/usr/include/stdlib.h", "/usr/include/string.h",
	"/usr/include/x86_64-linux-gnu/bits/types.h", "/usr/include/unistd.h",
	"/usr/include/errno.h", "/usr/lib/x86_64-linux-gnu/libc.so.6",
}

// unicodeNames exercise every UTF-8 length, combining marks and
// characters that need quoting in CSV and JSON.
var unicodeNames = []string{
	"données/résumé été.txt",
	"日本語/ファイル名.md",
	"русский/файл, с запятой.csv",
	"emoji/🚀 launch \"quoted\".rs",
	"combining/e\u0301te\u0301\ttab.txt",
}

// longPath returns a path of about n bytes under root, made of nested
// directories, using sep.
func longPath(root, sep string, n int) string {
	var b strings.Builder
	b.WriteString(root)
	for i := 0; b.Len() < n-16; i++ {
		b.WriteString(sep)
		b.WriteString("a-rather-long-directory-name-")
		b.WriteByte(byte('a' + i%26))
	}
	b.WriteString(sep)
	b.WriteString("deep-file.dat")
	return b.String()
}
