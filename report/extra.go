package report

import (
	"errors"
	"fmt"
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

// Progress is an event.Sink that passes everything to the next sink and,
// once the stream has run for more than a second, prints the number of
// events and the rate to w every Interval, on one line rewritten in place.
// Use it only when w is a terminal.
type Progress struct {
	next     event.Sink
	w        io.Writer
	interval time.Duration
	start    time.Time
	lastShow time.Time
	n        uint64
	shown    bool
	now      func() time.Time
}

// NewProgress wraps next; interval 0 means 500 ms.
func NewProgress(next event.Sink, w io.Writer, interval time.Duration) *Progress {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	return &Progress{next: next, w: w, interval: interval, now: time.Now}
}

// Begin implements event.Sink.
func (p *Progress) Begin(h *event.Header) error {
	p.start = p.now()
	p.lastShow = p.start
	return p.next.Begin(h)
}

// Event implements event.Sink.
func (p *Progress) Event(e *event.Event) error {
	p.n++
	if p.n&0x3fff == 0 {
		p.tick()
	}
	return p.next.Event(e)
}

func (p *Progress) tick() {
	now := p.now()
	if now.Sub(p.start) < time.Second || now.Sub(p.lastShow) < p.interval {
		return
	}
	p.lastShow = now
	p.shown = true
	el := now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "\r%s events, %.1f M/s, %.0fs ", FormatCount(p.n), float64(p.n)/el/1e6, el)
}

// Fact implements event.Sink.
func (p *Progress) Fact(f *event.Fact) error { return p.next.Fact(f) }

// End implements event.Sink; it clears the progress line.
func (p *Progress) End(t *event.Trailer) error {
	p.Done()
	return p.next.End(t)
}

// Done clears the progress line if one was shown (also for a stream that
// failed before its end).
func (p *Progress) Done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
