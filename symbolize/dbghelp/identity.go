package dbghelp

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Identity is what a trace stores about a Windows module's PDB: the file
// name its CodeView record names, and the GUID and age the PDB must have.
type Identity struct {
	Name string // base name, e.g. "ntkrnlmp.pdb"
	GUID [16]byte
	Age  uint32
}

// ParseID reads an identity in symbolize.PDBID's form,
// "pdb:NAME/GUIDAGE", where GUIDAGE is the symbol-store key: the GUID as
// 32 upper-case hex digits (Data1, Data2, Data3 as numbers, then Data4's
// 8 bytes) followed by the age in hex.
func ParseID(id string) (Identity, error) {
	rest, ok := strings.CutPrefix(id, "pdb:")
	if !ok {
		return Identity{}, fmt.Errorf("identity %q: not a PDB identity (pdb:NAME/GUIDAGE)", id)
	}
	name, key, ok := strings.Cut(rest, "/")
	if !ok || name == "" || strings.ContainsAny(name, `/\;`) || !utf8.ValidString(name) {
		return Identity{}, fmt.Errorf("identity %q: bad PDB name", id)
	}
	if len(key) < 33 || len(key) > 40 {
		return Identity{}, fmt.Errorf("identity %q: key %q is not 32 hex digits of GUID and 1 to 8 of age", id, key)
	}
	var out Identity
	out.Name = name
	field := func(s string, bits int) (uint64, error) {
		v, err := strconv.ParseUint(s, 16, bits)
		if err != nil {
			return 0, fmt.Errorf("identity %q: key %q: %w", id, key, err)
		}
		return v, nil
	}
	d1, err := field(key[0:8], 32)
	if err != nil {
		return Identity{}, err
	}
	d2, err := field(key[8:12], 16)
	if err != nil {
		return Identity{}, err
	}
	d3, err := field(key[12:16], 16)
	if err != nil {
		return Identity{}, err
	}
	binary.LittleEndian.PutUint32(out.GUID[0:], uint32(d1))
	binary.LittleEndian.PutUint16(out.GUID[4:], uint16(d2))
	binary.LittleEndian.PutUint16(out.GUID[6:], uint16(d3))
	for i := range 8 {
		b, err := field(key[16+2*i:18+2*i], 8)
		if err != nil {
			return Identity{}, err
		}
		out.GUID[8+i] = byte(b)
	}
	age, err := field(key[32:], 32)
	if err != nil {
		return Identity{}, err
	}
	out.Age = uint32(age)
	return out, nil
}

// Key is the identity's symbol-store directory name (GUIDAGE).
func (id Identity) Key() string {
	le := binary.LittleEndian
	return fmt.Sprintf("%08X%04X%04X%X%X", le.Uint32(id.GUID[0:]), le.Uint16(id.GUID[4:]), le.Uint16(id.GUID[6:]), id.GUID[8:16], id.Age)
}

// CodeView is the identity as the CodeView debug record a linker writes
// into an image (CV_INFO_PDB70): "RSDS", the GUID, the age
// (little-endian) and the PDB file name, UTF-8, NUL-terminated.
func (id Identity) CodeView() []byte {
	b := make([]byte, 0, 24+len(id.Name)+1)
	b = append(b, "RSDS"...)
	b = append(b, id.GUID[:]...)
	b = binary.LittleEndian.AppendUint32(b, id.Age)
	b = append(b, id.Name...)
	return append(b, 0)
}

// Kinds of debug data handed to dbghelp with a module (MODLOAD_DATA.ssig).
const (
	// HeaderDebugDirs: the data is an array of IMAGE_DEBUG_DIRECTORY
	// entries followed by the records they point to
	// (DBHHEADER_DEBUGDIRS): the image's debug directory, which is what
	// the debugger engine and trace readers hand dbghelp for an image that
	// is not on the machine.
	HeaderDebugDirs = 1
)

// debugDirSize is the size of an IMAGE_DEBUG_DIRECTORY.
const debugDirSize = 28

// DebugDirs is the DBHHEADER_DEBUGDIRS data for a module whose image is
// not at hand: one IMAGE_DEBUG_DIRECTORY of type CodeView (2), with the
// image's TimeDateStamp (0 when unknown), SizeOfData the record's length
// and PointerToRawData its offset in the data, followed by the record.
func DebugDirs(cv []byte, timestamp uint32) []byte {
	le := binary.LittleEndian
	b := make([]byte, 0, debugDirSize+len(cv))
	b = le.AppendUint32(b, 0)               // Characteristics
	b = le.AppendUint32(b, timestamp)       // TimeDateStamp
	b = le.AppendUint16(b, 0)               // MajorVersion
	b = le.AppendUint16(b, 0)               // MinorVersion
	b = le.AppendUint32(b, 2)               // Type: IMAGE_DEBUG_TYPE_CODEVIEW
	b = le.AppendUint32(b, uint32(len(cv))) // SizeOfData
	b = le.AppendUint32(b, 0)               // AddressOfRawData: not mapped
	b = le.AppendUint32(b, debugDirSize)    // PointerToRawData
	return append(b, cv...)
}
