package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/tracefile"
)

// damageSummary is what a reader's error says about the damage it met,
// whatever the format: the damage it read past, and where it stopped.
type damageSummary struct {
	offsets []int64 // byte offsets of the damage read past (maybe not all)
	regions int     // damage read past, in all
	bytes   int64   // bytes skipped, -1 when the reader does not say
	lost    bool    // events or facts may be missing for the damage read past
	stopped bool    // reading stopped before the end of the input
	stopAt  int64   // where
}

// summarize reads err's damage, when it is a reader's damage error
// (.iot, jsonl, .etl); false for any other error.
func summarize(err error) (damageSummary, bool) {
	var (
		s  damageSummary
		de *tracefile.DamageError
		je *output.JSONLDamageError
	)
	switch {
	case errors.As(err, &de):
		for _, d := range de.All() {
			if d.End {
				s.stopped, s.stopAt = true, d.Offset
				continue
			}
			s.offsets = append(s.offsets, d.Offset)
			s.regions++
			s.bytes += d.Skipped
			s.lost = s.lost || (!d.Lossless && !de.NoneLost)
		}
		return s, true
	case errors.As(err, &je):
		for _, d := range je.Skipped {
			s.offsets = append(s.offsets, d.Offset)
		}
		s.regions, s.bytes, s.lost = je.Count, je.Bytes, je.Lost > 0
		if je.Stop != nil {
			s.stopped, s.stopAt = true, je.Stop.Offset
		}
		return s, true
	}
	// .etl: every damaged buffer comes at the end of the pass, read past
	// unless the buffers after it could not be located.
	s.bytes = -1
	found := false
	var walk func(error)
	walk = func(err error) {
		var fe *etl.FormatError
		switch e := err.(type) {
		case *etl.FormatError:
			fe = e
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
			return
		case interface{ Unwrap() error }:
			if x := e.Unwrap(); x != nil {
				walk(x)
				return
			}
		}
		switch {
		case fe == nil:
			// A damaged buffer not listed one by one.
			s.regions++
			s.lost = true
		case fe.RestUnread:
			found = true
			s.stopped, s.stopAt = true, fe.BufferOffset
		default:
			found = true
			s.offsets = append(s.offsets, fe.BufferOffset)
			s.regions++
			s.lost = s.lost || !(errors.Is(fe, etl.ErrDuplicate) || errors.Is(fe, etl.ErrExtra))
		}
	}
	walk(err)
	return s, found
}

// The phrases of a damage message that say what happened to the output
// (TestCorrupt* check for them).
const (
	damageReadPast = "read past: every intact event was written"
	damageSomeLost = "what the damaged regions held was not"
	damageNoneLost = "and none was lost"
	damageStopped  = "reading stopped at byte offset"
)

// message says what happened to the output: the damage read past (and
// whether every event is there), then where reading stopped.
func (s damageSummary) message() string {
	var parts []string
	if s.regions > 0 {
		var b strings.Builder
		b.WriteString("damaged at byte offset")
		if len(s.offsets) != 1 || s.regions != 1 {
			b.WriteString("s")
		}
		for i, off := range s.offsets[:min(len(s.offsets), 3)] {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %d", off)
		}
		if more := s.regions - min(len(s.offsets), 3); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
		fmt.Fprintf(&b, " (%d %s", s.regions, plural(s.regions, "region", "regions"))
		if s.bytes > 0 {
			fmt.Fprintf(&b, ", %d %s skipped", s.bytes, plural(int(min(s.bytes, 2)), "byte", "bytes"))
		}
		b.WriteString("), " + damageReadPast)
		if s.lost {
			b.WriteString("; " + damageSomeLost)
		} else {
			b.WriteString(", " + damageNoneLost)
		}
		parts = append(parts, b.String())
	}
	if s.stopped {
		stop := fmt.Sprintf("%s %d: every event before it was written", damageStopped, s.stopAt)
		if len(parts) > 0 {
			stop = "then " + stop
		}
		parts = append(parts, stop)
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
