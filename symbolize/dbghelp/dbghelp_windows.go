//go:build windows && (amd64 || arm64)

package dbghelp

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The binding: dbghelp.dll from the system directory, found on first use
// (lazy procs, no cgo). The structures below are laid out as on 64-bit
// Windows (amd64, arm64), the only builds this file is part of.

var (
	moddbghelp = windows.NewLazySystemDLL("dbghelp.dll")

	procSymSetOptions         = moddbghelp.NewProc("SymSetOptions")
	procSymInitializeW        = moddbghelp.NewProc("SymInitializeW")
	procSymSetSearchPathW     = moddbghelp.NewProc("SymSetSearchPathW")
	procSymLoadModuleExW      = moddbghelp.NewProc("SymLoadModuleExW")
	procSymGetModuleInfoW64   = moddbghelp.NewProc("SymGetModuleInfoW64")
	procSymFromAddrW          = moddbghelp.NewProc("SymFromAddrW")
	procSymGetLineFromAddrW64 = moddbghelp.NewProc("SymGetLineFromAddrW64")
	procSymUnloadModule64     = moddbghelp.NewProc("SymUnloadModule64")
	procSymCleanup            = moddbghelp.NewProc("SymCleanup")

	allProcs = []*windows.LazyProc{procSymSetOptions, procSymInitializeW, procSymSetSearchPathW,
		procSymLoadModuleExW, procSymGetModuleInfoW64, procSymFromAddrW, procSymGetLineFromAddrW64,
		procSymUnloadModule64, procSymCleanup}

	// dbghelpMu serializes every call into dbghelp.dll: its functions are
	// single-threaded for the whole process, whatever the session.
	dbghelpMu sync.Mutex
	// sessions hands out the session handles: SymInitializeW wants a
	// unique non-zero value per session when no process is invaded.
	sessions atomic.Uintptr
)

// Symbol options. Chosen:
//   - SYMOPT_UNDNAME: C++ names undecorated, as demangled on Linux.
//   - SYMOPT_LOAD_LINES: source file and line for each frame.
//   - SYMOPT_EXACT_SYMBOLS: never a PDB whose GUID and age differ from
//     the module's record (the Resolver checks again after loading).
//   - SYMOPT_FAIL_CRITICAL_ERRORS, SYMOPT_NO_PROMPTS: no dialog boxes
//     (removable drives, symbol-server proxies): iotrace may run unattended.
//   - SYMOPT_OMAP_FIND_NEAREST: an address in code moved by a post-link
//     optimizer is named after the nearest function, as debuggers do.
//   - SYMOPT_AUTO_PUBLICS: the public symbols are searched last, after the
//     module's full symbols.
//
// Not chosen: SYMOPT_DEFERRED_LOADS, because a module is loaded only when
// a frame in it is named, and its outcome (PDB found and matching, or
// not) is needed right then to fall back to the next way of naming it;
// SYMOPT_LOAD_ANYTHING, which would accept an unmatched PDB;
// SYMOPT_DEBUG (noise on the debugger output).
const symOptions = 0x00000002 | // SYMOPT_UNDNAME
	0x00000010 | // SYMOPT_LOAD_LINES
	0x00000020 | // SYMOPT_OMAP_FIND_NEAREST
	0x00000200 | // SYMOPT_FAIL_CRITICAL_ERRORS
	0x00000400 | // SYMOPT_EXACT_SYMBOLS
	0x00010000 | // SYMOPT_AUTO_PUBLICS
	0x00080000 // SYMOPT_NO_PROMPTS

// modloadData is MODLOAD_DATA.
type modloadData struct {
	ssize uint32
	ssig  uint32
	data  unsafe.Pointer
	size  uint32
	flags uint32
}

// imagehlpModuleW64 is IMAGEHLP_MODULEW64 (3264 bytes on 64-bit).
type imagehlpModuleW64 struct {
	SizeOfStruct    uint32
	BaseOfImage     uint64
	ImageSize       uint32
	TimeDateStamp   uint32
	CheckSum        uint32
	NumSyms         uint32
	SymType         uint32
	ModuleName      [32]uint16
	ImageName       [256]uint16
	LoadedImageName [256]uint16
	LoadedPdbName   [256]uint16
	CVSig           uint32
	CVData          [260 * 3]uint16
	PdbSig          uint32
	PdbSig70        [16]byte
	PdbAge          uint32
	PdbUnmatched    int32
	DbgUnmatched    int32
	LineNumbers     int32
	GlobalSymbols   int32
	TypeInfo        int32
	SourceIndexed   int32
	Publics         int32
	MachineType     uint32
	Reserved        uint32
}

// maxSymName is how many UTF-16 units of a symbol's name are read.
const maxSymName = 2000

// symbolInfoW is SYMBOL_INFOW with room for maxSymName characters of
// name; SizeOfStruct is the C structure's size (88), without the room.
type symbolInfoW struct {
	SizeOfStruct uint32
	TypeIndex    uint32
	Reserved     [2]uint64
	Index        uint32
	Size         uint32
	ModBase      uint64
	Flags        uint32
	Value        uint64
	Address      uint64
	Register     uint32
	Scope        uint32
	Tag          uint32
	NameLen      uint32
	MaxNameLen   uint32
	Name         [maxSymName + 1]uint16
}

const sizeofSymbolInfoW = 88

// imagehlpLineW64 is IMAGEHLP_LINEW64.
type imagehlpLineW64 struct {
	SizeOfStruct uint32
	Key          uintptr
	LineNumber   uint32
	FileName     *uint16
	Address      uint64
}

