// Package pdb reads what naming an address in a Windows module needs from
// its Program Database: the PDB's identity (the GUID and age that the
// module's CodeView debug record names) and its public symbols, placed at
// relative virtual addresses through the PDB's copy of the module's
// section headers (and, for modules rearranged after linking, its OMAP
// table).
//
// A PDB 7.0 file is an MSF container: fixed-size blocks, a stream
// directory, and numbered streams made of blocks. Stream 1 is the PDB
// information stream (GUID, age); stream 3 the DBI stream, whose header
// names the symbol record stream (where the S_PUB32 records are) and whose
// optional debug header names the section header and OMAP streams.
//
// No kept Go library reads PDBs (the Microsoft DIA SDK and LLVM's
// reader are C++), so this is written here, for public symbols only: no
// types, no line numbers, no module symbols. Every offset and count read
// from the file is checked against the file's size before it is used,
// and the public symbols are cross-checked (address map order, the hash
// table's records, section bounds, name terminators, section layout): a
// damaged PDB gives an error naming the stream and offset, never a panic
// (fuzzed: FuzzParse), and a symbol at a wrong address only when an
// offset was changed within its neighbours' range, which no check can
// see (TestDamageNamesNoOtherSymbol).
package pdb
