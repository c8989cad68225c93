package dbghelp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// API is the part of dbghelp a Resolver uses, one session (one
// SymInitializeW handle) per value. The Windows binding (New) calls
// dbghelp.dll; tests use a fake.
type API interface {
	// Initialize starts the session with a symbol search path, without
	// invading any process (SymSetOptions, SymInitializeW).
	Initialize(searchPath string) error
	// SetSearchPath replaces the session's symbol path
	// (SymSetSearchPathW).
	SetSearchPath(path string) error
	// LoadModule loads the symbols of the module named image (a path or
	// a base name; the file need not exist) at base for size bytes, with
	// debug data of kind (HeaderDebugDirs) describing its PDB
	// (SymLoadModuleExW). It returns the base dbghelp loaded it at.
	LoadModule(image string, base uint64, size uint32, kind uint32, data []byte) (uint64, error)
	// ModuleInfo describes the module loaded at base
	// (SymGetModuleInfoW64).
	ModuleInfo(base uint64) (ModuleInfo, error)
	// FromAddr names the symbol at or below addr (SymFromAddrW).
	FromAddr(addr uint64) (name string, displacement uint64, err error)
	// LineFromAddr gives addr's source file and line
	// (SymGetLineFromAddrW64).
	LineFromAddr(addr uint64) (file string, line int, err error)
	// UnloadModule forgets the module loaded at base (SymUnloadModule64).
	UnloadModule(base uint64) error
	// Cleanup ends the session (SymCleanup).
	Cleanup() error
}

// SymType is the kind of symbols dbghelp loaded for a module (SYM_TYPE).
type SymType uint32

// SYM_TYPE values that matter here.
const (
	SymNone     SymType = 0
	SymCoff     SymType = 1
	SymCv       SymType = 2
	SymPdb      SymType = 3
	SymExport   SymType = 4
	SymDeferred SymType = 5
	SymSym      SymType = 6
	SymDia      SymType = 7
	SymVirtual  SymType = 8
)

// ModuleInfo is what a Resolver checks after loading a module.
type ModuleInfo struct {
	SymType SymType
	// PDBGUID and PDBAge are the identity of the PDB dbghelp loaded
	// (PdbSig70, PdbAge); PDBUnmatched is set when dbghelp loaded a PDB
	// that does not match the image's record.
	PDBGUID      [16]byte
	PDBAge       uint32
	PDBUnmatched bool
	// LoadedPDB is the path of the PDB dbghelp loaded.
	LoadedPDB string
}

// Outcome is how a Resolver answered for one address.
type Outcome uint8

// Outcomes. Every one but Named leaves the frame to the caller's next
// way of naming it, and is counted there.
const (
	Named     Outcome = iota
	NoPDB             // dbghelp found no PDB with the module's identity on the symbol path
	Unmatched         // dbghelp loaded symbols of another identity (not used)
	NoSymbols         // the PDB has no symbols (stripped of publics)
	NoSymbol          // no symbol covers the address
	Failed            // dbghelp could not be used, or the identity is malformed
)

var outcomeNames = [...]string{"named", "no PDB found", "PDB of another identity", "PDB without symbols", "no symbol at the address", "dbghelp failed"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// Result names one address.
type Result struct {
	Function     string
	Displacement uint64 // from the function's start
	File         string // source file, "" when the PDB has no lines for it
	Line         int
	Outcome      Outcome
	// Err says what failed when Outcome is Failed (or why a module's PDB
	// was not used), for the problem summary's detail.
	Err error
}

// Options configure a Resolver.
type Options struct {
	// Dirs are the user's symbol directories (--symbols), in symbol-store
	// layout (DIR/NAME.pdb/GUIDAGE/NAME.pdb) or flat (DIR/NAME.pdb).
	Dirs []string
	// Getenv reads _NT_SYMBOL_PATH and _NT_ALT_SYMBOL_PATH; nil means
	// os.Getenv.
	Getenv func(string) string
	// Stat checks that a symbol-store entry exists; nil means os.Stat.
	Stat func(string) (os.FileInfo, error)
}

// Resolver names addresses in modules by identity through one dbghelp
// session, opened on first use. Each identity is loaded once, at a base
// of the Resolver's choosing (the same DLL mapped at different addresses
// in different processes, or two modules of different processes at the
// same address, never collide), and its outcome is cached: a module
// whose PDB is missing costs one search, not one per frame. Safe for
// concurrent use.
type Resolver struct {
	opts   Options
	newAPI func() (API, error)

	mu      sync.Mutex
	api     API
	initErr error
	mods    map[string]*module
	next    uint64 // next free base
}

type module struct {
	base, size uint64
	outcome    Outcome // Named when loaded and usable
	err        error
}

// Bases are handed out from here, 64 KiB aligned, with a gap between
// modules: dbghelp's address space is the session's own.
const (
	firstBase   = 0x10000000
	align       = 0x10000
	unknownSize = 0x40000000 // a module recorded without its size
)

// NewWith returns a Resolver over the API newAPI opens (on first use).
func NewWith(opts Options, newAPI func() (API, error)) *Resolver {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Stat == nil {
		opts.Stat = os.Stat
	}
	return &Resolver{opts: opts, newAPI: newAPI, mods: map[string]*module{}, next: firstBase}
}

// SearchPath is the symbol path for a module of identity id: for each
// --symbols directory, the module's symbol-store entry in it
// (DIR/NAME/GUIDAGE, when it exists: dbghelp finds the PDB there by
// name, with or without symsrv.dll) and the directory itself; then
// _NT_ALT_SYMBOL_PATH, then _NT_SYMBOL_PATH (whose srv* elements need
// symsrv.dll beside dbghelp.dll). The user's command line comes first,
// the environment after, as the debuggers order their paths. The current
// directory is not searched.
func (r *Resolver) SearchPath(id *Identity) string {
	var elems []string
	add := func(p string) {
		if p != "" && !strings.Contains(p, ";") {
			elems = append(elems, p)
		}
	}
	for _, d := range r.opts.Dirs {
		if id != nil {
			for _, n := range []string{id.Name, strings.ToLower(id.Name)} {
				p := filepath.Join(d, n, id.Key())
				if st, err := r.opts.Stat(p); err == nil && st.IsDir() {
					add(p)
					break
				}
			}
		}
		add(d)
	}
	for _, env := range []string{"_NT_ALT_SYMBOL_PATH", "_NT_SYMBOL_PATH"} {
		for _, e := range strings.Split(r.opts.Getenv(env), ";") {
			if e = strings.TrimSpace(e); e != "" {
				elems = append(elems, e)
			}
		}
	}
	return strings.Join(elems, ";")
}

// Resolve names the address rva bytes into the module of identity id
// ("pdb:NAME/GUIDAGE"), recorded at path with size bytes (0: unknown).
// path is handed to dbghelp as the image name: where the image is still
// there, dbghelp may read it, and its symbols are used only when the PDB
// they come from has the identity's GUID and age.
func (r *Resolver) Resolve(id, path string, size, rva uint64) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.mods[id]
	if m == nil {
		m = r.load(id, path, size)
		r.mods[id] = m
	}
	if m.outcome != Named {
		return Result{Outcome: m.outcome, Err: m.err}
	}
	if rva >= m.size {
		return Result{Outcome: NoSymbol}
	}
	addr := m.base + rva
	name, disp, err := r.api.FromAddr(addr)
	if err != nil || name == "" {
		return Result{Outcome: NoSymbol, Err: err}
	}
	res := Result{Function: name, Displacement: disp, Outcome: Named}
	if file, line, err := r.api.LineFromAddr(addr); err == nil && file != "" {
		res.File, res.Line = file, line
	}
	return res
}

