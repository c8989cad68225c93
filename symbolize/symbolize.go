package symbolize

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Module is an executable or library mapped into a process, as a trace
// records it.
type Module struct {
	// Path is the file as it was mapped.
	Path string
	// ID is the file's identity: "gnu:" and the hex GNU build-id, "go:"
	// and the Go build ID, or for a Windows image the PDB its CodeView
	// record names (PDBID: "pdb:NAME.pdb/GUIDAGE"); "" when unknown. A
	// Windows image known only by its "pe:" time stamp and size has no
	// identity its symbols can be found by: its frames count as NoID.
	ID string
	// Start and End bound the mapping's addresses; Offset is the file
	// offset mapped at Start.
	Start, End, Offset uint64
	// Vaddr is the ELF virtual address mapped at Start, read from the
	// file's program headers when the mapping was recorded (VaddrKnown).
	// It lets a separate debug file, whose program headers no longer
	// hold file offsets, name the module's addresses.
	Vaddr      uint64
	VaddrKnown bool
}

// Frame is one symbolized address.
type Frame struct {
	Addr uint64
	// Module is the base name of the module's path ("" when no module
	// holds Addr) and Offset the address's offset in the module's file.
	Module string
	Offset uint64
	// Function is the (demangled) function name; File and Line the
	// source position when debug information has it.
	Function string
	File     string
	Line     int
	// Reason says why Function is empty (Resolved when it is not).
	Reason Reason
}

// String renders the frame: "inner_fn (a.c:12)", "inner_fn", or
// "libfoo.so+0x1234" / "0x7f001234" when unresolved.
func (f Frame) String() string {
	if f.Function != "" {
		if f.File != "" {
			return f.Function + " (" + filepath.Base(f.File) + ":" + strconv.Itoa(f.Line) + ")"
		}
		return f.Function
	}
	if f.Module != "" {
		return f.Module + "+0x" + strconv.FormatUint(f.Offset, 16)
	}
	return "0x" + strconv.FormatUint(f.Addr, 16)
}

// Reason classifies a frame that could not be named.
type Reason uint8

// Reasons.
const (
	Resolved   Reason = iota
	NoModule          // no module of the process holds the address
	NoID              // the module was recorded without a debug identity (build-id, PDB GUID and age)
	NoFile            // no file with the module's identity was found
	IDMismatch        // files were found, but with another identity
	NoSymbols         // the matching file has no symbol table (stripped)
	NoSymbol          // no symbol covers the address
	BadFile           // the matching file could not be read
	NoLayout          // only a separate debug file matched, and the module was recorded without its virtual address
	BadID             // the identity the trace records is not one: refused, never used to name a file
	numReasons
)

