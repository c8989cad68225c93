package unwind

import (
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"io"
)

// MaxCFIBytes bounds the CFI read from one file (.eh_frame and
// .debug_frame each): the largest of a Debian system's are a few MB.
const MaxCFIBytes = 256 << 20

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
	for _, sec := range cfiSections(f) {
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
	if isGo(f) {
		if len(t.Rows) == 0 {
			t.Kind = KindFramePointers
		} else {
			t.Rows = goStops(f, t.Rows, code)
		}
	} else if len(t.Rows) == 0 {
		t.Kind = KindNone
	}
	if len(t.Rows) == 0 && firstErr != nil {
		return t, firstErr
	}
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
func cfiSections(f *elf.File) []*cfiSection {
	var out []*cfiSection
	if s := f.Section(".eh_frame"); s != nil && s.Type == elf.SHT_PROGBITS {
		if b, err := sectionData(s); err == nil {
			out = append(out, &cfiSection{data: b, addr: s.Addr, eh: true})
		}
	} else if s := ehFrameFromHeader(f); s != nil {
		out = append(out, s)
	}
	if s := f.Section(".debug_frame"); s != nil && s.Type == elf.SHT_PROGBITS {
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

// isGo reports whether f is a Go program.
func isGo(f *elf.File) bool {
	return f.Section(".gopclntab") != nil || f.Section(".note.go.buildid") != nil || f.Section(".go.buildinfo") != nil
}

// goStops marks the Go runtime's functions whose caller cannot be found
// from CFI: the outermost frames (a walk that reaches them is complete)
// and the functions that switch stacks (the walk stops there).
func goStops(f *elf.File, rows []Row, code []segment) []Row {
	tab := goTable(f)
	if tab == nil {
		return rows
	}
	for i := range tab.Funcs {
		fn := &tab.Funcs[i]
		var r Rule
		switch fn.Name {
		case "runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.mstart_stub":
			r = Rule{CFA: CFAStop}
		case "runtime.systemstack", "runtime.systemstack_switch", "runtime.mcall", "runtime.morestack",
			"runtime.morestack_noctxt", "runtime.asmcgocall", "runtime.asmcgocall_no_g", "runtime.cgocallback",
			"runtime.gogo", "runtime.sigtramp", "runtime.cgoSigtramp", "runtime.sigreturn__sigaction":
			r = Rule{CFA: CFASwitch}
		default:
			continue
		}
		if start, end, ok := fileOffsets(code, fn.Entry, fn.End); ok {
			rows = overlay(rows, start, end, r)
		}
	}
	return rows
}

// goTable reads a Go program's function table (its pclntab: present in
// stripped programs too).
func goTable(f *elf.File) *gosym.Table {
	s := f.Section(".gopclntab")
	text := f.Section(".text")
	if s == nil || text == nil || s.Size > MaxCFIBytes*2 {
		return nil
	}
	b, err := s.Data()
	if err != nil {
		return nil
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(b, text.Addr))
	if err != nil {
		return nil
	}
	return tab
}
