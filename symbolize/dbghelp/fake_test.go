package dbghelp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// fakePDB is a PDB the fake dbghelp can find: in directory dir, under
// name, with its identity and symbols (by RVA).
type fakePDB struct {
	dir, name string
	guid      [16]byte
	age       uint32
	syms      map[uint32]string
	lines     map[uint32]int
	empty     bool // loads, without symbols (SymNone)
}

type fakeModule struct {
	base, size uint64
	pdb        *fakePDB
}

// fakeAPI is dbghelp as the Resolver sees it: it decodes the CodeView
// record from the MODLOAD_DATA bytes (as dbghelp would) and looks for a
// PDB of that name, GUID and age in the search path's directories, as
// with SYMOPT_EXACT_SYMBOLS; acceptAny makes it load a PDB of the right
// name whatever its identity (a dbghelp that ignores the record).
type fakeAPI struct {
	pdbs      []*fakePDB
	acceptAny bool
	initErr   error

	path        string
	inited      bool
	cleaned     bool
	mods        map[uint64]*fakeModule
	loads       []string // images asked for
	unloads     int
	searchPaths []string
}

func (f *fakeAPI) Initialize(p string) error {
	if f.initErr != nil {
		return f.initErr
	}
	f.inited, f.path, f.mods = true, p, map[uint64]*fakeModule{}
	return nil
}

func (f *fakeAPI) SetSearchPath(p string) error {
	if !f.inited {
		return errors.New("not initialized")
	}
	f.path = p
	f.searchPaths = append(f.searchPaths, p)
	return nil
}

// decodeDebugDirs reads DBHHEADER_DEBUGDIRS data back as dbghelp
// would: the first CodeView entry's record, at PointerToRawData.
func decodeDebugDirs(data []byte) (name string, guid [16]byte, age uint32, err error) {
	le := binary.LittleEndian
	for d := data; len(d) >= 28; d = d[28:] {
		if le.Uint32(d[12:]) != 2 {
			continue
		}
		n, o := uint64(le.Uint32(d[16:])), uint64(le.Uint32(d[24:]))
		if o+n > uint64(len(data)) || n < 25 {
			return "", guid, 0, errors.New("CodeView record out of bounds")
		}
		cv := data[o : o+n]
		if string(cv[:4]) != "RSDS" || cv[len(cv)-1] != 0 {
			return "", guid, 0, fmt.Errorf("not an RSDS record: %q", cv)
		}
		copy(guid[:], cv[4:20])
		return string(bytes.TrimRight(cv[24:], "\x00")), guid, le.Uint32(cv[20:]), nil
	}
	return "", guid, 0, errors.New("no CodeView debug directory entry")
}

func (f *fakeAPI) LoadModule(image string, base uint64, size uint32, kind uint32, data []byte) (uint64, error) {
	if !f.inited {
		return 0, errors.New("not initialized")
	}
	f.loads = append(f.loads, image)
	for b, m := range f.mods {
		if base < m.base+m.size && b < base+uint64(size) {
			return 0, fmt.Errorf("module at %#x overlaps the one at %#x", base, b)
		}
	}
	if kind != HeaderDebugDirs {
		return 0, fmt.Errorf("debug data kind %d", kind)
	}
	name, guid, age, err := decodeDebugDirs(data)
	if err != nil {
		return 0, err
	}
	m := &fakeModule{base: base, size: uint64(size)}
	for _, dir := range strings.Split(f.path, ";") {
		for _, p := range f.pdbs {
			if p.dir == dir && p.name == name && (f.acceptAny || (p.guid == guid && p.age == age)) {
				m.pdb = p
				break
			}
		}
		if m.pdb != nil {
			break
		}
	}
	f.mods[base] = m
	return base, nil
}

func (f *fakeAPI) ModuleInfo(base uint64) (ModuleInfo, error) {
	m := f.mods[base]
	if m == nil {
		return ModuleInfo{}, errors.New("no module")
	}
	if m.pdb == nil {
		return ModuleInfo{SymType: SymExport}, nil
	}
	if m.pdb.empty {
		return ModuleInfo{SymType: SymNone}, nil
	}
	return ModuleInfo{SymType: SymPdb, PDBGUID: m.pdb.guid, PDBAge: m.pdb.age, LoadedPDB: m.pdb.dir + `\` + m.pdb.name}, nil
}

func (f *fakeAPI) find(addr uint64) (*fakeModule, uint32, bool) {
	for _, m := range f.mods {
		if addr >= m.base && addr < m.base+m.size {
			return m, uint32(addr - m.base), true
		}
	}
	return nil, 0, false
}

func (f *fakeAPI) FromAddr(addr uint64) (string, uint64, error) {
	m, rva, ok := f.find(addr)
	if !ok || m.pdb == nil {
		return "", 0, errors.New("ERROR_MOD_NOT_FOUND")
	}
	var rvas []uint32
	for r := range m.pdb.syms {
		rvas = append(rvas, r)
	}
	sort.Slice(rvas, func(i, j int) bool { return rvas[i] < rvas[j] })
	i := sort.Search(len(rvas), func(i int) bool { return rvas[i] > rva }) - 1
	if i < 0 {
		return "", 0, errors.New("ERROR_MOD_NOT_FOUND")
	}
	return m.pdb.syms[rvas[i]], uint64(rva - rvas[i]), nil
}

func (f *fakeAPI) LineFromAddr(addr uint64) (string, int, error) {
	m, rva, ok := f.find(addr)
	if !ok || m.pdb == nil {
		return "", 0, errors.New("no line")
	}
	if l, ok := m.pdb.lines[rva]; ok {
		return `C:\src\m.c`, l, nil
	}
	return "", 0, errors.New("no line")
}

func (f *fakeAPI) UnloadModule(base uint64) error {
	if f.mods[base] == nil {
		return errors.New("no module")
	}
	delete(f.mods, base)
	f.unloads++
	return nil
}

func (f *fakeAPI) Cleanup() error {
	f.cleaned, f.inited = true, false
	return nil
}
