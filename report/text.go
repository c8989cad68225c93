package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/iotrace/iotrace/hist"
)

// TextOptions control the text rendering.
type TextOptions struct {
	// Color uses ANSI bold for headings and red for problems; set it only
	// when writing to a terminal.
	Color bool
	// AllHistograms draws a histogram for every op; by default only the
	// three file-layer ops with the most time and every device.
	AllHistograms bool
	// Width bounds path columns; 60 when 0.
	PathWidth int
}

// Render writes the report as text for a terminal without colour.
func (r *Report) Render(w io.Writer) error { return r.Result().WriteText(w, TextOptions{}) }

// WriteText draws the result for a person: one section per subject, the
// problems first.
func (res *Result) WriteText(w io.Writer, opts TextOptions) error {
	if opts.PathWidth <= 0 {
		opts.PathWidth = 60
	}
	bw := bufio.NewWriter(w)
	t := &textWriter{w: bw, opts: opts}
	t.header(res)
	t.problems(res)
	t.hosts(res)
	t.totals(res)
	t.ops(res)
	t.processes(res)
	t.files(res)
	t.cache(res)
	t.devices(res)
	t.histograms(res)
	t.errors(res)
	t.slowest(res)
	t.markers(res)
	return bw.Flush()
}

type textWriter struct {
	w    *bufio.Writer
	opts TextOptions
}

func (t *textWriter) heading(s string) {
	if t.opts.Color {
		fmt.Fprintf(t.w, "\n\x1b[1m%s\x1b[0m\n", s)
	} else {
		fmt.Fprintf(t.w, "\n%s\n", s)
	}
}

func (t *textWriter) header(res *Result) {
	tr := &res.Trace
	var parts []string
	if tr.OS != "" {
		os := Printable(tr.OS)
		if tr.OSVersion != "" {
			os += " " + Printable(tr.OSVersion)
		}
		parts = append(parts, os)
	}
	if tr.Hostname != "" {
		parts = append(parts, "host "+Printable(tr.Hostname))
	}
	if tr.Start != "" {
		parts = append(parts, Printable(tr.Start))
	}
	parts = append(parts, FormatDuration(uint64(max(tr.Duration, 0))),
		FormatCount(tr.Events)+" events", "source "+Printable(tr.Source))
	fmt.Fprintf(t.w, "iotrace report: %s\n", strings.Join(parts, ", "))
	if tr.Command != "" {
		fmt.Fprintf(t.w, "command: %s\n", Printable(tr.Command))
	}
	if res.Excluded > 0 {
		fmt.Fprintf(t.w, "excluded: %s paging I/O events (--include-paging to keep them)\n", FormatCount(res.Excluded))
	}
}

func (t *textWriter) problems(res *Result) {
	if len(res.Problems) == 0 {
		return
	}
	t.heading("PROBLEMS (counted, not hidden)")
	tb := Table{Header: []string{"KIND", "COUNT", "WHAT", "FROM"}, Right: []bool{false, true}, Indent: "  "}
	for _, p := range res.Problems {
		kind := Printable(p.Kind)
		if t.opts.Color {
			kind = "\x1b[31m" + kind + "\x1b[0m"
		}
		tb.Add(kind, FormatCount(p.Value), Printable(p.Name), Printable(p.Origin))
	}
	tb.Write(t.w)
}

// onHost prefixes s with its host in a merged report.
func onHost(host, s string) string {
	if host == "" {
		return s
	}
	return Printable(host) + ": " + s
}

