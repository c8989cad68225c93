package symbolize

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ianlancetaylor/demangle"

	"github.com/iotrace/iotrace/symbolize/pdb"
)

// symFile is what a module file offers for naming addresses.
type symFile struct {
	id   string
	segs []segment // PT_LOAD segments
	// debugOnly marks a separate debug file: its code segments hold no
	// bytes, and their file offsets are not the program's.
	debugOnly bool
	syms      []symbol // function symbols, by address
	gos       *gosym.Table
	// lines is the DWARF line table, by address (nil without DWARF).
	lines []lineRow
	// pdb holds a Windows module's public symbols, by RVA (no ELF
	// fields are set then).
	pdb *pdb.File
}

// openPDB reads the PDB at path; its identity is "pdb:" + name + "/" +
// the symbol-store key of its GUID and age.
func openPDB(path, name string, done <-chan struct{}) (*symFile, error) {
	f, budget, err := openRegular(path, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	br := &budgetReader{r: f, left: budget, done: done}
	p, err := pdb.Parse(br, st.Size())
	if br.err != nil {
		err = br.err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &symFile{id: PDBID(name, p.GUID, p.Age), pdb: p}, nil
}

// PDBID is the identity of a Windows module whose CodeView record names
// PDB file name (its base name is used) with guid and age: "pdb:",
// the name, "/", and the symbol-store key (pdb.SymStoreKey).
func PDBID(name string, guid [16]byte, age uint32) string {
	return "pdb:" + baseName(name) + "/" + pdb.SymStoreKey(guid, age)
}

type segment struct{ off, vaddr, size uint64 }

type symbol struct {
	addr, size uint64
	name       string
}

type lineRow struct {
	addr uint64
	file string
	line int
	end  bool // end of a sequence: no row covers addr..next
}

// ReadID returns the identity of the ELF file at path ("gnu:HEX" or
// "go:ID"), "" when it has none.
func ReadID(path string) (string, error) {
	f, budget, err := openRegular(path, false)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readID(&budgetReader{r: f, left: budget})
}

// ReadIDAt is ReadID for an open file.
func ReadIDAt(r io.ReaderAt) (string, error) { return readID(r) }

func readID(r io.ReaderAt) (id string, err error) {
	defer func() {
		if p := recover(); p != nil {
			id, err = "", fmt.Errorf("malformed ELF file: %v", p)
		}
	}()
	ef, err := elf.NewFile(r)
	if err != nil {
		return "", err
	}
	defer ef.Close()
	return elfID(ef), nil
}

// elfID reads the GNU build-id note, else the Go build ID note.
func elfID(ef *elf.File) string {
	if id := noteDesc(ef, ".note.gnu.build-id", "GNU", 3); id != nil {
		return "gnu:" + hex.EncodeToString(id)
	}
	if id := noteDesc(ef, ".note.go.buildid", "Go", 4); id != nil {
		return "go:" + string(id)
	}
	// A file whose notes are only in program headers.
	for _, p := range ef.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data := make([]byte, min(p.Filesz, 1<<16))
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := findNote(data, ef.ByteOrder, "GNU", 3); id != nil {
			return "gnu:" + hex.EncodeToString(id)
		}
	}
	return ""
}

func noteDesc(ef *elf.File, section, owner string, typ uint32) []byte {
	s := ef.Section(section)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return nil
	}
	return findNote(data, ef.ByteOrder, owner, typ)
}

// findNote walks ELF notes (namesz, descsz, type, name, desc; 4-byte
// aligned) for one of owner and typ.
func findNote(data []byte, bo binary.ByteOrder, owner string, typ uint32) []byte {
	for len(data) >= 12 {
		namesz, descsz, t := bo.Uint32(data), bo.Uint32(data[4:]), bo.Uint32(data[8:])
		data = data[12:]
		nameEnd := (uint64(namesz) + 3) &^ 3
		descEnd := nameEnd + (uint64(descsz)+3)&^3
		if descEnd > uint64(len(data)) || uint64(namesz) > nameEnd || nameEnd+uint64(descsz) > uint64(len(data)) {
			return nil
		}
		name := string(bytes.TrimRight(data[:namesz], "\x00"))
		if name == owner && t == typ && descsz > 0 {
			return append([]byte(nil), data[nameEnd:nameEnd+uint64(descsz)]...)
		}
		data = data[descEnd:]
	}
	return nil
}