// load loads the module of identity id into the session, and checks what
// dbghelp loaded.
func (r *Resolver) load(id, path string, size uint64) *module {
	ident, err := ParseID(id)
	if err != nil {
		return &module{outcome: Failed, err: err}
	}
	if r.api == nil && r.initErr == nil {
		r.api, r.initErr = r.newAPI()
		if r.initErr == nil {
			if err := r.api.Initialize(r.SearchPath(nil)); err != nil {
				r.initErr = fmt.Errorf("dbghelp: initialize: %w", err)
				r.api = nil
			}
		} else {
			r.initErr = fmt.Errorf("dbghelp: %w", r.initErr)
		}
	}
	if r.initErr != nil {
		return &module{outcome: Failed, err: r.initErr}
	}
	if size == 0 || size > unknownSize {
		size = unknownSize
	}
	base := r.next
	r.next += (size + 2*align - 1) &^ (align - 1)
	if err := r.api.SetSearchPath(r.SearchPath(&ident)); err != nil {
		return &module{outcome: Failed, err: fmt.Errorf("dbghelp: symbol path for %s: %w", id, err)}
	}
	image := path
	if image == "" {
		image = strings.TrimSuffix(ident.Name, ".pdb") + ".dll"
	}
	data := DebugDirs(ident.CodeView(), 0)
	got, err := r.api.LoadModule(image, base, uint32(size), HeaderDebugDirs, data)
	if err != nil || got == 0 {
		if err == nil {
			err = errors.New("no module loaded")
		}
		return &module{outcome: NoPDB, err: fmt.Errorf("dbghelp: load %s (%s): %w", path, id, err)}
	}
	m := &module{base: got, size: size}
	info, err := r.api.ModuleInfo(got)
	switch {
	case err != nil:
		m.outcome, m.err = Failed, fmt.Errorf("dbghelp: module info of %s: %w", id, err)
	case info.SymType != SymPdb && info.SymType != SymDia:
		// Exports, COFF or nothing: no PDB was found for the identity.
		m.outcome, m.err = NoPDB, fmt.Errorf("dbghelp: no PDB %s with GUID and age %s on the symbol path (symbols: %d)", ident.Name, ident.Key(), info.SymType)
	case info.PDBUnmatched || info.PDBGUID != ident.GUID || info.PDBAge != ident.Age:
		m.outcome, m.err = Unmatched, fmt.Errorf("dbghelp: %s has GUID and age %s, the module's are %s", info.LoadedPDB, Identity{GUID: info.PDBGUID, Age: info.PDBAge}.Key(), ident.Key())
	default:
		m.outcome = Named
	}
	if m.outcome != Named {
		if err := r.api.UnloadModule(got); err != nil && m.err != nil {
			m.err = fmt.Errorf("%w (unload: %v)", m.err, err)
		}
	}
	return m
}

// Close unloads every module and ends the dbghelp session.
func (r *Resolver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.api == nil {
		return nil
	}
	var errs []error
	for id, m := range r.mods {
		if m.outcome == Named {
			if err := r.api.UnloadModule(m.base); err != nil {
				errs = append(errs, fmt.Errorf("dbghelp: unload %s: %w", id, err))
			}
		}
	}
	if err := r.api.Cleanup(); err != nil {
		errs = append(errs, fmt.Errorf("dbghelp: cleanup: %w", err))
	}
	r.api, r.mods = nil, map[string]*module{}
	r.initErr = errors.New("dbghelp: resolver closed")
	return errors.Join(errs...)
}
