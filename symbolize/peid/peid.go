// Package peid reads the identity of a Windows executable image (PE): the
// COFF time stamp, the image size and checksum that Windows symbol
// servers file binaries under, and the CodeView (RSDS) debug record that
// names the image's PDB by file name, GUID and age, from the debug
// directory.
//
// debug/pe parses the headers; the debug directory is not among what it
// decodes, so the few lines that walk it are written here (each offset
// checked against the file, errors name the field and offset).
package peid

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Identity is what identifies an image and its PDB.
type Identity struct {
	// TimeDateStamp, SizeOfImage and CheckSum are the headers' fields.
	TimeDateStamp uint32
	SizeOfImage   uint32
	CheckSum      uint32
	// Machine is the COFF machine (0x8664 x64, 0x14c x86, 0xaa64 arm64).
	Machine uint16
	// HasPDB reports a CodeView RSDS record: PDBGUID, PDBAge and PDBName
	// are then set (GUID in file order, as in the PDB).
	HasPDB  bool
	PDBGUID [16]byte
	PDBAge  uint32
	PDBName string
}

// Debug directory entry types.
const (
	debugTypeCodeView = 2
	debugEntrySize    = 28
	maxDebugEntries   = 64
	maxCodeViewSize   = 64 << 10
)

// ErrNotPE is returned for a file that is not a PE image.
var ErrNotPE = errors.New("peid: not a PE image")

// Read reads the identity of the image in r (size bytes).
func Read(r io.ReaderAt, size int64) (Identity, error) {
	f, err := pe.NewFile(io.NewSectionReader(r, 0, size))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrNotPE, err)
	}
	id := Identity{TimeDateStamp: f.TimeDateStamp, Machine: f.Machine}
	var dd pe.DataDirectory
	switch h := f.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		id.SizeOfImage, id.CheckSum = h.SizeOfImage, h.CheckSum
		if h.NumberOfRvaAndSizes > pe.IMAGE_DIRECTORY_ENTRY_DEBUG {
			dd = h.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_DEBUG]
		}
	case *pe.OptionalHeader32:
		id.SizeOfImage, id.CheckSum = h.SizeOfImage, h.CheckSum
		if h.NumberOfRvaAndSizes > pe.IMAGE_DIRECTORY_ENTRY_DEBUG {
			dd = h.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_DEBUG]
		}
	default:
		return id, fmt.Errorf("%w: no optional header", ErrNotPE)
	}
	if dd.VirtualAddress == 0 || dd.Size == 0 {
		return id, nil
	}
	off, ok := fileOffset(f, dd.VirtualAddress)
	if !ok {
		return id, fmt.Errorf("peid: debug directory at RVA %#x lies in no section's file data", dd.VirtualAddress)
	}
	n := dd.Size / debugEntrySize
	if n > maxDebugEntries {
		return id, fmt.Errorf("peid: debug directory at offset %#x: %d entries (size %d), more than %d", off, n, dd.Size, maxDebugEntries)
	}
	for i := uint32(0); i < n; i++ {
		var e [debugEntrySize]byte
		at := int64(off) + int64(i)*debugEntrySize
		if _, err := r.ReadAt(e[:], at); err != nil {
			return id, fmt.Errorf("peid: debug directory entry %d at offset %#x: %w", i, at, err)
		}
		if binary.LittleEndian.Uint32(e[12:]) != debugTypeCodeView {
			continue
		}
		dataSize, ptr := binary.LittleEndian.Uint32(e[16:]), binary.LittleEndian.Uint32(e[24:])
		if dataSize < 24 || dataSize > maxCodeViewSize || int64(ptr)+int64(dataSize) > size {
			return id, fmt.Errorf("peid: CodeView record of %d bytes at offset %#x does not fit the file (%d bytes)", dataSize, ptr, size)
		}
		cv := make([]byte, dataSize)
		if _, err := r.ReadAt(cv, int64(ptr)); err != nil {
			return id, fmt.Errorf("peid: CodeView record at offset %#x: %w", ptr, err)
		}
		if string(cv[:4]) != "RSDS" {
			continue // NB10 (PDB 2.0) and others: no GUID
		}
		id.HasPDB = true
		copy(id.PDBGUID[:], cv[4:20])
		id.PDBAge = binary.LittleEndian.Uint32(cv[20:])
		name := cv[24:]
		if j := bytes.IndexByte(name, 0); j >= 0 {
			name = name[:j]
		}
		id.PDBName = string(name)
		return id, nil
	}
	return id, nil
}

// fileOffset turns an RVA into a file offset through the section table.
func fileOffset(f *pe.File, rva uint32) (uint32, bool) {
	for _, s := range f.Sections {
		if rva >= s.VirtualAddress && rva-s.VirtualAddress < s.Size {
			return s.Offset + (rva - s.VirtualAddress), true
		}
	}
	return 0, false
}