// hosts draws the per-host breakdown of a merged report.
func (t *textWriter) hosts(res *Result) {
	if len(res.Hosts) == 0 {
		return
	}
	t.heading(fmt.Sprintf("HOSTS (%d traces)", len(res.Traces)))
	tb := Table{Header: []string{"HOST", "OS", "TRACES", "EVENTS", "FILE OPS", "FILE P99", "DISK I/Os", "DISK P99", "BYTES", "PROBLEMS"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true}, Indent: "  "}
	for _, h := range res.Hosts {
		var bytes uint64
		ops := map[string]*hist.Sketch{"file": {}, "block": {}}
		counts := map[string]uint64{}
		for _, o := range h.Ops {
			if s := ops[o.Layer]; s != nil && o.Sketch != nil {
				if d, err := hist.SketchFromData(*o.Sketch); err == nil {
					s.Merge(d)
				}
			}
			counts[o.Layer] += o.Count
		}
		notTraced := map[string]bool{}
		for _, l := range h.Layers {
			if l.Layer == "file" {
				bytes += l.Bytes
			}
			notTraced[l.Layer] = l.NotTraced
		}
		cell := func(l string, s string) string {
			if notTraced[l] {
				return "-"
			}
			return s
		}
		tb.Add(Printable(h.Host), Printable(h.OS), FormatCount(uint64(h.Traces)), FormatCount(h.Events),
			cell("file", FormatCount(counts["file"])), cell("file", FormatDuration(ops["file"].Quantile(0.99))),
			cell("block", FormatCount(counts["block"])), cell("block", FormatDuration(ops["block"].Quantile(0.99))),
			FormatBytes(bytes), FormatCount(h.Problems))
	}
	tb.Write(t.w)
}

func (t *textWriter) totals(res *Result) {
	t.heading("TOTALS")
	tb := Table{Header: []string{"LAYER", "OPS", "BYTES", "TIME", "FAILED", "INCOMPLETE"}, Right: []bool{false, true, true, true, true, true}, Indent: "  "}
	var untraced []string
	for _, l := range res.Layers {
		if l.NotTraced {
			tb.Add(Printable(l.Layer), "-", "-", "-", "-", "-")
			untraced = append(untraced, l.Layer)
			continue
		}
		tb.Add(Printable(l.Layer), FormatCount(l.Ops), FormatBytes(l.Bytes), FormatDuration(l.Time), FormatCount(l.Failed), FormatCount(l.Incomplete))
	}
	tb.Write(t.w)
	if len(untraced) > 0 {
		fmt.Fprintf(t.w, "  (-: %s not traced by this trace's source)\n", strings.Join(untraced, " and "))
	}
}

func (t *textWriter) ops(res *Result) {
	if len(res.Ops) == 0 {
		return
	}
	t.heading("OPERATIONS (latency percentiles within 0.8%)")
	tb := Table{Header: []string{"LAYER", "OP", "COUNT", "BYTES", "FAILED", "P50", "P90", "P99", "MAX", "TIME", "DISK I/Os"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true, true}, Indent: "  "}
	for _, o := range res.Ops {
		disk := ""
		if o.Layer == "file" && res.Cache != nil {
			disk = FormatCount(o.DiskIOs)
		}
		tb.Add(Printable(o.Layer), Printable(o.Op), FormatCount(o.Count), FormatBytes(o.Bytes), FormatCount(o.Failed),
			FormatDuration(o.Latency.P50), FormatDuration(o.Latency.P90), FormatDuration(o.Latency.P99),
			FormatDuration(o.Latency.Max), FormatDuration(o.Time), disk)
	}
	tb.Write(t.w)
}

// hitCell is an entity's cache column: the share of its read bytes
// served from memory already cached (page-cache provenance), or of its
// classified reads that were hits; "-" when none of its reads was
// classified.
func hitCell(c *CacheCounts) string {
	if c == nil || c.Reads == 0 {
		return "-"
	}
	if c.Provenance {
		if c.BytesCache+c.BytesReadahead+c.BytesDisk+c.BytesWaited == 0 {
			return "-"
		}
		return FormatPercent(c.MemoryRatio)
	}
	if c.CacheReads+c.DiskReads+c.WaitedReads == 0 {
		return "-"
	}
	return FormatPercent(c.HitRatio)
}

func approx(e *Entity, s string) string {
	if e.ErrorBytes > 0 || e.ErrorTime > 0 {
		return "≥" + s
	}
	return s
}

