//go:build !windows

package symbolize

// systemPE: no system symbol engine outside Windows; the pure-Go PDB
// reader names Windows modules.
func systemPE(*Symbolizer) PEResolver { return nil }
