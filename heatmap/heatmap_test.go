package heatmap

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

func TestMapGrowsInBoundedMemory(t *testing.T) {
	m := New(10)
	m.Add(0, 1000)        // column 0, row 10 (512-1023 → row 10 holds 1000)
	m.Add(9_999_999, 0)   // column 9 at 1 ms per column
	m.Add(-5, -1)         // clamped to column 0, row 0
	m.Add(25_000_000, 64) // beyond 10 ms: width doubles twice (4 ms)
	if m.ColumnWidth() != 4_000_000 || m.Count() != 4 {
		t.Fatalf("width %d count %d", m.ColumnWidth(), m.Count())
	}
	if len(m.counts) != 10*Rows {
		t.Fatalf("map grew to %d cells", len(m.counts))
	}
	if m.Cell(0, 10) != 1 || m.Cell(0, 0) != 1 || m.Cell(2, 0) != 1 || m.Cell(6, 7) != 1 {
		t.Errorf("cells after merging: %v", m.counts[:3*Rows])
	}
	var total uint64
	for _, c := range m.counts {
		total += c
	}
	if total != 4 {
		t.Errorf("counts sum to %d after merging", total)
	}
	lo, hi, ok := m.RowRange()
	if !ok || lo != 0 || hi != 10 || m.Columns() != 7 {
		t.Errorf("range %d-%d %v, columns %d", lo, hi, ok, m.Columns())
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	m := New(0)
	for i := int64(0); i < 5000; i++ {
		m.Add(i*1_000_000, 1000+i%7*10_000)
	}
	var buf bytes.Buffer
	err := WriteSVG(&buf, []Panel{{Title: "block <I/O> & more", Map: m}, {Title: "empty", Map: New(0)}}, SVGOptions{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&buf)
	rects := 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed XML: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	if rects < 10 {
		t.Errorf("%d rects", rects)
	}
}

// TestSVGSharedAxisLegendFold: panels share one time axis (a time is at
// the same x in every panel), each has a colour legend, and a panel with
// a handful of events is folded into a note.
func TestSVGSharedAxisLegendFold(t *testing.T) {
	long, short, tiny := New(0), New(0), New(0)
	for i := int64(0); i < 10_000; i++ {
		long.Add(i*1_000_000, 5000) // 10 s
		if i < 1000 {
			short.Add(i*1_000_000, 50_000) // 1 s
		}
	}
	tiny.Add(5_000_000, 10)
	tiny.Add(6_000_000, 10)
	var buf bytes.Buffer
	err := WriteSVG(&buf, []Panel{{Title: "block", Map: long}, {Title: "file read", Map: short}, {Title: "file mkdir", Map: tiny}}, SVGOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	// The last x tick of the long panel is drawn in the short one too.
	if n := strings.Count(svg, ">10s<"); n != 2 {
		t.Errorf("the 10 s tick appears %d times, want once per drawn panel (2)", n)
	}
	if n := strings.Count(svg, "events per cell"); n != 2 {
		t.Errorf("%d legends, want 2", n)
	}
	if strings.Contains(svg, "file mkdir —") || !strings.Contains(svg, "file mkdir (2)") {
		t.Errorf("the 2-event panel is drawn or not listed")
	}
	// The short panel's cells end at a tenth of the plot's width.
	short0 := strings.Index(svg, "file read —")
	var maxX float64
	for _, part := range strings.Split(svg[short0:], `<rect x="`)[1:] {
		if !strings.Contains(part[:strings.Index(part, ">")+1], "title") && !strings.Contains(strings.SplitN(part, "</rect>", 2)[0], "<title>") {
			continue
		}
		var x float64
		fmt.Sscanf(part, "%g", &x)
		if strings.Contains(strings.SplitN(part, "</rect>", 2)[0], "latency") && x > maxX {
			maxX = x
		}
	}
	if maxX < 160 || maxX > 175 {
		t.Errorf("the 1 s panel's last cell at x = %g, want about 80 + 900/10", maxX)
	}
}
