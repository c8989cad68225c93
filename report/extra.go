package report

import (
	"errors"
	"io"
	"sort"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/heatmap"
)

// ErrNoHeatmap is returned by WriteHeatmap when the report was made
// without Options.Heatmap.
var ErrNoHeatmap = errors.New("report: heatmap data not collected (Options.Heatmap is off)")

// WriteHeatmap writes the latency heatmaps as one standalone SVG: the
// block layer first, then every file-layer op, busiest first.
func (r *Report) WriteHeatmap(w io.Writer) error {
	if r.heatBlock == nil {
		return ErrNoHeatmap
	}
	panels := []heatmap.Panel{{Title: "block I/O (all devices)", Map: r.heatBlock}}
	var ops []event.Op
	for op, m := range r.heatOps {
		if m != nil && m.Count() > 0 {
			ops = append(ops, event.Op(op))
		}
	}
	sort.Slice(ops, func(i, j int) bool { return r.heatOps[ops[i]].Count() > r.heatOps[ops[j]].Count() })
	for _, op := range ops {
		panels = append(panels, heatmap.Panel{Title: "file " + op.String(), Map: r.heatOps[op]})
	}
	title := "iotrace latency heatmap"
	if r.hdr.Hostname != "" {
		title += " — " + r.hdr.Hostname
	}
	if r.hdr.StartWall != 0 {
		title += " — " + time.Unix(0, r.hdr.StartWall).UTC().Format(time.RFC3339)
	}
	return heatmap.WriteSVG(w, panels, heatmap.SVGOptions{Title: title})
}
