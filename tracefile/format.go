package tracefile

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
)

// Magic begins every .iot file: a non-ASCII byte (catches 7-bit
// transfers), "IOT", CR LF (catches newline conversion), ^Z and LF.
const Magic = "\x89IOT\r\n\x1a\n"

// Version is the format version this package writes and the newest it
// reads.
const Version = 4

// fileHeaderSize is Magic, the u16 version and u16 flags.
const fileHeaderSize = len(Magic) + 4

// chunkSync begins every chunk header; a reader that lost its place after
// damage searches for it.
const chunkSync = "IOTc"

// chunkHeaderSize is sync(4) type(1) reserved(3) length(4) crc(4).
const chunkHeaderSize = 16

// MaxChunkSize bounds a chunk's payload; longer lengths are damage.
const MaxChunkSize = 64 << 20

// Chunk types. Types with the high bit set are optional: a reader that
// does not know one skips it; an unknown type without it is an error.
const (
	chunkHeader   = 1
	chunkRecords  = 2
	chunkTrailer  = 3
	chunkOptional = 0x80
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Match reports whether a file beginning with head is a .iot trace (head
// may be shorter than the magic when the file is).
func Match(head []byte) bool {
	n := min(len(head), len(Magic))
	return n > 0 && bytes.Equal(head[:n], []byte(Magic[:n]))
}

// ErrNotTrace is wrapped by the error for a file that is not a .iot trace.
var ErrNotTrace = errors.New("not an iotrace trace file")

// VersionError is returned for a file written in a newer format version
// than this reader supports.
type VersionError struct {
	Version   int // the file's format version
	Supported int // the newest version this reader supports
}

// Error says which version the file has and which this reader supports.
func (e *VersionError) Error() string {
	return fmt.Sprintf("written by a newer iotrace: format version %d, this reader supports up to %d (upgrade iotrace to read it)",
		e.Version, e.Supported)
}

// Damage is one damaged region of a file.
type Damage struct {
	// Offset is the byte offset where the damage starts.
	Offset int64
	// Chunk is the index of the chunk at Offset (0 is the first chunk
	// after the file header).
	Chunk int
	// Reason says what is wrong ("CRC mismatch", "truncated").
	Reason string
	// Skipped is the number of bytes the reader could not use, up to the
	// next intact chunk or the end of the file.
	Skipped int64
	// Lossless is set when the region held nothing missing from what was
	// read: a records chunk repeating one read before, a stray trailer, a
	// second header.
	Lossless bool
	// End is set when nothing intact follows the damage: reading stopped
	// at Offset (the file is cut short, or unreadable from there).
	End bool
}

// String says where the damage is and what it is.
func (d Damage) String() string {
	return fmt.Sprintf("damaged at byte offset %d (%#x, chunk %d): %s", d.Offset, d.Offset, d.Chunk, d.Reason)
}

// DamageError reports a damaged or truncated file. The reader delivered
// every intact chunk before returning it.
type DamageError struct {
	// Path is the file's name, when known.
	Path string
	Damage
	// More lists further damaged regions after the first.
	More []Damage
	// NoneLost is set when no event or fact is missing: every region is
	// Lossless, or the trailer's counts of events and facts match what
	// was read.
	NoneLost bool
}

// Error names the file, the first damaged region, and how many more.
func (e *DamageError) Error() string {
	s := e.Damage.String()
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if len(e.More) > 0 {
		s += fmt.Sprintf(" (and %d more damaged regions)", len(e.More))
	}
	return s
}

// All returns every damaged region, the first one first.
func (e *DamageError) All() []Damage { return append([]Damage{e.Damage}, e.More...) }