func (t *textWriter) processes(res *Result) {
	if len(res.Processes) == 0 {
		return
	}
	if len(res.Hosts) > 0 {
		t.heading(fmt.Sprintf("PROCESSES (top %d by time, of every host's top processes)", topOf(res)))
	} else {
		t.heading(fmt.Sprintf("PROCESSES (top %d by bytes and by time, in process-tree order)", topOf(res)))
	}
	tb := Table{Header: []string{"PID", "PROCESS", "OPS", "BYTES", "TIME", "P50", "P99", "MAX", "CACHE HIT", "BLOCK I/O"},
		Right: []bool{true, false, true, true, true, true, true, true, true, true}, Indent: "  "}
	for i := range res.Processes {
		p := &res.Processes[i]
		name := strings.Repeat("  ", p.Depth) + onHost(p.Host, Printable(p.Name))
		if p.Name == "" {
			name = strings.Repeat("  ", p.Depth) + onHost(p.Host, "?")
		}
		block := ""
		if p.BlockIOs > 0 {
			block = FormatCount(p.BlockIOs) + " / " + FormatBytes(p.BlockBytes)
		}
		tb.Add(fmt.Sprint(p.Pid), name, approx(p, FormatCount(p.Count)), approx(p, FormatBytes(p.Bytes)), approx(p, FormatDuration(p.Time)),
			FormatDuration(p.Latency.P50), FormatDuration(p.Latency.P99), FormatDuration(p.Latency.Max), hitCell(p.Cache), block)
	}
	tb.Write(t.w)
}

func topOf(res *Result) int { return max(res.Top, 1) }

func opsCell(e *Entity) string {
	var parts []string
	ops := append([]OpCount(nil), e.Ops...)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Count > ops[j].Count })
	for i, o := range ops {
		if i == 3 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", Printable(o.Op), FormatCount(o.Count)))
	}
	return strings.Join(parts, ", ")
}

func (t *textWriter) files(res *Result) {
	draw := func(title string, list []Entity) {
		if len(list) == 0 {
			return
		}
		t.heading(title)
		tb := Table{Header: []string{"BYTES", "TIME", "OPS", "P50", "P99", "MAX", "CACHE HIT", "FILE"},
			Right: []bool{true, true, false, true, true, true, true, false}, Indent: "  "}
		for i := range list {
			f := &list[i]
			tb.Add(approx(f, FormatBytes(f.Bytes)), approx(f, FormatDuration(f.Time)), opsCell(f),
				FormatDuration(f.Latency.P50), FormatDuration(f.Latency.P99), FormatDuration(f.Latency.Max),
				hitCell(f.Cache), onHost(f.Host, ShortenPath(Printable(f.Name), t.opts.PathWidth)))
		}
		tb.Write(t.w)
	}
	draw(fmt.Sprintf("FILES BY BYTES (top %d)", len(res.FilesByBytes)), res.FilesByBytes)
	draw(fmt.Sprintf("FILES BY TIME (top %d)", len(res.FilesByTime)), res.FilesByTime)
}

func (t *textWriter) cache(res *Result) {
	if res.Cache == nil {
		if hasLayer(res, "file") && hasLayer(res, "block") {
			t.heading("CACHE")
			fmt.Fprintln(t.w, "  not known: this trace does not link file operations to the block I/O they caused")
		}
		return
	}
	c := res.Cache
	if c.Provenance {
		t.provenance(c)
		return
	}
	t.heading("CACHE (how each read was served)")
	fmt.Fprintf(t.w, "  reads %s: %s from cache (%s hit ratio), %s caused disk I/O, %s waited for disk I/O already in flight (read-ahead, another reader)\n",
		FormatCount(c.Reads), FormatCount(c.CacheReads), FormatPercent(c.HitRatio), FormatCount(c.DiskReads), FormatCount(c.WaitedReads))
	if c.OtherReads > 0 {
		fmt.Fprintf(t.w, "  %s other reads not classified (not a block device's file, a pipe or socket, or an asynchronous request without a complete cause link)\n", FormatCount(c.OtherReads))
	}
	fmt.Fprintf(t.w, "  bytes read: %s from cache, %s from disk, %s after waiting for I/O in flight\n", FormatBytes(c.BytesCache), FormatBytes(c.BytesDisk), FormatBytes(c.BytesWaited))
	fmt.Fprintf(t.w, "  disk I/Os caused by file operations: %s (%s) for %s operations, %.3f per operation\n",
		FormatCount(c.DiskIOs), FormatBytes(c.DiskBytes), FormatCount(c.FSOps), c.DiskIOsPerFSOp)
	tb := Table{Header: []string{"OP", "COUNT", "DISK I/Os", "DISK BYTES", "DISK I/Os PER OP"}, Right: []bool{false, true, true, true, true}, Indent: "  "}
	for _, o := range c.PerOp {
		if o.DiskIOs == 0 {
			continue
		}
		tb.Add(Printable(o.Op), FormatCount(o.Count), FormatCount(o.DiskIOs), FormatBytes(o.DiskBytes), fmt.Sprintf("%.3f", o.DiskIOsPerFSOp))
	}
	if len(tb.Rows) > 0 {
		tb.Write(t.w)
	}
}

