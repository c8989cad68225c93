package script

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/hist"
	"go.starlark.net/starlark"
)

type renderOpts struct {
	by    stat // the order of the keys
	limit int  // at most this many keys (0: all)
	stats bool // each histogram with its statistics' line
}

// render writes the aggregation: a number (no key), a table (one row per
// key), or histograms drawn like the report command's. Keys print in the
// order o.by chose; a table sorted by a statistic other than its value
// shows that statistic in a column of its own.
func (a *Agg) render(w io.Writer, o renderOpts) {
	cells := a.sorted(o.by, o.limit)
	if len(cells) == 0 && len(a.keys) > 0 {
		io.WriteString(w, "(no data)\n")
		return
	}
	if a.kind.isHist() {
		a.renderHists(w, cells, o.stats)
		return
	}
	if len(a.keys) == 0 {
		var v int64
		if len(cells) > 0 {
			v = a.rawValue(cells[0])
		}
		fmt.Fprintf(w, "%d\n", v)
		return
	}
	head := make([]string, 0, len(a.keys)+1)
	for _, k := range a.keys {
		head = append(head, strings.ToUpper(k))
	}
	vname := a.unit
	if vname == "" {
		vname = a.kind.String()
	}
	head = append(head, strings.ToUpper(vname))
	var extra *stat // the sort's statistic, when it is not the value
	if o.by.kind != statKey && o.by.kind != a.ownStat() {
		extra = &o.by
		head = append(head, strings.ToUpper(statNames[o.by.kind]))
	}
	rows := make([][]string, len(cells))
	numeric := make([]bool, len(head))
	for i := range numeric {
		numeric[i] = true
	}
	for i, c := range cells {
		row := make([]string, 0, len(head))
		for j, p := range c.parts {
			s, isNum := keyText(p)
			numeric[j] = numeric[j] && isNum
			row = append(row, s)
		}
		row = append(row, strconv.FormatInt(a.rawValue(c), 10))
		if extra != nil {
			v, _ := extra.of(c)
			row = append(row, strconv.FormatInt(v, 10))
		}
		rows[i] = row
	}
	width := make([]int, len(head))
	for j, h := range head {
		width[j] = len(h)
		for _, r := range rows {
			width[j] = max(width[j], len(r[j]))
		}
	}
	writeRow := func(r []string) {
		var b strings.Builder
		for j, s := range r {
			if j > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[j]-len(s))
			if numeric[j] {
				b.WriteString(pad)
				b.WriteString(s)
			} else {
				b.WriteString(s)
				if j < len(r)-1 {
					b.WriteString(pad)
				}
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
	}
	writeRow(head)
	for _, r := range rows {
		writeRow(r)
	}
}

// keyText renders a key part for a table: strings unquoted, None as "-".
func keyText(v starlark.Value) (string, bool) {
	switch v := v.(type) {
	case starlark.String:
		if v == "" {
			return `""`, false
		}
		return string(v), false
	case starlark.Int:
		return v.String(), true
	case starlark.NoneType:
		return "-", false
	}
	return v.String(), false
}

func (a *Agg) renderHists(w io.Writer, cells []*cell, stats bool) {
	opts := hist.RenderOptions{Unit: a.unit}
	if len(a.keys) == 0 {
		c := &cell{log2: new(hist.Log2)}
		if a.kind == aggLinear {
			c.lin, _ = hist.NewLinear(a.lo, a.hi, a.step)
		}
		if len(cells) > 0 {
			c = cells[0]
			if stats {
				io.WriteString(w, a.statsLine(c)+"\n")
			}
		}
		drawHist(w, c, opts)
		return
	}
	for i, c := range cells {
		if i > 0 {
			io.WriteString(w, "\n")
		}
		parts := make([]string, len(a.keys))
		for j, k := range a.keys {
			s, _ := keyText(c.parts[j])
			parts[j] = k + " = " + s
		}
		io.WriteString(w, strings.Join(parts, ", ")+"\n")
		if stats {
			io.WriteString(w, a.statsLine(c)+"\n")
		}
		drawHist(w, c, opts)
	}
}

func drawHist(w io.Writer, c *cell, opts hist.RenderOptions) {
	if c.lin != nil {
		c.lin.Render(w, opts)
	} else {
		c.log2.Render(w, opts)
	}
	if c.neg > 0 {
		fmt.Fprintf(w, "(%d values below 0 not drawn)\n", c.neg)
	}
}
