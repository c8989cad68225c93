package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/iotrace/iotrace/internal/termesc"
)

// FormatBytes renders a byte count with a binary unit: "512 B", "4.0 KiB",
// "1.25 GiB".
func FormatBytes(b uint64) string {
	const unit = 1024
	if b < unit {
		return strconv.FormatUint(b, 10) + " B"
	}
	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit && exp < 5; n /= unit {
		div *= unit
		exp++
	}
	v := float64(b) / float64(div)
	prec := 1
	if v < 10 {
		prec = 2
	}
	if v >= 100 {
		prec = 0
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + "KMGTPE"[exp:exp+1] + "iB"
}

// FormatDuration renders ns with three significant digits: "850ns",
// "12.3µs", "4.56ms", "1.20s"; minutes and hours past 100 s.
func FormatDuration(ns uint64) string {
	f := float64(ns)
	switch {
	case ns < 1000:
		return strconv.FormatUint(ns, 10) + "ns"
	case ns < 1_000_000:
		return sig3(f/1e3) + "µs"
	case ns < 1_000_000_000:
		return sig3(f/1e6) + "ms"
	case ns < 100_000_000_000:
		return sig3(f/1e9) + "s"
	case ns < 3600_000_000_000:
		return fmt.Sprintf("%dm%02ds", ns/60_000_000_000, ns/1_000_000_000%60)
	}
	return fmt.Sprintf("%dh%02dm", ns/3600_000_000_000, ns/60_000_000_000%60)
}

func sig3(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// FormatCount renders n with thousands separators: "1,234,567".
func FormatCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// FormatPercent renders a ratio in [0, 1] as "97.5%".
func FormatPercent(r float64) string {
	return strconv.FormatFloat(r*100, 'f', 1, 64) + "%"
}

// Table lays out rows in aligned columns. Columns whose Right flag is set
// are right-aligned (numbers). Cells may hold ANSI colour sequences; they
// do not count towards the width.
type Table struct {
	Header []string
	Right  []bool
	Rows   [][]string
	// Indent is prepended to every line.
	Indent string
	// Fit, when above 0, is the widest line: the column Shrink (a path,
	// shortened at its start) is narrowed until the table fits, to no
	// less than 24 runes; when even that is too wide, its cells go on
	// lines of their own above their rows.
	Fit    int
	Shrink int
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write draws the table; the last column is never padded.
func (t *Table) Write(w io.Writer) error {
	widths := make([]int, len(t.Header))
	measure := func(row []string) {
		for i, c := range row {
			if i < len(widths) {
				widths[i] = max(widths[i], visibleWidth(c))
			}
		}
	}
	measure(t.Header)
	for _, r := range t.Rows {
		measure(r)
	}
	var b strings.Builder
	rows := t.Rows
	var above []string // per row, a Shrink cell drawn on a line of its own
	if k := t.Shrink; t.Fit > 0 && k < len(widths) {
		total := visibleWidth(t.Indent) + 2*(len(widths)-1)
		for _, w := range widths {
			total += w
		}
		if total > t.Fit {
			room := widths[k] - (total - t.Fit)
			own := room < 24
			if own {
				room = visibleWidth(t.Header[k])
				above = make([]string, len(rows))
			}
			rows = make([][]string, len(t.Rows))
			for i, r := range t.Rows {
				rows[i] = r
				if k >= len(r) || visibleWidth(r[k]) <= room {
					continue
				}
				rows[i] = append([]string(nil), r...)
				if own {
					above[i] = ShortenPath(r[k], t.Fit-visibleWidth(t.Indent))
					rows[i][k] = ""
				} else {
					rows[i][k] = ShortenPath(r[k], room)
				}
			}
			widths[k] = room
		}
	}
	line := func(row []string) {
		b.WriteString(t.Indent)
		for i := range widths {
			c := ""
			if i < len(row) {
				c = row[i]
			}
			pad := widths[i] - visibleWidth(c)
			last := i == len(widths)-1
			if i < len(t.Right) && t.Right[i] {
				b.WriteString(strings.Repeat(" ", pad))
				b.WriteString(c)
			} else {
				b.WriteString(c)
				if !last {
					b.WriteString(strings.Repeat(" ", pad))
				}
			}
			if !last {
				b.WriteString("  ")
			}
		}
		b.WriteString("\n")
	}
	line(t.Header)
	for i, r := range rows {
		if above != nil && above[i] != "" {
			b.WriteString(t.Indent + above[i] + "\n")
		}
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ShortenPath keeps the end of a long path: "…/dir/file".
func ShortenPath(p string, max int) string {
	if max <= 1 || utf8.RuneCountInString(p) <= max {
		return p
	}
	r := []rune(p)
	return "…" + string(r[len(r)-max+1:])
}

// LineWidth is the width report and compare text lines fit in.
const LineWidth = 160

// FitPath shortens the path p (as ShortenPath) so that a line holding it
// and other runes of other text fits in LineWidth, giving p at most
// maxPath runes and at least 24.
func FitPath(p string, other, maxPath int) string {
	return ShortenPath(p, max(min(LineWidth-other, maxPath), 24))
}

// Printable shows a name from the traced system by iotrace's one rule
// for terminals (internal/termesc): control characters as their control
// pictures, other non-printing characters as <U+XXXX>, bytes that are not
// UTF-8 as <0xNN>, so that a name cannot break the layout of a terminal or
// drive it.
func Printable(s string) string { return termesc.String(s) }

// visibleWidth is the number of runes of s outside ANSI escape sequences.
func visibleWidth(s string) int {
	if !strings.Contains(s, "\x1b[") {
		return utf8.RuneCountInString(s)
	}
	n, esc := 0, false
	for _, r := range s {
		switch {
		case esc:
			if r >= '@' && r <= '~' && r != '[' {
				esc = false
			}
		case r == 0x1b:
			esc = true
		default:
			n++
		}
	}
	return n
}
