// Package symbolize names code addresses, as package resolve names
// handles: a stack frame recorded as a raw address in a module (an
// executable or library mapped into a process, recorded with its load
// address and identity) becomes a function name, and a source file and
// line where debug information has them, when the trace is read, on any
// machine, after the processes are gone.
//
// The symbols come, in order, from the directories given by the user
// (--symbols DIR, in debuginfod's cache layout BUILDID/debuginfo or
// .build-id/xx/rest.debug), from /usr/lib/debug/.build-id/, and from the
// module's own path. A file is used only when its identity matches the
// module's: the GNU build-id, or for Go programs the Go build ID. A frame
// is never named from a file whose identity does not match; such frames,
// and frames whose module is unknown, missing, stripped or without an
// identity, stay module+0xoffset and are counted by Reason.
//
// A Windows image is identified by the PDB its CodeView record names
// (PDBID, read from the image with package peid): its public symbols come
// from a PDB in a --symbols directory in symbol-store layout
// (NAME.pdb/GUIDAGE/NAME.pdb) whose own GUID and age match, read by
// package pdb, on any OS. On Windows the system's symbol engine is asked
// first (package dbghelp: every function of a full PDB, source lines,
// _NT_SYMBOL_PATH), through the optional PEResolver the Windows build
// plugs in (Options.PE); elsewhere there is none.
//
// ELF symbol tables, DWARF line tables and Go's pclntab are read with the
// standard library (debug/elf, debug/dwarf, debug/gosym); C++ and Rust
// names are demangled with github.com/ianlancetaylor/demangle. What is
// written here is the project's own part: finding the file for an
// identity, checking it, translating a mapped address into the file's
// virtual address, and the lookup tables.
package symbolize