func hasLayer(res *Result, l string) bool {
	for _, x := range res.Layers {
		if x.Layer == l && x.Ops > 0 {
			return true
		}
	}
	return false
}

func devLabel(d *Device) string {
	if d.Name != "" {
		return onHost(d.Host, Printable(d.Name)+" ("+Printable(d.Device)+")")
	}
	return onHost(d.Host, Printable(d.Device))
}

func (t *textWriter) devices(res *Result) {
	if len(res.Devices) == 0 {
		return
	}
	t.heading("BLOCK DEVICES (queue = queued → issued, service = issued → done)")
	tb := Table{Header: []string{"DEVICE", "I/Os", "READ", "BYTES", "IOPS", "THROUGHPUT", "QUEUE P50/P99", "SERVICE P50/P99", "TOTAL P99/MAX", "SEQ", "SIZE P50"},
		Right: []bool{false, true, true, true, true, true, true, true, true, true, true}, Indent: "  "}
	for i := range res.Devices {
		d := &res.Devices[i]
		var n, b uint64
		for _, o := range d.Ops {
			n += o.Count
			if o.Op == "bread" || o.Op == "bwrite" {
				b += o.Bytes
			}
		}
		seq := "-"
		if d.Sequential+d.Random > 0 {
			seq = FormatPercent(ratio(d.Sequential, d.Sequential+d.Random))
		}
		size := "-"
		if d.Sizes.Count > 0 {
			size = FormatBytes(log2Median(d.Sizes))
		}
		tb.Add(devLabel(d), FormatCount(n), FormatPercent(d.ReadRatio), FormatBytes(b),
			fmt.Sprintf("%.0f", d.IOPS), FormatBytes(uint64(d.Throughput))+"/s",
			FormatDuration(d.Queue.P50)+" / "+FormatDuration(d.Queue.P99),
			FormatDuration(d.Service.P50)+" / "+FormatDuration(d.Service.P99),
			FormatDuration(d.Latency.P99)+" / "+FormatDuration(d.Latency.Max), seq, size)
	}
	tb.Write(t.w)
	for i := range res.Devices {
		d := &res.Devices[i]
		var extra []string
		if d.Active > 0 {
			extra = append(extra, fmt.Sprintf("active %s: %.0f IOPS, %s/s", FormatDuration(uint64(d.Active)), d.ActiveIOPS, FormatBytes(uint64(d.ActiveThroughput))))
		}
		if d.Writeback > 0 {
			extra = append(extra, FormatCount(d.Writeback)+" writeback")
		}
		if d.Readahead > 0 {
			extra = append(extra, FormatCount(d.Readahead)+" readahead")
		}
		if d.Caused > 0 {
			extra = append(extra, FormatCount(d.Caused)+" linked to a file operation")
		}
		if d.Incomplete > 0 {
			extra = append(extra, FormatCount(d.Incomplete)+" never completed")
		}
		if len(extra) > 0 {
			fmt.Fprintf(t.w, "  %s: %s\n", devLabel(d), strings.Join(extra, ", "))
		}
	}
}

