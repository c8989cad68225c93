package unwind

import (
	"cmp"
	"slices"
	"sort"
)

// BuildVersion numbers the rules Build follows: a table cached by a build
// of another version is not used. Raise it with any change to what Build
// gives for a file.
const BuildVersion = 3

// Kind says how a module's frames are walked.
type Kind uint8

// Table kinds.
const (
	// KindCFI: by the table's rows (from .eh_frame, .debug_frame).
	KindCFI Kind = 1
	// KindFramePointers: by frame pointers (a Go program without CFI:
	// Go keeps frame pointers on amd64 and arm64).
	KindFramePointers Kind = 2
	// KindNone: the file has no unwind information.
	KindNone Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindCFI:
		return "cfi"
	case KindFramePointers:
		return "frame pointers"
	case KindNone:
		return "none"
	}
	return "kind?"
}

// Row is the rule from file offset Off up to the next row's.
type Row struct {
	Off  uint64
	Rule Rule
}

// Table is a file's unwind table: its rows sorted by file offset (the
// offset in the file of the instruction's byte: what an address minus
// its mapping's start plus the mapping's file offset gives). Before the
// first row and from a CFANone row on, no CFI covers the code.
type Table struct {
	Arch Arch
	Kind Kind
	Rows []Row
	// FDEs counts the frame description entries used; Bad those not
	// used (unreadable, overlapping another, outside the code).
	FDEs, Bad int
}

// Lookup returns the rule at file offset off.
func (t *Table) Lookup(off uint64) Rule {
	i := sort.Search(len(t.Rows), func(i int) bool { return t.Rows[i].Off > off }) - 1
	if i < 0 {
		return Rule{CFA: CFANone}
	}
	return t.Rows[i].Rule
}

// Rules returns the distinct rules of the table, in first-use order.
func (t *Table) Rules() []Rule {
	seen := map[Rule]bool{}
	var out []Rule
	for _, r := range t.Rows {
		if !seen[r.Rule] {
			seen[r.Rule] = true
			out = append(out, r.Rule)
		}
	}
	return out
}

// span is the rows of one FDE, by file offset: rows[0].Off is its start;
// end its end.
type span struct {
	rows []Row
	end  uint64
}

// assemble turns spans (any order) into a table's rows: sorted, a span
// overlapping an earlier one (by start) dropped and counted, a CFANone
// row where a span ends and the next does not begin, consecutive equal
// rules merged.
func assemble(spans []span) (rows []Row, dropped int) {
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Compare(a.rows[0].Off, b.rows[0].Off) })
	var end uint64
	for i, s := range spans {
		if i > 0 && s.rows[0].Off < end {
			dropped++
			continue
		}
		if len(rows) > 0 && s.rows[0].Off > end {
			rows = appendRow(rows, Row{Off: end, Rule: Rule{CFA: CFANone}})
		}
		for _, r := range s.rows {
			rows = appendRow(rows, r)
		}
		end = s.end
	}
	if len(rows) > 0 {
		rows = appendRow(rows, Row{Off: end, Rule: Rule{CFA: CFANone}})
	}
	return rows, dropped
}

// appendRow appends r, replacing a last row at the same offset and
// dropping r when it repeats the last row's rule.
func appendRow(rows []Row, r Row) []Row {
	if n := len(rows); n > 0 {
		if rows[n-1].Off == r.Off {
			rows = rows[:n-1]
			if n > 1 && rows[n-2].Rule == r.Rule {
				return rows
			}
		} else if rows[n-1].Rule == r.Rule {
			return rows
		}
	}
	return append(rows, r)
}

// overlay returns rows with [start, end) ruled by r.
func overlay(rows []Row, start, end uint64, r Rule) []Row {
	if end <= start {
		return rows
	}
	t := Table{Rows: rows}
	after := t.Lookup(end)
	var out []Row
	for _, x := range rows {
		if x.Off < start {
			out = appendRow(out, x)
		}
	}
	out = appendRow(out, Row{Off: start, Rule: r})
	out = appendRow(out, Row{Off: end, Rule: after})
	for _, x := range rows {
		if x.Off > end {
			out = appendRow(out, x)
		}
	}
	return out
}
