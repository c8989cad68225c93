package symbolize

import (
	"strings"

	"github.com/iotrace/iotrace/symbolize/dbghelp"
)

// PEResolver names addresses in Windows modules (those with a "pdb:"
// identity) through a system symbol engine: on Windows, dbghelp.dll
// (package dbghelp). It is asked first; what it cannot name goes to the
// pure-Go PDB reader, then stays module+0xoffset.
type PEResolver interface {
	// Resolve names the address rva bytes into the module of identity id
	// recorded at path with size bytes (0: unknown).
	Resolve(id, path string, size, rva uint64) dbghelp.Result
}

// peReason is the Reason an outcome of the system symbol engine stands
// for; Resolved for Failed, which says nothing about the module (the
// engine could not be used: its error is reported once, in Problems).
func peReason(o dbghelp.Outcome) Reason {
	switch o {
	case dbghelp.NoPDB:
		return NoFile
	case dbghelp.Unmatched:
		return IDMismatch
	case dbghelp.NoSymbols:
		return NoSymbols
	case dbghelp.NoSymbol:
		return NoSymbol
	}
	return Resolved
}

// resolvePE asks the system symbol engine for addr in m, a module with a
// "pdb:" identity. It returns the named frame and true, or the reason the
// engine gave (Resolved when none).
func (s *Symbolizer) resolvePE(f Frame, m *Module, addr uint64) (Frame, Reason, bool) {
	if s.pe == nil || !strings.HasPrefix(m.ID, "pdb:") {
		return f, Resolved, false
	}
	size := uint64(0)
	if m.End > m.Start {
		size = m.End - m.Start
	}
	res := s.pe.Resolve(m.ID, m.Path, size, addr-m.Start)
	if res.Outcome == dbghelp.Named {
		f.Function, f.File, f.Line = res.Function, res.File, res.Line
		return f, Resolved, true
	}
	if res.Outcome == dbghelp.Failed {
		s.peFailed++
		if s.peErr == nil {
			s.peErr = res.Err
		}
	}
	return f, peReason(res.Outcome), false
}

// PEFailures returns how many frames of Windows modules the system
// symbol engine could not be asked about (dbghelp.dll missing or failing,
// a malformed identity), and the first error; those frames went to the
// PDB reader.
func (s *Symbolizer) PEFailures() (uint64, error) { return s.peFailed, s.peErr }