var reasonNames = [...]string{
	"resolved",
	"frames outside every known module",
	"frames in modules recorded without a debug identity (ELF build-id, Go build ID, Windows PDB GUID and age)",
	"frames whose module's symbol file (by ELF build-id, Go build ID, Windows PDB GUID and age) was not found",
	"frames not named: the files found have another identity (build-id, PDB GUID and age)",
	"frames in modules whose file has no symbols (stripped)",
	"frames at addresses no symbol covers",
	"frames in module files that could not be read",
	"frames in modules recorded without their virtual address, with only a separate debug file",
	"frames not named: module identity not valid (not a build-id, Go build ID or PDB name, GUID and age)",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Options configure a Symbolizer.
type Options struct {
	// Dirs are the user's symbol directories (--symbols), searched
	// first: DIR/BUILDID/debuginfo (debuginfod's cache),
	// DIR/.build-id/xx/rest.debug and DIR/.build-id/xx/rest.
	Dirs []string
	// DebugDirs are the system's debug directories, searched next
	// (DIR/.build-id/xx/rest.debug); nil means /usr/lib/debug, an empty
	// non-nil slice none.
	DebugDirs []string
	// NoModulePath skips the module's own path (by default used last,
	// when its identity matches).
	NoModulePath bool
	// PE names Windows modules first, before the PDB reader; nil means
	// the system's: dbghelp.dll on Windows (package dbghelp), none
	// elsewhere.
	PE PEResolver
	// Done, when closed, stops the reading of symbol files (the command
	// was interrupted): files not read by then count as unreadable.
	Done <-chan struct{}
}

// Symbolizer names addresses. It caches the files it opens (by path) and
// counts the frames it could not name.
type Symbolizer struct {
	opts   Options
	files  map[string]*symFile // by path; nil value: unreadable
	byID   map[string]*symFile // by identity: the file chosen for it (nil: none)
	reason map[string]Reason   // by identity: why none was chosen
	counts [numReasons]uint64
	pe     PEResolver
	// peErr is why the system symbol engine could not be used (first
	// error), closePE ends its session.
	peErr    error
	peFailed uint64
	closePE  func() error
}

// New returns a Symbolizer.
func New(opts Options) *Symbolizer {
	if opts.DebugDirs == nil {
		opts.DebugDirs = []string{"/usr/lib/debug"}
	}
	s := &Symbolizer{opts: opts, files: map[string]*symFile{}, byID: map[string]*symFile{}, reason: map[string]Reason{}, pe: opts.PE}
	if s.pe == nil {
		s.pe = systemPE(s)
	}
	return s
}

// Close ends the system symbol engine's session, if one was opened (it
// is also ended when the Symbolizer is garbage collected).
func (s *Symbolizer) Close() error {
	if s.closePE == nil {
		return nil
	}
	return s.closePE()
}

// Counts returns how many frames were left unnamed, by reason (Resolved
// counts the named ones).
func (s *Symbolizer) Counts() map[Reason]uint64 {
	out := map[Reason]uint64{}
	for r, n := range s.counts {
		if n > 0 {
			out[Reason(r)] = n
		}
	}
	return out
}

// Symbolize names addr, an address in module m (nil when the trace knows
// no module holding it).
func (s *Symbolizer) Symbolize(m *Module, addr uint64) Frame {
	f := Frame{Addr: addr}
	if m == nil || addr < m.Start || (m.End != 0 && addr >= m.End) {
		return s.done(f, NoModule)
	}
	f.Module = baseName(m.Path)
	f.Offset = addr - m.Start + m.Offset
	switch kind, _, _ := parseID(m.ID); kind {
	case idNone:
		// No identity, or a Windows image known by its time stamp and
		// size alone: its PDB, the only source of its symbols here, is
		// matched by GUID and age, which the trace did not record.
		return s.done(f, NoID)
	case idInvalid:
		return s.done(f, BadID)
	}
	// A Windows module: the system's symbol engine first; when it cannot
	// name the frame, the PDB reader, and the more telling of the two
	// reasons is counted.
	f, peWhy, ok := s.resolvePE(f, m, addr)
	if ok {
		return s.done(f, Resolved)
	}
	sf, why := s.fileFor(m)
	if sf == nil {
		return s.done(f, max(why, peWhy))
	}
	if sf.pdb != nil {
		// A Windows image is mapped whole from its base: the offset
		// from Start is the RVA.
		rva := addr - m.Start
		if rva > math.MaxUint32 {
			return s.done(f, max(NoSymbol, peWhy))
		}
		if len(sf.pdb.Publics) == 0 {
			return s.done(f, max(NoSymbols, peWhy))
		}
		sym, _, ok := sf.pdb.Lookup(uint32(rva))
		if !ok {
			return s.done(f, max(NoSymbol, peWhy))
		}
		f.Function = sym.Name
		return s.done(f, Resolved)
	}
	var vaddr uint64
	switch {
	case m.VaddrKnown:
		vaddr = addr - m.Start + m.Vaddr
	case sf.debugOnly:
		return s.done(f, NoLayout)
	default:
		v, ok := sf.vaddr(f.Offset)
		if !ok {
			return s.done(f, NoSymbol)
		}
		vaddr = v
	}
	if !sf.hasSymbols() {
		return s.done(f, NoSymbols)
	}
	name, file, line := sf.lookup(vaddr)
	if name == "" {
		return s.done(f, NoSymbol)
	}
	f.Function, f.File, f.Line = name, file, line
	return s.done(f, Resolved)
}

func (s *Symbolizer) done(f Frame, r Reason) Frame {
	f.Reason = r
	s.counts[r]++
	return f
}

// fileFor returns the file with m's identity, or why there is none.
func (s *Symbolizer) fileFor(m *Module) (*symFile, Reason) {
	if sf, ok := s.byID[m.ID]; ok {
		return sf, s.reason[m.ID]
	}
	sf, why := s.find(m)
	s.byID[m.ID], s.reason[m.ID] = sf, why
	return sf, why
}

func (s *Symbolizer) find(m *Module) (*symFile, Reason) {
	why := NoFile
	// try reads the file at path; noFollow for a path that came from the
	// trace.
	try := func(path string, noFollow bool) *symFile {
		sf, err := s.open(path, noFollow)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				why = max(why, BadFile)
			}
			return nil
		}
		if sf.id != m.ID {
			why = max(why, IDMismatch)
			return nil
		}
		return sf
	}
	kind, name, key := parseID(m.ID)
	if kind == idPDB {
		// Symbol-store layout: DIR/NAME.pdb/GUIDAGE/NAME.pdb, the file's
		// own GUID and age checked.
		for _, d := range s.opts.Dirs {
			for _, n := range uniq(name, strings.ToLower(name)) {
				p, ok := within(d, n, key, n)
				if !ok {
					continue
				}
				sf, err := s.openPDB(p, name)
				if err != nil {
					if !errors.Is(err, os.ErrNotExist) {
						why = max(why, BadFile)
					}
					continue
				}
				if sf.id != m.ID {
					why = max(why, IDMismatch)
					continue
				}
				return sf, Resolved
			}
		}
		return nil, why
	}
	for _, p := range s.candidates(kind, key, m.Path) {
		if sf := try(p, false); sf != nil {
			return sf, Resolved
		}
	}
	if !s.opts.NoModulePath && filepath.IsAbs(m.Path) {
		if sf := try(m.Path, true); sf != nil {
			return sf, Resolved
		}
	}
	return nil, why
}

