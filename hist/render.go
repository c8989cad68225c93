package hist

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// RenderOptions control how a histogram is drawn.
type RenderOptions struct {
	// Unit labels the value column ("usecs", "bytes"); "value" when empty.
	Unit string
	// Width is the width of the bar in characters; 40 when 0.
	Width int
	// Indent is prepended to every line.
	Indent string
}

type row struct {
	lo, hi string // hi == "" for a one-label row ("< 0")
	count  uint64
}

// render writes the biolatency-style table of rows.
func render(w io.Writer, opts RenderOptions, rows []row) error {
	unit := opts.Unit
	if unit == "" {
		unit = "value"
	}
	width := opts.Width
	if width <= 0 {
		width = 40
	}
	loW, hiW, oneW, cW := 0, 0, 0, len("count")
	var max uint64
	for _, r := range rows {
		if r.hi == "" {
			oneW = maxInt(oneW, len(r.lo))
		} else {
			loW = maxInt(loW, len(r.lo))
			hiW = maxInt(hiW, len(r.hi))
		}
		cW = maxInt(cW, len(utoa(r.count)))
		if r.count > max {
			max = r.count
		}
	}
	// The range column is "lo -> hi", at least wide enough for the unit.
	rangeW := loW + 4 + hiW
	if w := maxInt(len(unit), oneW); w > rangeW {
		loW += w - rangeW
		rangeW = w
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s%*s : %-*s distribution\n", opts.Indent, rangeW, unit, cW, "count")
	bar := make([]byte, width)
	for _, r := range rows {
		n := 0
		if max > 0 {
			// Round up so that a non-zero count always shows a star.
			n = int((r.count*uint64(width) + max - 1) / max)
			if r.count > 0 && max > 1<<50 {
				n = int(float64(r.count) / float64(max) * float64(width))
				if n == 0 {
					n = 1
				}
			}
		}
		for i := range bar {
			if i < n {
				bar[i] = '*'
			} else {
				bar[i] = ' '
			}
		}
		label := r.lo
		if r.hi != "" {
			label = fmt.Sprintf("%*s -> %-*s", loW, r.lo, hiW, r.hi)
		}
		fmt.Fprintf(bw, "%s%*s : %-*d |%s|\n", opts.Indent, rangeW, label, cW, r.count, bar)
	}
	return bw.Flush()
}

func utoa(v uint64) string { return strconv.FormatUint(v, 10) }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
