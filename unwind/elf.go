package unwind

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"sort"
)

// MaxCFIBytes bounds the CFI read from one file (.eh_frame and
// .debug_frame each): the largest of a Debian system's are a few MB.
const MaxCFIBytes = 256 << 20

// BuildFrom reads the ELF file r's call frame information into a table.
// A malformed file is an error, never a panic.
func BuildFrom(r io.ReaderAt) (t *Table, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("unwind: malformed ELF file: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("unwind: %w", err)
	}
	defer f.Close()
	return Build(f)
}

// Build reads f's call frame information into a table.
func Build(f *elf.File) (*Table, error) {
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("unwind: %v %v ELF files not supported", f.Class, f.Data)
	}
	var arch Arch
	switch f.Machine {
	case elf.EM_X86_64:
		arch = AMD64
	case elf.EM_AARCH64:
		arch = ARM64
	default:
		return nil, fmt.Errorf("unwind: machine %v not supported", f.Machine)
	}
	t := &Table{Arch: arch, Kind: KindCFI}
	code := execSegments(f)
	var spans []span
	var firstErr error
	// The pclntab rules are amd64's (the return address below the CFA);
	// an arm64 Go program's come from its .debug_frame.
	goProgram := isGo(f) && arch == AMD64
	if goProgram {
		// Go functions from the function table; .debug_frame (made
		// from the same table) is not needed.
		funcs, minLC, err := goFuncs(f)
		if err == nil {
			spans = goSpans(funcs, minLC, code)
		} else {
			goProgram = false
		}
	}
	for _, sec := range cfiSections(f, !goProgram) {
		fdes, bad, err := sec.entries()
		t.Bad += bad
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("unwind: %s: %w", sectionName(sec.eh), err)
		}
		for i := range fdes {
			s, ok := sec.span(&fdes[i], arch, code)
			if !ok {
				t.Bad++
				continue
			}
			spans = append(spans, s)
		}
	}
	var dropped int
	t.Rows, dropped = assemble(spans)
	t.FDEs = len(spans) - dropped
	t.Bad += dropped
	if len(t.Rows) == 0 {
		switch {
		case isGo(f):
			t.Kind = KindFramePointers // a Go program before 1.18, without DWARF
			return t, nil
		case firstErr != nil:
			return t, firstErr
		}
		t.Kind = KindNone
	}
	t.Rows = entryStop(f, t.Rows, code)
	return t, nil
}

func sectionName(eh bool) string {
	if eh {
		return ".eh_frame"
	}
	return ".debug_frame"
}

// segment is an executable PT_LOAD.
type segment struct {
	vaddr, off, size uint64
}

func execSegments(f *elf.File) []segment {
	var out []segment
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			out = append(out, segment{vaddr: p.Vaddr, off: p.Off, size: p.Filesz})
		}
	}
	return out
}

// fileOffsets converts [begin, end) from virtual addresses to file
// offsets; ok is false unless one executable segment holds it.
func fileOffsets(code []segment, begin, end uint64) (uint64, uint64, bool) {
	for _, s := range code {
		if begin >= s.vaddr && end <= s.vaddr+s.size && end >= begin {
			return begin - s.vaddr + s.off, end - s.vaddr + s.off, true
		}
	}
	return 0, 0, false
}

// span runs FDE fd and returns its rows by file offset; ok is false when
// its code is outside the executable segments or its instructions are
// bad.
func (s *cfiSection) span(fd *fde, arch Arch, code []segment) (span, bool) {
	if fd.end <= fd.begin {
		return span{}, false
	}
	start, end, ok := fileOffsets(code, fd.begin, fd.end)
	if !ok {
		return span{}, false
	}
	var rows []Row
	err := s.program(fd, arch, func(addr uint64, r Rule) {
		if addr >= fd.end {
			return
		}
		rows = appendRow(rows, Row{Off: addr - fd.begin + start, Rule: r})
	})
	if err != nil || len(rows) == 0 || rows[0].Off != start {
		return span{}, false
	}
	return span{rows: rows, end: end}, true
}