// openFile reads the identity, segments and symbols of the ELF file at
// path (a regular file; a final symbolic link not followed when
// noFollow). A malformed file is an error, never a panic; a file claiming
// more data than it holds is refused (see readBudget).
func openFile(path string, noFollow bool, done <-chan struct{}) (*symFile, error) {
	f, budget, err := openRegular(path, noFollow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := &budgetReader{r: f, left: budget, done: done}
	sf, err := parseFile(br)
	if br.err != nil {
		err = br.err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sf, nil
}

func parseFile(r *budgetReader) (sf *symFile, err error) {
	defer func() {
		if p := recover(); p != nil {
			sf, err = nil, fmt.Errorf("malformed ELF file: %v", p)
		}
	}()
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	if err := checkCompressed(ef, r); err != nil {
		return nil, err
	}
	sf = &symFile{id: elfID(ef)}
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		if p.Flags&elf.PF_X != 0 && p.Filesz == 0 && p.Memsz > 0 {
			sf.debugOnly = true
		}
		sf.segs = append(sf.segs, segment{off: p.Off, vaddr: p.Vaddr, size: max(p.Filesz, p.Memsz)})
	}
	for _, load := range []func() ([]elf.Symbol, error){ef.Symbols, ef.DynamicSymbols} {
		syms, err := load()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Section != elf.SHN_UNDEF {
				sf.syms = append(sf.syms, symbol{addr: s.Value, size: s.Size, name: s.Name})
			}
		}
	}
	slices.SortFunc(sf.syms, func(a, b symbol) int { return cmp.Or(cmp.Compare(a.addr, b.addr), cmp.Compare(b.size, a.size)) })
	sf.syms = slices.CompactFunc(sf.syms, func(a, b symbol) bool { return a.addr == b.addr })
	if s := ef.Section(".gopclntab"); s != nil && s.Type != elf.SHT_NOBITS {
		if data, err := s.Data(); err == nil {
			text := uint64(0)
			if t := ef.Section(".text"); t != nil {
				text = t.Addr
			}
			if tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text)); err == nil {
				sf.gos = tab
			}
		}
	}
	if d, err := ef.DWARF(); err == nil {
		sf.lines = lineTable(d)
	}
	return sf, nil
}

// checkCompressed refuses a file whose compressed sections claim more
// bytes, once decompressed, than the file may give (its budget): their
// sizes come from the file, and a small compressed stream can claim and
// produce gigabytes.
func checkCompressed(ef *elf.File, r *budgetReader) error {
	var claimed uint64
	for _, s := range ef.Sections {
		switch {
		case s.Flags&elf.SHF_COMPRESSED != 0:
			claimed += s.Size
		case strings.HasPrefix(s.Name, ".zdebug") && s.Type != elf.SHT_NOBITS:
			// GNU's older form: "ZLIB" and the size, big endian.
			var h [12]byte
			if _, err := r.ReadAt(h[:], int64(s.Offset)); err == nil && string(h[:4]) == "ZLIB" {
				claimed += binary.BigEndian.Uint64(h[4:])
			}
		}
		if claimed > uint64(r.left) {
			return fmt.Errorf("section %s: %w (%d bytes once decompressed)", s.Name, errBudget, claimed)
		}
	}
	return nil
}

// lineTable collects the rows of every line program, by address.
func lineTable(d *dwarf.Data) []lineRow {
	var rows []lineRow
	// Each line program is read once, however many units name it: rows
	// stay within one per byte of the line table.
	read := map[int64]bool{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		if off, ok := e.Val(dwarf.AttrStmtList).(int64); ok {
			if read[off] {
				continue
			}
			read[off] = true
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			name := ""
			if le.File != nil {
				name = le.File.Name
			}
			rows = append(rows, lineRow{addr: le.Address, file: name, line: le.Line, end: le.EndSequence})
		}
	}
	// At one address, a sequence's end comes before the next one's start.
	slices.SortStableFunc(rows, func(a, b lineRow) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		switch {
		case a.end && !b.end:
			return -1
		case b.end && !a.end:
			return 1
		}
		return 0
	})
	return rows
}

// vaddr translates a file offset into the file's virtual address.
func (sf *symFile) vaddr(off uint64) (uint64, bool) {
	for _, s := range sf.segs {
		if off >= s.off && off-s.off < s.size {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

func (sf *symFile) hasSymbols() bool { return len(sf.syms) > 0 || sf.gos != nil }

// lookup names the function at vaddr, with its source line when known.
func (sf *symFile) lookup(vaddr uint64) (name, file string, line int) {
	if sf.gos != nil {
		if fn := sf.gos.PCToFunc(vaddr); fn != nil {
			file, line, _ := sf.gos.PCToLine(vaddr)
			return fn.Name, file, line
		}
	}
	i := sort.Search(len(sf.syms), func(i int) bool { return sf.syms[i].addr > vaddr }) - 1
	if i < 0 {
		return "", "", 0
	}
	s := sf.syms[i]
	if s.size != 0 && vaddr-s.addr >= s.size {
		return "", "", 0
	}
	if s.size == 0 && i+1 < len(sf.syms) && vaddr >= sf.syms[i+1].addr {
		return "", "", 0
	}
	name = demangle.Filter(s.name)
	if j := sort.Search(len(sf.lines), func(j int) bool { return sf.lines[j].addr > vaddr }) - 1; j >= 0 && !sf.lines[j].end {
		file, line = sf.lines[j].file, sf.lines[j].line
	}
	return name, file, line
}

func sortFunc[T any](s []T, f func(a, b T) int) { slices.SortFunc(s, f) }