// candidates returns the paths in the symbol directories where a file of
// identity kind and key (the GNU build-id's hex) may be, in the order they
// are tried; each inside its directory.
func (s *Symbolizer) candidates(kind idKind, key, modPath string) []string {
	var out []string
	add := func(dir string, names ...string) {
		if p, ok := within(dir, names...); ok {
			out = append(out, p)
		}
	}
	switch kind {
	case idGNU:
		for _, d := range s.opts.Dirs {
			add(d, key, "debuginfo")
			add(d, ".build-id", key[:2], key[2:]+".debug")
			add(d, ".build-id", key[:2], key[2:])
		}
		for _, d := range s.opts.DebugDirs {
			add(d, ".build-id", key[:2], key[2:]+".debug")
		}
	case idGo:
		// Go programs carry their own symbols: a copy of the binary in a
		// symbol directory under its base name is found there.
		for _, d := range s.opts.Dirs {
			add(d, baseName(modPath))
		}
	}
	return out
}

// openPDB reads the PDB at path (cached).
func (s *Symbolizer) openPDB(path, name string) (*symFile, error) {
	if sf, ok := s.files[path]; ok {
		if sf == nil {
			return nil, os.ErrNotExist
		}
		return sf, nil
	}
	sf, err := openPDB(path, name, s.opts.Done)
	if err != nil {
		s.files[path] = nil
		return nil, err
	}
	s.files[path] = sf
	return sf, nil
}

// baseName is the last element of a module path recorded on Linux or
// Windows (either separator), whatever OS reads it.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// uniq returns its arguments without repeats.
func uniq(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// open reads the file at path (cached); noFollow for a path from a
// trace.
func (s *Symbolizer) open(path string, noFollow bool) (*symFile, error) {
	if sf, ok := s.files[path]; ok {
		if sf == nil {
			return nil, os.ErrNotExist
		}
		return sf, nil
	}
	sf, err := openFile(path, noFollow, s.opts.Done)
	if err != nil {
		s.files[path] = nil
		return nil, err
	}
	s.files[path] = sf
	return sf, nil
}

// Problems describes the unnamed frames for a trace's problem summary,
// one line per reason, most frequent first.
func (s *Symbolizer) Problems() []string {
	var out []string
	type rc struct {
		r Reason
		n uint64
	}
	var rs []rc
	for r, n := range s.counts {
		if Reason(r) != Resolved && n > 0 {
			rs = append(rs, rc{Reason(r), n})
		}
	}
	sortFunc(rs, func(a, b rc) int { return cmp.Compare(b.n, a.n) })
	for _, x := range rs {
		out = append(out, fmt.Sprintf("%d %s", x.n, x.r))
	}
	if s.peErr != nil {
		out = append(out, fmt.Sprintf("Windows symbols: %v (the PDB reader was used instead)", s.peErr))
	}
	return out
}