// cfiSections returns f's .eh_frame (from its section, or through
// PT_GNU_EH_FRAME when there are no section headers) and .debug_frame.
func cfiSections(f *elf.File, debugFrame bool) []*cfiSection {
	var out []*cfiSection
	if s := f.Section(".eh_frame"); s != nil && s.Type == elf.SHT_PROGBITS {
		if b, err := sectionData(s); err == nil {
			out = append(out, &cfiSection{data: b, addr: s.Addr, eh: true})
		}
	} else if s := ehFrameFromHeader(f); s != nil {
		out = append(out, s)
	}
	if s := f.Section(".debug_frame"); debugFrame && s != nil && s.Type == elf.SHT_PROGBITS {
		if b, err := sectionData(s); err == nil {
			out = append(out, &cfiSection{data: b, addr: s.Addr})
		}
	}
	return out
}

func sectionData(s *elf.Section) ([]byte, error) {
	if s.Size > MaxCFIBytes {
		return nil, fmt.Errorf("section %s: %d bytes", s.Name, s.Size)
	}
	b, err := io.ReadAll(io.LimitReader(s.Open(), MaxCFIBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxCFIBytes {
		return nil, fmt.Errorf("section %s: over %d bytes", s.Name, MaxCFIBytes)
	}
	return b, nil
}

// ehFrameFromHeader finds .eh_frame through the PT_GNU_EH_FRAME segment
// (.eh_frame_hdr), whose eh_frame_ptr gives its address; it runs to the
// end of the loaded segment holding it (its terminator ends it first).
func ehFrameFromHeader(f *elf.File) *cfiSection {
	for _, p := range f.Progs {
		if p.Type != elf.PT_GNU_EH_FRAME || p.Filesz < 8 || p.Filesz > MaxCFIBytes {
			continue
		}
		hdr := make([]byte, p.Filesz)
		if _, err := p.ReadAt(hdr, 0); err != nil {
			return nil
		}
		ptr, err := ehFramePtr(hdr, p.Vaddr)
		if err != nil {
			return nil
		}
		for _, l := range f.Progs {
			if l.Type != elf.PT_LOAD || ptr < l.Vaddr || ptr >= l.Vaddr+l.Filesz {
				continue
			}
			n := min(l.Vaddr+l.Filesz-ptr, MaxCFIBytes)
			b := make([]byte, n)
			if _, err := l.ReadAt(b, int64(ptr-l.Vaddr)); err != nil && !errors.Is(err, io.EOF) {
				return nil
			}
			return &cfiSection{data: b, addr: ptr, eh: true}
		}
	}
	return nil
}

// ehFramePtr reads .eh_frame_hdr's version and eh_frame_ptr: the address
// of .eh_frame.
func ehFramePtr(hdr []byte, addr uint64) (uint64, error) {
	r := &reader{b: hdr}
	if v := r.u8(); v != 1 {
		return 0, fmt.Errorf(".eh_frame_hdr version %d", v)
	}
	enc := r.u8()
	r.u8() // fde_count_enc
	r.u8() // table_enc
	return r.pointer(enc, addr, addr)
}

// entryStop marks the code at the file's entry point as the outermost
// frame when no CFI covers it: the kernel starts a program (or its
// interpreter, ld.so) there, with no caller (glibc's ld.so has no CFI
// for its _start; a program's crt1 _start says the same with
// DW_CFA_undefined).
func entryStop(f *elf.File, rows []Row, code []segment) []Row {
	if f.Entry == 0 {
		return rows
	}
	start, _, ok := fileOffsets(code, f.Entry, f.Entry+1)
	if !ok {
		return rows
	}
	t := Table{Rows: rows}
	if t.Lookup(start).CFA != CFANone {
		return rows
	}
	end := start + 256
	i := sort.Search(len(rows), func(i int) bool { return rows[i].Off > start })
	if i < len(rows) && rows[i].Off < end {
		end = rows[i].Off
	}
	for _, s := range code {
		if start >= s.off && start < s.off+s.size {
			end = min(end, s.off+s.size)
		}
	}
	return overlay(rows, start, end, Rule{CFA: CFAStop})
}

// isGo reports whether f is a Go program.
func isGo(f *elf.File) bool {
	return f.Section(".gopclntab") != nil || f.Section(".note.go.buildid") != nil || f.Section(".go.buildinfo") != nil
}