// Layout checks: a wrong size is a compile error.
var (
	_ [3264 - unsafe.Sizeof(imagehlpModuleW64{})]byte
	_ [unsafe.Sizeof(imagehlpModuleW64{}) - 3264]byte
	_ [84 - unsafe.Offsetof(symbolInfoW{}.Name)]byte
	_ [unsafe.Offsetof(symbolInfoW{}.Name) - 84]byte
	_ [40 - unsafe.Sizeof(imagehlpLineW64{})]byte
	_ [unsafe.Sizeof(imagehlpLineW64{}) - 40]byte
	_ [24 - unsafe.Sizeof(modloadData{})]byte
)

// session is one dbghelp session.
type session struct {
	h uintptr
}

func openAPI() (API, error) {
	if err := moddbghelp.Load(); err != nil {
		return nil, fmt.Errorf("load dbghelp.dll from the system directory: %w", err)
	}
	for _, p := range allProcs {
		if err := p.Find(); err != nil {
			return nil, fmt.Errorf("dbghelp.dll: %w", err)
		}
	}
	// Handles that cannot be a real process's, unique per session.
	return &session{h: 0x1d000000 + sessions.Add(1)*4}, nil
}

// call runs one dbghelp function under the process-wide lock; a zero
// result is a failure, with GetLastError's error. Callers keep the
// memory their arguments point to alive (runtime.KeepAlive) until it
// returns.
func call(p *windows.LazyProc, args ...uintptr) (uintptr, error) {
	dbghelpMu.Lock()
	defer dbghelpMu.Unlock()
	r, _, e := p.Call(args...)
	if r == 0 {
		if errno, ok := e.(syscall.Errno); ok && errno != 0 {
			return 0, errno
		}
		return 0, errors.New(p.Name + " failed")
	}
	return r, nil
}

func (s *session) Initialize(searchPath string) error {
	dbghelpMu.Lock()
	procSymSetOptions.Call(symOptions)
	dbghelpMu.Unlock()
	p, err := windows.UTF16PtrFromString(searchPath)
	if err != nil {
		return err
	}
	_, err = call(procSymInitializeW, s.h, uintptr(unsafe.Pointer(p)), 0)
	runtime.KeepAlive(p)
	return err
}

func (s *session) SetSearchPath(path string) error {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return err
	}
	_, err = call(procSymSetSearchPathW, s.h, uintptr(unsafe.Pointer(p)))
	runtime.KeepAlive(p)
	return err
}

func (s *session) LoadModule(image string, base uint64, size uint32, kind uint32, data []byte) (uint64, error) {
	img, err := windows.UTF16PtrFromString(image)
	if err != nil {
		return 0, err
	}
	var md *modloadData
	if len(data) > 0 {
		md = &modloadData{ssize: uint32(unsafe.Sizeof(modloadData{})), ssig: kind, data: unsafe.Pointer(&data[0]), size: uint32(len(data))}
	}
	r, err := call(procSymLoadModuleExW, s.h, 0, uintptr(unsafe.Pointer(img)), 0, uintptr(base), uintptr(size), uintptr(unsafe.Pointer(md)), 0)
	runtime.KeepAlive(img)
	runtime.KeepAlive(md)
	runtime.KeepAlive(data)
	return uint64(r), err
}

func (s *session) ModuleInfo(base uint64) (ModuleInfo, error) {
	mi := new(imagehlpModuleW64)
	mi.SizeOfStruct = uint32(unsafe.Sizeof(*mi))
	_, err := call(procSymGetModuleInfoW64, s.h, uintptr(base), uintptr(unsafe.Pointer(mi)))
	runtime.KeepAlive(mi)
	if err != nil {
		return ModuleInfo{}, err
	}
	return ModuleInfo{
		SymType:      SymType(mi.SymType),
		PDBGUID:      mi.PdbSig70,
		PDBAge:       mi.PdbAge,
		PDBUnmatched: mi.PdbUnmatched != 0,
		LoadedPDB:    windows.UTF16ToString(mi.LoadedPdbName[:]),
	}, nil
}

func (s *session) FromAddr(addr uint64) (string, uint64, error) {
	si := new(symbolInfoW)
	si.SizeOfStruct = sizeofSymbolInfoW
	si.MaxNameLen = maxSymName
	var disp uint64
	_, err := call(procSymFromAddrW, s.h, uintptr(addr), uintptr(unsafe.Pointer(&disp)), uintptr(unsafe.Pointer(si)))
	runtime.KeepAlive(si)
	runtime.KeepAlive(&disp)
	if err != nil {
		return "", 0, err
	}
	n := min(int(si.NameLen), maxSymName)
	return windows.UTF16ToString(si.Name[:n]), disp, nil
}

func (s *session) LineFromAddr(addr uint64) (string, int, error) {
	var ln imagehlpLineW64
	ln.SizeOfStruct = uint32(unsafe.Sizeof(ln))
	var disp uint32
	dbghelpMu.Lock()
	defer dbghelpMu.Unlock()
	r, _, e := procSymGetLineFromAddrW64.Call(s.h, uintptr(addr), uintptr(unsafe.Pointer(&disp)), uintptr(unsafe.Pointer(&ln)))
	runtime.KeepAlive(&ln)
	runtime.KeepAlive(&disp)
	if r == 0 {
		return "", 0, e
	}
	// FileName points into dbghelp's memory: copied before the lock is
	// released.
	return windows.UTF16PtrToString(ln.FileName), int(ln.LineNumber), nil
}

func (s *session) UnloadModule(base uint64) error {
	_, err := call(procSymUnloadModule64, s.h, uintptr(base))
	return err
}

func (s *session) Cleanup() error {
	_, err := call(procSymCleanup, s.h)
	return err
}
