package compare

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/iotrace/iotrace/report"
)

// TextOptions control the text rendering.
type TextOptions struct {
	// Color marks differences with ANSI colours and ▲/▼ arrows; set it
	// only when writing to a terminal.
	Color bool
	// Threshold is the relative difference under which a ratio counts as
	// agreement (not marked); 0.05 when 0.
	Threshold float64
	// PathWidth bounds the file column; 50 when 0.
	PathWidth int
}

// WriteText draws the comparison side by side.
func (res *Result) WriteText(w io.Writer, opts TextOptions) error {
	if opts.Threshold <= 0 {
		opts.Threshold = 0.05
	}
	if opts.PathWidth <= 0 {
		opts.PathWidth = 50
	}
	bw := bufio.NewWriter(w)
	t := textWriter{w: bw, o: opts}
	t.header(res)
	t.totals(res)
	t.rows("OPERATIONS (largest time difference first; ratio = B/A)", res.Ops, false)
	t.rows(fmt.Sprintf("FILES ON BOTH SIDES (%d; largest time difference first%s)", res.FilesBoth, foldNote(res)), res.Files, true)
	t.only("A", res.FilesOnlyA, res.OnlyA)
	t.only("B", res.FilesOnlyB, res.OnlyB)
	return bw.Flush()
}

func foldNote(res *Result) string {
	if res.CaseFolded {
		return "; paths matched ignoring case"
	}
	return ""
}

// only lists the busiest files of one side that the other side lacks.
func (t *textWriter) only(side string, total int, rows []Row) {
	if total == 0 {
		return
	}
	t.heading(fmt.Sprintf("FILES ONLY IN %s (%d; --map / --strip-prefix line paths up)", side, total))
	tb := report.Table{Header: []string{"OPS", "BYTES", "TIME", "FILE"}, Right: []bool{true, true, true}, Indent: "  "}
	for _, r := range rows {
		m := func(x Metric) float64 {
			if side == "A" {
				return x.A
			}
			return x.B
		}
		tb.Add(report.FormatCount(uint64(m(r.Count))), report.FormatBytes(uint64(m(r.Bytes))), report.FormatDuration(uint64(m(r.Time))),
			report.ShortenPath(report.Printable(r.Key), 2*t.o.PathWidth))
	}
	tb.Write(t.w)
	if total > len(rows) {
		fmt.Fprintf(t.w, "  … and %d more\n", total-len(rows))
	}
}

type textWriter struct {
	w *bufio.Writer
	o TextOptions
}

func (t *textWriter) heading(s string) {
	if t.o.Color {
		fmt.Fprintf(t.w, "\n\x1b[1m%s\x1b[0m\n", s)
	} else {
		fmt.Fprintf(t.w, "\n%s\n", s)
	}
}

func sideLine(s *Side) string {
	tr := &s.Trace
	parts := []string{}
	os := report.Printable(tr.OS)
	if tr.OSVersion != "" {
		os += " " + report.Printable(tr.OSVersion)
	}
	if os != "" {
		parts = append(parts, os)
	}
	if tr.Hostname != "" {
		parts = append(parts, report.Printable(tr.Hostname))
	}
	parts = append(parts, report.FormatDuration(uint64(max(tr.Duration, 0))), report.FormatCount(tr.Events)+" events", report.Printable(tr.Source))
	return strings.Join(parts, ", ")
}

func (t *textWriter) header(res *Result) {
	fmt.Fprintln(t.w, "iotrace compare")
	for _, s := range []struct {
		name string
		side *Side
	}{{"A", res.SideA}, {"B", res.SideB}} {
		info := sideLine(s.side)
		label := report.FitPath(report.Printable(s.side.Label), len("  A:   ()")+utf8.RuneCountInString(info), report.LineWidth)
		fmt.Fprintf(t.w, "  %s: %s  (%s)\n", s.name, label, info)
		for _, p := range s.side.Probs {
			msg := fmt.Sprintf("     %s %s: %s", report.Printable(p.Kind), report.FormatCount(p.Value), report.Printable(p.Name))
			if t.o.Color {
				msg = "\x1b[31m" + msg + "\x1b[0m"
			}
			fmt.Fprintln(t.w, msg)
		}
		if s.side.Excluded > 0 {
			fmt.Fprintf(t.w, "     %s paging I/O events left out (--include-paging keeps them)\n", report.FormatCount(s.side.Excluded))
		}
	}
}

