package heatmap

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
)

// Panel is one heatmap in an SVG: a title ("block I/O", "read") and its
// map.
type Panel struct {
	Title string
	Map   *Map
}

// SVGOptions control the drawing.
type SVGOptions struct {
	// Title is drawn above every panel.
	Title string
	// Width of the plot area in pixels; 900 when 0.
	Width int
	// RowHeight in pixels; 14 when 0.
	RowHeight int
	// FoldBelow: panels after the first with fewer events than this are
	// not drawn but listed in a note at the end (a handful of events make
	// no picture); 20 when 0, none folded when negative.
	FoldBelow int
}

const (
	marginLeft   = 80
	marginRight  = 20
	panelTitleH  = 24
	axisH        = 34
	panelSpacing = 16
	headerH      = 34
)

// WriteSVG draws the panels one below the other as a standalone SVG
// document, on one time axis (the longest panel's span): a time is at the
// same x in every panel. Each panel has its colour legend. Empty panels
// are drawn with a "no events" note so that a reader sees they were
// looked at; panels with only a handful of events are listed in a note at
// the end instead (SVGOptions.FoldBelow).
func WriteSVG(w io.Writer, panels []Panel, opts SVGOptions) error {
	plotW := opts.Width
	if plotW <= 0 {
		plotW = 900
	}
	rowH := opts.RowHeight
	if rowH <= 0 {
		rowH = 14
	}
	fold := opts.FoldBelow
	if fold == 0 {
		fold = 20
	}
	var drawn []Panel
	var folded []string
	for i, p := range panels {
		if i > 0 && fold > 0 && p.Map.Count() > 0 && p.Map.Count() < uint64(fold) {
			folded = append(folded, fmt.Sprintf("%s (%d)", p.Title, p.Map.Count()))
			continue
		}
		drawn = append(drawn, p)
	}
	var span int64 // the shared time axis: the longest panel's
	for _, p := range drawn {
		span = max(span, int64(p.Map.Columns())*p.Map.ColumnWidth())
	}
	if span <= 0 {
		span = initialWidth
	}
	heights := make([]int, len(drawn))
	total := headerH
	for i, p := range drawn {
		h := rowH * 2
		if lo, hi, ok := p.Map.RowRange(); ok {
			h = (hi - lo + 1) * rowH
		}
		heights[i] = h
		total += panelTitleH + h + axisH + panelSpacing
	}
	if len(folded) > 0 {
		total += noteH
	}
	W := marginLeft + plotW + marginRight
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">
<rect width="100%%" height="100%%" fill="white"/>
<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>
`, W, total, W, total, marginLeft, xmlEscape(opts.Title))
	y := headerH
	for i, p := range drawn {
		drawPanel(bw, p, marginLeft, y, plotW, heights[i], rowH, span)
		y += panelTitleH + heights[i] + axisH + panelSpacing
	}
	if len(folded) > 0 {
		fmt.Fprintf(bw, "<text x=\"%d\" y=\"%d\" fill=\"#444\">%s</text>\n", marginLeft, y+12,
			xmlEscape(fmt.Sprintf("Not drawn, fewer than %d events each (events): %s", fold, strings.Join(folded, ", "))))
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

// noteH is the height of the folded panels' note.
const noteH = 24

func drawPanel(w *bufio.Writer, p Panel, x0, y0, plotW, plotH, rowH int, span int64) {
	m := p.Map
	fmt.Fprintf(w, "<g>\n<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">%s</text>\n",
		x0, y0+16, xmlEscape(fmt.Sprintf("%s — %d events", p.Title, m.Count())))
	top := y0 + panelTitleH
	fmt.Fprintf(w, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f8f8f8\" stroke=\"#888\"/>\n", x0, top, plotW, plotH)
	lo, hi, ok := m.RowRange()
	if !ok {
		fmt.Fprintf(w, "<text x=\"%d\" y=\"%d\" fill=\"#666\">no events</text>\n</g>\n", x0+8, top+rowH+4)
		return
	}
	cols := m.Columns()
	var max uint64
	for c := 0; c < cols; c++ {
		for r := lo; r <= hi; r++ {
			if v := m.Cell(c, r); v > max {
				max = v
			}
		}
	}
	// Columns in the shared time scale: span ns over plotW pixels.
	cellW := float64(plotW) * float64(m.ColumnWidth()) / float64(span)
	for c := 0; c < cols; c++ {
		for r := lo; r <= hi; r++ {
			v := m.Cell(c, r)
			if v == 0 {
				continue
			}
			x := float64(x0) + float64(c)*cellW
			y := top + (hi-r)*rowH
			rl, rh := RowBounds(r)
			t0 := int64(c) * m.ColumnWidth()
			fmt.Fprintf(w, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>%s–%s, latency %s–%s: %d</title></rect>\n",
				x, y, cellW+0.01, rowH, colour(v, max), fmtTime(t0), fmtTime(t0+m.ColumnWidth()), fmtLatency(rl), fmtLatency(rh+1), v)
		}
	}
	// Y axis: every row's lower bound, thinned to fit.
	step := 1
	for rowH*step < 12 {
		step++
	}
	for r := lo; r <= hi; r += step {
		rl, _ := RowBounds(r)
		y := top + (hi-r+1)*rowH
		fmt.Fprintf(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", x0-4, y-2, fmtLatency(rl))
	}
	// X axis: about eight ticks at round times, the same in every panel.
	tick := niceStep(span / 8)
	for t := int64(0); t <= span; t += tick {
		x := float64(x0) + float64(t)/float64(span)*float64(plotW)
		fmt.Fprintf(w, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\"/>\n", x, top+plotH, x, top+plotH+4)
		fmt.Fprintf(w, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, top+plotH+16, fmtTime(t))
	}
	fmt.Fprintf(w, "<text x=\"%d\" y=\"%d\" fill=\"#444\">time since trace start</text>\n", x0, top+plotH+30)
	drawLegend(w, x0+plotW, top+plotH+20, max)
	fmt.Fprintln(w, "</g>")
}

// drawLegend draws the colour scale of a panel, right-aligned at x: five
// swatches from 1 to max events per cell (log scale), labelled.
func drawLegend(w *bufio.Writer, x, y int, max uint64) {
	const sw, n = 22, 5
	x0 := x - n*sw
	fmt.Fprintf(w, "<g class=\"legend\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#444\">events per cell</text>\n", x0-4, y+10)
	for i := 0; i < n; i++ {
		v := uint64(1)
		if max > 1 {
			v = uint64(math.Round(math.Exp(math.Log(float64(max)) * float64(i) / float64(n-1))))
		}
		fmt.Fprintf(w, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"10\" fill=\"%s\" stroke=\"#888\"><title>%d</title></rect>\n", x0+i*sw, y+1, sw, colour(v, max), v)
		if i == 0 || i == n-1 {
			fmt.Fprintf(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"9\">%d</text>\n", x0+i*sw+sw/2, y+21, v)
		}
	}
	fmt.Fprintln(w, "</g>")
}

// colour maps v in [1, max] to a white-yellow-red ramp on a log scale.
func colour(v, max uint64) string {
	f := 1.0
	if max > 1 {
		f = math.Log(float64(v)) / math.Log(float64(max))
	}
	// From (255, 237, 160) to (189, 0, 38) through (253, 141, 60).
	type rgb struct{ r, g, b float64 }
	a, m, b := rgb{255, 237, 160}, rgb{253, 141, 60}, rgb{189, 0, 38}
	lerp := func(x, y rgb, t float64) rgb {
		return rgb{x.r + (y.r-x.r)*t, x.g + (y.g-x.g)*t, x.b + (y.b-x.b)*t}
	}
	var c rgb
	if f < 0.5 {
		c = lerp(a, m, f*2)
	} else {
		c = lerp(m, b, (f-0.5)*2)
	}
	return fmt.Sprintf("#%02x%02x%02x", int(c.r+0.5), int(c.g+0.5), int(c.b+0.5))
}

// niceStep rounds d (ns) up to 1, 2 or 5 times a power of ten.
func niceStep(d int64) int64 {
	if d < 1 {
		return 1
	}
	p := int64(1)
	for p*10 <= d {
		p *= 10
	}
	for _, m := range []int64{1, 2, 5, 10} {
		if p*m >= d {
			return p * m
		}
	}
	return p * 10
}

// fmtTime renders ns from the trace start compactly: "0", "250ms", "1.5s".
func fmtTime(ns int64) string {
	switch {
	case ns == 0:
		return "0"
	case ns < 1_000_000:
		return trim(float64(ns)/1e3) + "µs"
	case ns < 1_000_000_000:
		return trim(float64(ns)/1e6) + "ms"
	}
	return trim(float64(ns)/1e9) + "s"
}

// fmtLatency renders a latency in ns: "512ns", "2µs", "1.05ms".
func fmtLatency(ns uint64) string {
	switch {
	case ns < 1000:
		return fmt.Sprintf("%dns", ns)
	case ns < 1_000_000:
		return trim(float64(ns)/1e3) + "µs"
	case ns < 1_000_000_000:
		return trim(float64(ns)/1e6) + "ms"
	}
	return trim(float64(ns)/1e9) + "s"
}

func trim(f float64) string {
	s := fmt.Sprintf("%.3g", f)
	if strings.ContainsAny(s, "e") {
		s = fmt.Sprintf("%.0f", f)
	}
	return s
}

func xmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			if r < 0x20 && r != '\t' && r != '\n' {
				b.WriteRune('\uFFFD')
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}