// log2Median returns the upper bound of the bucket holding the median.
func log2Median(s hist.Summary) uint64 {
	var seen uint64
	for _, b := range s.Buckets {
		seen += b.Count
		if seen*2 >= s.Count {
			return min(b.High, s.Max)
		}
	}
	return s.Max
}

func (t *textWriter) histograms(res *Result) {
	ops := make([]OpSummary, 0, len(res.Ops))
	for _, o := range res.Ops {
		if o.Histogram.Count > 0 && (t.opts.AllHistograms || o.Layer == "file") {
			ops = append(ops, o)
		}
	}
	if !t.opts.AllHistograms {
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].Time > ops[j].Time })
		if len(ops) > 3 {
			ops = ops[:3]
		}
	}
	if len(ops) == 0 && len(res.Devices) == 0 {
		return
	}
	t.heading("LATENCY HISTOGRAMS")
	for _, o := range ops {
		fmt.Fprintf(t.w, "\n  %s %s (%s ops)\n", Printable(o.Layer), Printable(o.Op), FormatCount(o.Histogram.Count))
		drawLog2(t.w, o.Histogram, "usecs")
	}
	for i := range res.Devices {
		d := &res.Devices[i]
		if d.Histogram.Count == 0 {
			continue
		}
		fmt.Fprintf(t.w, "\n  device %s (%s I/Os)\n", devLabel(d), FormatCount(d.Histogram.Count))
		drawLog2(t.w, d.Histogram, "usecs")
	}
}

// drawLog2 redraws a histogram from its summary.
func drawLog2(w io.Writer, s hist.Summary, unit string) {
	var h hist.Log2
	for _, b := range s.Buckets {
		h.AddN(b.Low, b.Count)
	}
	h.Render(w, hist.RenderOptions{Unit: unit, Indent: "  "})
}

func (t *textWriter) errors(res *Result) {
	if res.ErrorsTotal == 0 {
		return
	}
	t.heading(fmt.Sprintf("ERRORS (%s failed operations, by result and path)", FormatCount(res.ErrorsTotal)))
	tb := Table{Header: []string{"COUNT", "OP", "RESULT", "FIRST BY", "PATH"}, Right: []bool{true}, Indent: "  "}
	var shown uint64
	for _, e := range res.Errors {
		shown += e.Count
		tb.Add(FormatCount(e.Count), Printable(e.Op), Printable(e.Result), onHost(e.Host, fmt.Sprintf("%s[%d]", Printable(e.Comm), e.Pid)), ShortenPath(Printable(e.Path), t.opts.PathWidth))
	}
	tb.Write(t.w)
	if rest := res.ErrorsTotal - shown; rest > 0 {
		fmt.Fprintf(t.w, "  … and %s more\n", FormatCount(rest))
	}
}

