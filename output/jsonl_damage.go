package output

import (
	"fmt"
	"strings"
)

// JSONLDamage is one damaged place in a jsonl trace.
type JSONLDamage struct {
	// Line is the line's number (from 1); 0 for the end of the input.
	Line int
	// Offset is the byte offset of the line (or of the end).
	Offset int64
	// Bytes is how many bytes were skipped there (the line's).
	Bytes int64
	// Lossless is set when nothing is missing for it: a line repeating
	// an event already read, a trailer before the end of the trace.
	Lossless bool
	// Err says what is wrong, naming the input, the line and the offset.
	Err error
}

// The counters the jsonl reader adds to a damaged trace's trailer.
const (
	// StatJSONLDamaged counts the damaged lines skipped (lost).
	StatJSONLDamaged = "jsonl lines damaged (skipped)"
	// StatJSONLRepeated counts the lines that repeat a line already read
	// (skipped, nothing lost).
	StatJSONLRepeated = "jsonl lines repeating a line already read (skipped, no event lost)"
	// StatJSONLStrayTrailers counts the trailers before the end of the
	// trace (read past, nothing lost).
	StatJSONLStrayTrailers = "jsonl trailers before the end of the trace (read past, no event lost)"
)

// maxListedDamage caps the damage a JSONLDamageError lists one by one.
const maxListedDamage = 16

// JSONLDamageError reports damage in a jsonl trace that the reader got
// past the header of: the damage it skipped and read past (every intact
// line was read), and where reading stopped, if it did before the end.
type JSONLDamageError struct {
	// Skipped lists the damage read past, the first maxListedDamage of
	// it; Count counts all of it, Lost the damaged lines among it that
	// may have held an event or fact (not Lossless), and Bytes the bytes
	// skipped.
	Skipped     []JSONLDamage
	Count, Lost int
	Bytes       int64
	// Stop is where reading stopped: a line that cannot be read past (a
	// second trace's header), or the end of the input without a trailer.
	// nil when the reader read to the trailer at the end.
	Stop *JSONLDamage
}

// Error names the first damage read past (and how much more), then where
// reading stopped.
func (e *JSONLDamageError) Error() string {
	var parts []string
	if len(e.Skipped) > 0 {
		s := e.Skipped[0].Err.Error()
		if e.Count > 1 {
			s += fmt.Sprintf(" (and %d more damaged lines, skipped; every intact line was read)", e.Count-1)
		}
		parts = append(parts, s)
	}
	if e.Stop != nil {
		parts = append(parts, e.Stop.Err.Error())
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the error that stopped reading, if any.
func (e *JSONLDamageError) Unwrap() error {
	if e.Stop == nil {
		return nil
	}
	return e.Stop.Err
}