// ratioCell renders B/A.
func (t *textWriter) ratioCell(m Metric) string {
	var s string
	switch {
	case math.IsNaN(m.Ratio):
		return ""
	case math.IsInf(m.Ratio, 1):
		s = "new"
	case m.Ratio == 0:
		s = "gone"
	case m.Ratio >= 100:
		s = fmt.Sprintf("%.0f×", m.Ratio)
	default:
		s = fmt.Sprintf("%.2f×", m.Ratio)
	}
	if !t.o.Color {
		return s
	}
	switch {
	case m.Ratio > 1+t.o.Threshold:
		return "\x1b[31m▲" + s + "\x1b[0m"
	case m.Ratio < 1-t.o.Threshold:
		return "\x1b[32m▼" + s + "\x1b[0m"
	}
	return " " + s
}

func pair(m Metric, f func(uint64) string) string {
	return f(uint64(m.A)) + " → " + f(uint64(m.B))
}

func pctPair(m *Metric) string {
	if m == nil {
		return "-"
	}
	return report.FormatPercent(m.A) + " → " + report.FormatPercent(m.B)
}

func perOpPair(m *Metric) string {
	if m == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f → %.2f", m.A, m.B)
}

func (t *textWriter) totals(res *Result) {
	if len(res.Totals) == 0 {
		return
	}
	t.heading("TOTALS")
	tb := report.Table{Header: []string{"LAYER", "OPS A → B", "", "BYTES A → B", "", "TIME A → B", "", "DISK I/Os PER OP", "CACHE HIT"},
		Right: []bool{false, true, true, true, true, true, true, true, true}, Indent: "  "}
	for _, r := range res.Totals {
		if r.NotTraced != "" {
			// One side has no events of the layer because it did not
			// trace it: no ratio.
			tb.Add(report.Printable(r.Layer)+" [not traced in "+strings.ToUpper(r.NotTraced)+"]", pair(r.Count, report.FormatCount), "",
				pair(r.Bytes, report.FormatBytes), "", pair(r.Time, report.FormatDuration), "", perOpPair(r.DiskPerOp), pctPair(r.HitRatio))
			continue
		}
		tb.Add(report.Printable(r.Layer), pair(r.Count, report.FormatCount), t.ratioCell(r.Count), pair(r.Bytes, report.FormatBytes), t.ratioCell(r.Bytes),
			pair(r.Time, report.FormatDuration), t.ratioCell(r.Time), perOpPair(r.DiskPerOp), pctPair(r.HitRatio))
	}
	tb.Write(t.w)
}

func (t *textWriter) rows(title string, rows []Row, files bool) {
	if len(rows) == 0 {
		return
	}
	t.heading(title)
	first := "OP"
	if files {
		first = "FILE"
	}
	tb := report.Table{Header: []string{first, "COUNT A → B", "", "BYTES A → B", "", "P50 A → B", "", "P99 A → B", "", "TIME A → B", "", "DISK/OP", "CACHE HIT"},
		Right: []bool{false, true, true, true, true, true, true, true, true, true, true, true, true}, Indent: "  ", Fit: report.LineWidth}
	for _, r := range rows {
		key := report.Printable(r.Key)
		if files {
			key = report.ShortenPath(key, t.o.PathWidth)
		} else if r.Layer == "block" {
			key += " (block)"
		}
		if r.Only != "" {
			key += " [only " + strings.ToUpper(r.Only) + "]"
		}
		tb.Add(key, pair(r.Count, report.FormatCount), t.ratioCell(r.Count), pair(r.Bytes, report.FormatBytes), t.ratioCell(r.Bytes),
			pair(r.P50, report.FormatDuration), t.ratioCell(r.P50), pair(r.P99, report.FormatDuration), t.ratioCell(r.P99),
			pair(r.Time, report.FormatDuration), t.ratioCell(r.Time), perOpPair(r.DiskPerOp), pctPair(r.HitRatio))
	}
	tb.Write(t.w)
}