func (t *textWriter) slowest(res *Result) {
	draw := func(title string, list []SlowOp) {
		if len(list) == 0 {
			return
		}
		t.heading(title)
		for _, s := range list {
			// The path takes what the rest of the line leaves of
			// LineWidth (up to PathWidth).
			var before, after string
			if s.Device != "" {
				before = Printable(s.Device) + " " + FormatBytes(uint64(max(s.Bytes, 0))) + " at " + fmt.Sprint(s.Offset)
				if s.Path != "" {
					before += " "
				}
			} else if s.Bytes >= 0 && (s.Op == "read" || s.Op == "write") {
				if s.Offset >= 0 {
					after = fmt.Sprintf(" (%s at %d)", FormatBytes(uint64(s.Bytes)), s.Offset)
				} else {
					after = fmt.Sprintf(" (%s)", FormatBytes(uint64(s.Bytes)))
				}
			}
			name := Printable(s.Op)
			if s.Native != "" && s.Native != s.Op {
				name += "/" + Printable(s.Native)
			}
			head := fmt.Sprintf("  %9s  #%d %s %s[%d/%d] %s", FormatDuration(uint64(s.Duration)), s.ID, name, onHost(s.Host, Printable(s.Comm)), s.Pid, s.Tid, before)
			tail := after + " → " + Printable(s.Result)
			if s.Wait > 0 {
				tail += fmt.Sprintf(" (queue %s, service %s)", FormatDuration(uint64(s.Wait)), FormatDuration(uint64(s.Duration-s.Wait)))
			}
			if s.Cause != 0 {
				tail += fmt.Sprintf(" ← caused by #%d", s.Cause)
			}
			path, below := "", ""
			if s.Path != "" {
				other := visibleWidth(head) + visibleWidth(tail)
				if LineWidth-other >= 24 {
					path = FitPath(Printable(s.Path), other, 2*t.opts.PathWidth)
				} else {
					// Too little room left: the path goes on a line of its own.
					path, below = "…", fmt.Sprintf("  %9s    %s\n", "", FitPath(Printable(s.Path), 15, LineWidth))
				}
			}
			line := head + path + tail
			fmt.Fprintln(t.w, line)
			io.WriteString(t.w, below)
			for _, b := range s.Blocks {
				fmt.Fprintf(t.w, "  %9s    └ #%d %s %s %s at sector %d, queue %s, service %s, %s\n", FormatDuration(uint64(b.Duration)),
					b.ID, Printable(b.Op), Printable(b.Device), FormatBytes(b.Bytes), b.Sector, FormatDuration(uint64(b.Wait)), FormatDuration(uint64(b.Duration-b.Wait)), Printable(b.Result))
			}
			if missing := int(s.CausedIOs) - len(s.Blocks); missing > 0 {
				fmt.Fprintf(t.w, "  %9s    └ %d more block I/O not in the trace window\n", "", missing)
			}
		}
	}
	draw("SLOWEST OPERATIONS (with the block I/O they caused)", res.Slowest)
	draw("SLOWEST BLOCK I/O", res.SlowestBlock)
}

func (t *textWriter) markers(res *Result) {
	if len(res.Markers) == 0 {
		return
	}
	t.heading("MARKERS")
	for _, m := range res.Markers {
		fmt.Fprintf(t.w, "  %10s  %s\n", FormatDuration(uint64(max(m.Time, 0))), onHost(m.Host, Printable(m.Note)))
	}
}

// provenance draws the cache section of a trace whose reads were
// classified by page-cache provenance: where the bytes read came from.
func (t *textWriter) provenance(c *Cache) {
	t.heading("CACHE (where the bytes read came from)")
	known := c.BytesCache + c.BytesReadahead + c.BytesDisk + c.BytesWaited
	disk := c.BytesReadahead + c.BytesDisk + c.BytesWaited
	fmt.Fprintf(t.w, "  %s read: %s served from memory already cached (%s), %s from disk (%s: read-ahead or direct)\n",
		FormatBytes(known+c.BytesOther), FormatBytes(c.BytesCache), FormatPercent(c.MemoryRatio), FormatBytes(disk), FormatPercent(ratio(disk, known)))
	fmt.Fprintf(t.w, "  from disk: %s brought in by read-ahead, %s read for the read itself, %s waited for on I/O already in flight\n",
		FormatBytes(c.BytesReadahead), FormatBytes(c.BytesDisk), FormatBytes(c.BytesWaited))
	if c.BytesOther > 0 {
		fmt.Fprintf(t.w, "  %s not classified (see the problems and counters: not a regular file, no block device, completion not seen)\n", FormatBytes(c.BytesOther))
	}
	fmt.Fprintf(t.w, "  reads %s: %s entirely from memory, %s read from disk themselves, %s waited for I/O in flight\n",
		FormatCount(c.Reads), FormatCount(c.CacheReads), FormatCount(c.DiskReads), FormatCount(c.WaitedReads))
	fmt.Fprintf(t.w, "  disk I/Os caused by file operations: %s (%s) for %s operations, %.3f per operation\n",
		FormatCount(c.DiskIOs), FormatBytes(c.DiskBytes), FormatCount(c.FSOps), c.DiskIOsPerFSOp)
}
