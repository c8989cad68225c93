package report

import (
	"sort"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/hist"
)

// Result is a report as plain data; it encodes to the JSON of
// `iotrace report --format json`. Times are in ns, bytes in bytes.
type Result struct {
	// Top is the number of entries the top lists were cut to.
	Top       int            `json:"top"`
	Trace     TraceInfo      `json:"trace"`
	Problems  []Problem      `json:"problems"`
	Layers    []LayerSummary `json:"layers"`
	Ops       []OpSummary    `json:"ops"`
	Processes []Entity       `json:"processes"`
	// FilesByBytes and FilesByTime are the top files by data bytes and by
	// time spent in file-layer operations.
	FilesByBytes []Entity       `json:"files_by_bytes"`
	FilesByTime  []Entity       `json:"files_by_time"`
	Cache        *Cache         `json:"cache,omitempty"`
	Devices      []Device       `json:"devices"`
	Errors       []ErrorGroup   `json:"errors"`
	ErrorsTotal  uint64         `json:"errors_total"`
	Slowest      []SlowOp       `json:"slowest"`
	SlowestBlock []SlowOp       `json:"slowest_block"`
	Markers      []Marker       `json:"markers,omitempty"`
	Tracking     []TrackingInfo `json:"tracking"`
	Excluded     uint64         `json:"excluded,omitempty"`
	// Traces and Hosts are set on a report merged from several traces
	// (see Merge): the traces it covers, and a summary per host.
	Traces []TraceInfo   `json:"traces,omitempty"`
	Hosts  []HostSummary `json:"hosts,omitempty"`
}

// HostSummary is one host of a merged report: its traces' totals per
// layer and per op, with the op latency sketches merged.
type HostSummary struct {
	Host     string         `json:"host"`
	OS       string         `json:"os"`
	Traces   int            `json:"traces"`
	Events   uint64         `json:"events"`
	Duration int64          `json:"duration_ns"` // of its traces, added up
	Problems uint64         `json:"problems"`    // lost, unpaired, unresolved and dropped counts
	Layers   []LayerSummary `json:"layers"`
	Ops      []OpSummary    `json:"ops"`
}

// TraceInfo describes the trace.
type TraceInfo struct {
	OS        string `json:"os"`
	OSVersion string `json:"os_version,omitempty"`
	Hostname  string `json:"hostname,omitempty"`
	Source    string `json:"source"`
	Command   string `json:"command,omitempty"`
	Start     string `json:"start,omitempty"` // RFC 3339, UTC
	// Duration is the trailer's end, or the end of the last operation.
	Duration int64  `json:"duration_ns"`
	Events   uint64 `json:"events"`
	Facts    uint64 `json:"facts"`
	// Complete is false when the stream did not end with a trailer.
	Complete bool `json:"complete"`
}

// Problem is a non-zero lost, unpaired, unresolved or dropped count: from
// the trace's trailer (Origin "trace") or found by the report ("report").
type Problem struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Value  uint64 `json:"value"`
	Origin string `json:"origin"`
}

// LayerSummary totals one layer.
type LayerSummary struct {
	Layer      string `json:"layer"`
	Ops        uint64 `json:"ops"`
	Bytes      uint64 `json:"bytes"` // data moved (reads, writes, copies)
	Time       uint64 `json:"time_ns"`
	Failed     uint64 `json:"failed"`
	Incomplete uint64 `json:"incomplete"`
	// NotTraced says the trace's source did not trace this layer (its
	// header or trailer says so): its zeros mean nothing, not "no I/O".
	// Merged: none of the traces traced it.
	NotTraced bool `json:"not_traced,omitempty"`
}

// OpSummary is one op over the whole trace.
type OpSummary struct {
	Op         string             `json:"op"`
	Layer      string             `json:"layer"`
	Count      uint64             `json:"count"`
	Bytes      uint64             `json:"bytes"`
	Time       uint64             `json:"time_ns"`
	Failed     uint64             `json:"failed"`
	Incomplete uint64             `json:"incomplete"`
	Latency    hist.SketchSummary `json:"latency_ns"`
	// Histogram is the log2 latency histogram in µs.
	Histogram hist.Summary `json:"histogram_us"`
	// DiskIOs and DiskBytes are the block I/Os this op caused (file layer,
	// when the trace links the layers).
	DiskIOs   uint64 `json:"disk_ios,omitempty"`
	DiskBytes uint64 `json:"disk_bytes,omitempty"`
	// Sketch is Latency's sketch in its mergeable encoding: reports of
	// many traces merge without their events (see Merge).
	Sketch *hist.SketchData `json:"latency_sketch,omitempty"`
}

// OpCount is one op of a process or file.
type OpCount struct {
	Op     string `json:"op"`
	Count  uint64 `json:"count"`
	Bytes  uint64 `json:"bytes"`
	Time   uint64 `json:"time_ns"`
	Failed uint64 `json:"failed,omitempty"`
}

// CacheCounts describe how reads were served (see Cache).
//
// Every completed read is one of: a disk read (it caused block I/O), a
// read that waited for block I/O already in flight (read-ahead, another
// reader: WaitedReads), a cache hit (CacheReads), or, when the source flags
// cache hits, a read the source could not classify (OtherReads: a file not
// on a block device, a pipe, an asynchronous request without a complete
// cause link). HitRatio is CacheReads over the classified reads.
type CacheCounts struct {
	Reads       uint64  `json:"reads"`
	DiskReads   uint64  `json:"disk_reads"`
	WaitedReads uint64  `json:"waited_reads"`
	CacheReads  uint64  `json:"cache_reads"`
	OtherReads  uint64  `json:"other_reads"`
	HitRatio    float64 `json:"hit_ratio"`
	BytesCache  uint64  `json:"bytes_from_cache"`
	BytesDisk   uint64  `json:"bytes_from_disk"`
	BytesWaited uint64  `json:"bytes_waited"`
	BytesOther  uint64  `json:"bytes_other"`
	FSOps       uint64  `json:"fs_ops"`
	DiskIOs     uint64  `json:"disk_ios"`
	DiskBytes   uint64  `json:"disk_bytes"`
	// DiskIOsPerFSOp is DiskIOs / FSOps.
	DiskIOsPerFSOp float64 `json:"disk_ios_per_fs_op"`

	// BytesReadahead, with page-cache provenance (Linux): bytes brought in
	// by the readers' own read-ahead during the trace. Then BytesCache is
	// only what was in memory already, BytesDisk what was read from disk
	// for the read itself, BytesWaited what waited for disk I/O in
	// flight, BytesOther what could not be classified, and MemoryRatio
	// BytesCache over the classified bytes (the rest came from disk).
	BytesReadahead uint64  `json:"bytes_readahead,omitempty"`
	MemoryRatio    float64 `json:"memory_ratio,omitempty"`
	// Provenance is set when reads were classified by page-cache
	// provenance (by bytes: BytesCache, BytesReadahead, BytesDisk,
	// BytesWaited).
	Provenance bool `json:"provenance,omitempty"`
}

// Entity is one process or file.
type Entity struct {
	// Name is the process name or the file path.
	Name string `json:"name"`
	// Host is the traced machine, in a merged report.
	Host string `json:"host,omitempty"`
	// Pid, PPid, ProcStart, Image and Cmdline describe a process; Depth
	// is its depth in the process tree as listed.
	Pid       uint32             `json:"pid,omitempty"`
	PPid      uint32             `json:"ppid,omitempty"`
	ProcStart int64              `json:"proc_start_ns,omitempty"`
	Image     string             `json:"image,omitempty"`
	Cmdline   string             `json:"cmdline,omitempty"`
	Depth     int                `json:"depth,omitempty"`
	Count     uint64             `json:"count"`
	Bytes     uint64             `json:"bytes"`
	Time      uint64             `json:"time_ns"`
	Failed    uint64             `json:"failed"`
	Ops       []OpCount          `json:"ops"`
	Latency   hist.SketchSummary `json:"latency_ns"`
	Cache     *CacheCounts       `json:"cache,omitempty"`
	// BlockIOs and BlockBytes are block events attributed directly: a
	// process's submitted block I/O; a file's block I/O without a cause
	// link (writeback).
	BlockIOs   uint64 `json:"block_ios,omitempty"`
	BlockBytes uint64 `json:"block_bytes,omitempty"`
	// ErrorBytes and ErrorTime, when set, bound how much the totals may
	// be short after the table was pruned (see Options.Capacity).
	ErrorBytes uint64 `json:"error_bytes,omitempty"`
	ErrorTime  uint64 `json:"error_time_ns,omitempty"`
}

// Cache is the trace-wide cache behaviour; nil when the trace does not link
// file-layer reads to block I/O.
type Cache struct {
	CacheCounts
	PerOp []OpDisk `json:"per_op"`
}

// OpDisk is the block I/O caused by one file-layer op.
type OpDisk struct {
	Op             string  `json:"op"`
	Count          uint64  `json:"count"`
	DiskIOs        uint64  `json:"disk_ios"`
	DiskBytes      uint64  `json:"disk_bytes"`
	DiskIOsPerFSOp float64 `json:"disk_ios_per_fs_op"`
}

// Device is the block layer of one device.
type Device struct {
	Host   string    `json:"host,omitempty"` // in a merged report
	Device string    `json:"device"`
	Name   string    `json:"name,omitempty"`
	Ops    []OpCount `json:"ops"`
	// IOPS and Throughput (bytes/s) are over the trace's duration;
	// ActiveIOPS and ActiveThroughput over the device's first to last I/O.
	IOPS             float64            `json:"iops"`
	Throughput       float64            `json:"throughput_bps"`
	ActiveIOPS       float64            `json:"active_iops"`
	ActiveThroughput float64            `json:"active_throughput_bps"`
	Active           int64              `json:"active_ns"`
	Latency          hist.SketchSummary `json:"latency_ns"`
	Queue            hist.SketchSummary `json:"queue_ns"`
	Service          hist.SketchSummary `json:"service_ns"`
	Histogram        hist.Summary       `json:"histogram_us"`
	Sizes            hist.Summary       `json:"sizes_bytes"`
	ReadRatio        float64            `json:"read_ratio"` // of read+write I/Os
	Sequential       uint64             `json:"sequential"`
	Random           uint64             `json:"random"`
	Incomplete       uint64             `json:"incomplete"`
	Writeback        uint64             `json:"writeback"`
	Readahead        uint64             `json:"readahead"`
	Caused           uint64             `json:"caused"` // with a cause link
}

// ErrorGroup is the failed operations of one op, result and path.
type ErrorGroup struct {
	Op     string `json:"op"`
	Status string `json:"status"`
	Result string `json:"result"` // errno or NTSTATUS name
	Code   uint32 `json:"code"`
	Path   string `json:"path"`
	Count  uint64 `json:"count"`
	First  int64  `json:"first_ns"`
	Comm   string `json:"comm,omitempty"`
	Pid    uint32 `json:"pid,omitempty"`
	Host   string `json:"host,omitempty"` // in a merged report
}

// SlowOp is one of the slowest operations, with the block I/Os it caused.
type SlowOp struct {
	Host     string `json:"host,omitempty"` // in a merged report
	ID       uint64 `json:"id"`
	Op       string `json:"op"`
	Native   string `json:"native,omitempty"`
	Time     int64  `json:"time_ns"`
	Duration int64  `json:"duration_ns"`
	Wait     int64  `json:"wait_ns,omitempty"`
	Pid      uint32 `json:"pid"`
	Tid      uint32 `json:"tid"`
	Comm     string `json:"comm,omitempty"`
	Path     string `json:"path,omitempty"`
	Device   string `json:"device,omitempty"`
	Offset   int64  `json:"offset"`
	Bytes    int64  `json:"bytes"`
	Result   string `json:"result"`
	// Cause is, for a block I/O, the file-layer event that caused it.
	Cause     uint64     `json:"cause,omitempty"`
	CausedIOs uint32     `json:"caused_ios,omitempty"`
	Blocks    []BlockRef `json:"blocks,omitempty"`
}

// BlockRef is a block I/O in a cause chain.
type BlockRef struct {
	ID       uint64 `json:"id"`
	Op       string `json:"op"`
	Device   string `json:"device"`
	Sector   uint64 `json:"sector"`
	Bytes    uint64 `json:"bytes"`
	Time     int64  `json:"time_ns"`
	Wait     int64  `json:"wait_ns"`
	Duration int64  `json:"duration_ns"`
	Result   string `json:"result"`
}

// Marker is a user marker.
type Marker struct {
	Host string `json:"host,omitempty"` // in a merged report
	Time int64  `json:"time_ns"`
	Note string `json:"note"`
	Pid  uint32 `json:"pid,omitempty"`
}

// TrackingInfo says how complete a bounded table is.
type TrackingInfo struct {
	Table   string `json:"table"`
	Tracked int    `json:"tracked"`
	Pruned  uint64 `json:"pruned"`
}

// Result returns the summary of everything received so far.
func (r *Report) Result() *Result {
	res := &Result{Top: r.opts.TopN, Excluded: r.excluded}
	r.traceInfo(&res.Trace)
	res.Problems = r.problems()
	traced := r.tracedLayers()
	for l := event.LayerFile; l <= event.LayerMarker; l++ {
		t := r.layers[l]
		if t.count == 0 && l == event.LayerMarker {
			continue
		}
		res.Layers = append(res.Layers, LayerSummary{Layer: l.String(), Ops: t.count, Bytes: t.bytes,
			Time: t.time, Failed: t.failed, Incomplete: t.incomplete,
			NotTraced: l != event.LayerMarker && t.count == 0 && traced != 0 && !traced.Has(l)})
	}
	for op := range event.NumOps {
		s := &r.ops[op]
		if s.count == 0 {
			continue
		}
		res.Ops = append(res.Ops, OpSummary{Op: event.Op(op).String(), Layer: event.Op(op).Layer().String(),
			Count: s.count, Bytes: s.bytes, Time: s.time, Failed: s.failed, Incomplete: s.incomplete,
			Latency: s.lat.Summary(), Histogram: s.h.Summary(), DiskIOs: s.causedIOs, DiskBytes: s.causedB,
			Sketch: sketchData(&s.lat)})
	}
	res.Processes = r.processTree(r.opts.TopN)
	res.FilesByBytes = r.topFiles(r.opts.TopN, func(e *entity) uint64 { return e.tot.bytes })
	res.FilesByTime = r.topFiles(r.opts.TopN, func(e *entity) uint64 { return e.tot.time })
	if r.CacheKnown() {
		c := &Cache{CacheCounts: r.cacheOut(&r.cache, r.layers[event.LayerFile].count)}
		for op := range event.NumOps {
			s := &r.ops[op]
			if s.count == 0 || event.Op(op).Layer() != event.LayerFile {
				continue
			}
			c.PerOp = append(c.PerOp, OpDisk{Op: event.Op(op).String(), Count: s.count, DiskIOs: s.causedIOs,
				DiskBytes: s.causedB, DiskIOsPerFSOp: ratio(s.causedIOs, s.count)})
		}
		res.Cache = c
	}
	res.Devices = r.deviceSummaries(res.Trace.Duration)
	res.Errors, res.ErrorsTotal = r.errorGroups(r.opts.TopN)
	res.Slowest = r.slow.sorted(r)
	res.SlowestBlock = r.slowBlock.sorted(r)
	for _, m := range r.markers {
		res.Markers = append(res.Markers, Marker{Time: m.time, Note: m.note, Pid: m.pid})
	}
	res.Tracking = []TrackingInfo{
		{Table: "processes", Tracked: len(r.procs.m), Pruned: r.procs.pruned},
		{Table: "files", Tracked: len(r.files.m), Pruned: r.files.pruned},
		{Table: "errors", Tracked: len(r.errs), Pruned: r.errOther},
	}
	return res
}

// CacheKnown reports whether the trace links file-layer operations to the
// block I/O they caused, so that cache hits can be told from misses: it
// has both layers and at least one cause link or cache-hit flag, or reads
// flagged as cache hits (a fully warm trace, with no block I/O at all:
// the source flags hits only when it links reads to disk I/O).
func (r *Report) CacheKnown() bool {
	if r.layers[event.LayerFile].count == 0 {
		return false
	}
	return r.hitSeen || (r.linkSeen && r.blockSeen)
}

func (r *Report) traceInfo(t *TraceInfo) {
	t.OS = r.hdr.OS
	t.OSVersion = r.hdr.OSVersion
	t.Hostname = r.hdr.Hostname
	t.Source = r.hdr.Source.String()
	t.Command = r.hdr.Command
	if r.hdr.StartWall != 0 {
		t.Start = time.Unix(0, r.hdr.StartWall).UTC().Format(time.RFC3339Nano)
	}
	t.Duration = r.trailer.End
	if r.haveTime && r.maxEnd > t.Duration {
		t.Duration = r.maxEnd
	}
	t.Events = r.events
	t.Facts = r.facts
	t.Complete = r.ended
}

func (r *Report) problems() []Problem {
	var out []Problem
	for _, c := range r.trailer.Stats.Problems() {
		out = append(out, Problem{Kind: c.Kind.String(), Name: c.Name, Value: c.Value, Origin: "trace"})
	}
	add := func(kind event.CounterKind, name string, v uint64) {
		if v > 0 {
			out = append(out, Problem{Kind: kind.String(), Name: name, Value: v, Origin: "report"})
		}
	}
	// The resolver upstream counts the same events in the trailer; count
	// them here only when nothing upstream did.
	if r.trailer.Stats.Total(event.CountUnresolved) == 0 {
		add(event.CountUnresolved, "file events with a handle but no path", r.noPath)
	}
	if r.trailer.Stats.Total(event.CountUnpaired) == 0 {
		add(event.CountUnpaired, "events that never completed", r.layers[event.LayerFile].incomplete+r.layers[event.LayerBlock].incomplete)
	}
	add(event.CountDropped, "events of an unknown layer or op", r.unknown)
	if r.began && !r.ended {
		add(event.CountLost, "trace ended without a trailer (truncated?)", 1)
	}
	return out
}

// cacheOut is the output form of c, whose owner counted fsOps file-layer
// events. A read with no cause and no flag was served from the cache when
// the source flags no cache hits (it links reads to block I/O and that is
// all it says); when it flags them, the read is one it did not classify.
func (r *Report) cacheOut(c *cacheCounts, fsOps uint64) CacheCounts {
	out := CacheCounts{Reads: c.reads, DiskReads: c.diskReads, WaitedReads: c.waitedReads,
		BytesCache: c.bytesCache, BytesDisk: c.bytesDisk, BytesWaited: c.bytesWaited, FSOps: fsOps,
		DiskIOs: c.causedIOs, DiskBytes: c.causedB, DiskIOsPerFSOp: ratio(c.causedIOs, fsOps)}
	if r.hitSeen {
		out.OtherReads, out.BytesOther = c.unflagged, c.bytesUnflagged
	} else {
		out.BytesCache += c.bytesUnflagged
	}
	out.CacheReads = out.Reads - out.DiskReads - out.WaitedReads - out.OtherReads
	out.HitRatio = ratio(out.CacheReads, out.CacheReads+out.DiskReads+out.WaitedReads)
	if c.provReads != 0 {
		out.Provenance = true
		out.BytesReadahead = c.bytesAhead
		out.BytesOther += c.bytesUnknown
		out.MemoryRatio = ratio(out.BytesCache, out.BytesCache+out.BytesReadahead+out.BytesDisk+out.BytesWaited)
	}
	return out
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (r *Report) entityOut(e *entity) Entity {
	out := Entity{Name: e.name, Count: e.tot.count, Bytes: e.tot.bytes, Time: e.tot.time, Failed: e.tot.failed,
		Latency: e.lat.Summary(), BlockIOs: e.blockIOs, BlockBytes: e.blockBytes,
		ErrorBytes: e.errBytes, ErrorTime: e.errTime}
	for op := range event.NumOps {
		c := e.ops[op]
		if c.count > 0 {
			out.Ops = append(out.Ops, OpCount{Op: event.Op(op).String(), Count: c.count, Bytes: c.bytes, Time: c.time, Failed: c.failed})
		}
	}
	if r.CacheKnown() {
		c := r.cacheOut(&e.c, e.tot.count)
		out.Cache = &c
	}
	return out
}

// Files returns every tracked file with its totals (not only the top N),
// for comparisons.
func (r *Report) Files() []Entity {
	out := make([]Entity, 0, len(r.files.m))
	for _, e := range r.files.m {
		out = append(out, r.entityOut(e))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (r *Report) topFiles(n int, by func(*entity) uint64) []Entity {
	all := make([]*entity, 0, len(r.files.m))
	for _, e := range r.files.m {
		if by(e) > 0 {
			all = append(all, e)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if a, b := by(all[i]), by(all[j]); a != b {
			return a > b
		}
		return all[i].name < all[j].name
	})
	out := make([]Entity, 0, min(n, len(all)))
	for _, e := range all[:min(n, len(all))] {
		out = append(out, r.entityOut(e))
	}
	return out
}

// parentOf returns the key of k's parent process, when facts know it.
func (r *Report) parentOf(k event.ProcessKey) (event.ProcessKey, bool) {
	pi := r.procInfo[k]
	if pi == nil || pi.ppid == k.Pid {
		return event.ProcessKey{}, false
	}
	// The parent is the latest process with that pid started no later
	// than the child.
	starts := r.pidStarts[pi.ppid]
	best, found := int64(0), false
	for _, s := range starts {
		if s <= k.Start && (!found || s > best) {
			best, found = s, true
		}
	}
	if !found && len(starts) > 0 {
		best, found = starts[0], true
	}
	return event.ProcessKey{Pid: pi.ppid, Start: best}, found
}

// processTree selects the top n processes by bytes and the top n by time
// and lists them in process-tree order: each after its nearest listed
// ancestor, siblings by pid.
func (r *Report) processTree(n int) []Entity {
	all := make([]*entity, 0, len(r.procs.m))
	for _, e := range r.procs.m {
		all = append(all, e)
	}
	sel := map[event.ProcessKey]*entity{}
	for _, by := range []func(*entity) uint64{
		func(e *entity) uint64 { return e.tot.bytes + e.blockBytes },
		func(e *entity) uint64 { return e.tot.time },
	} {
		sort.Slice(all, func(i, j int) bool {
			if a, b := by(all[i]), by(all[j]); a != b {
				return a > b
			}
			return all[i].pk.Pid < all[j].pk.Pid
		})
		for _, e := range all[:min(n, len(all))] {
			sel[e.pk] = e
		}
	}
	// Nearest selected ancestor of each selected process.
	children := map[event.ProcessKey][]event.ProcessKey{}
	var roots []event.ProcessKey
	for k := range sel {
		p, ok := r.parentOf(k)
		for depth := 0; ok && depth < 64; depth++ {
			if _, in := sel[p]; in && p != k {
				break
			}
			p, ok = r.parentOf(p)
		}
		if _, in := sel[p]; ok && in && p != k {
			children[p] = append(children[p], k)
		} else {
			roots = append(roots, k)
		}
	}
	less := func(ks []event.ProcessKey) {
		sort.Slice(ks, func(i, j int) bool {
			if ks[i].Pid != ks[j].Pid {
				return ks[i].Pid < ks[j].Pid
			}
			return ks[i].Start < ks[j].Start
		})
	}
	less(roots)
	var out []Entity
	var walk func(k event.ProcessKey, depth int)
	walk = func(k event.ProcessKey, depth int) {
		e := r.entityOut(sel[k])
		e.Pid, e.ProcStart, e.Depth = k.Pid, k.Start, depth
		if pi := r.procInfo[k]; pi != nil {
			e.PPid, e.Image, e.Cmdline = pi.ppid, pi.image, pi.cmdline
			if pi.name != "" {
				e.Name = pi.name
			}
		}
		out = append(out, e)
		cs := children[k]
		less(cs)
		for _, c := range cs {
			walk(c, depth+1)
		}
	}
	for _, k := range roots {
		walk(k, 0)
	}
	return out
}

func (r *Report) deviceName(d event.Device) string {
	if n := r.devNames[d]; n != "" {
		return n
	}
	return ""
}

func (r *Report) deviceSummaries(traceDur int64) []Device {
	var out []Device
	for _, d := range r.devices {
		o := Device{Device: d.dev.String(), Name: r.deviceName(d.dev), Latency: d.lat.Summary(),
			Queue: d.wait.Summary(), Service: d.svc.Summary(), Histogram: d.h.Summary(), Sizes: d.size.Summary(),
			Sequential: d.seq, Random: d.random, Incomplete: d.incomplete, Writeback: d.writeback,
			Readahead: d.readaheadIOs, Caused: d.caused, Active: d.last - d.first}
		if o.Device == "" {
			o.Device = "(unknown)"
		}
		var n, b uint64
		for i, c := range d.ops {
			if c.count > 0 {
				o.Ops = append(o.Ops, OpCount{Op: (event.OpBlockRead + event.Op(i)).String(), Count: c.count, Bytes: c.bytes, Time: c.time, Failed: c.failed})
			}
			n += c.count
			if i < 2 {
				b += c.bytes
			}
		}
		o.ReadRatio = ratio(d.ops[0].count, d.ops[0].count+d.ops[1].count)
		if traceDur > 0 {
			o.IOPS = float64(n) / (float64(traceDur) / 1e9)
			o.Throughput = float64(b) / (float64(traceDur) / 1e9)
		}
		if o.Active > 0 {
			o.ActiveIOPS = float64(n) / (float64(o.Active) / 1e9)
			o.ActiveThroughput = float64(b) / (float64(o.Active) / 1e9)
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}

// resultName names a raw result code the way the trace's OS does.
func (r *Report) resultName(code uint32, st event.Status) string {
	if st == event.StatusOK && code == 0 {
		return "ok"
	}
	if r.isWindows() {
		return event.NTSTATUSName(code)
	}
	if code == 0 {
		return st.String()
	}
	return event.ErrnoName(code)
}

func (r *Report) isWindows() bool {
	return r.hdr.OS == "windows" || r.hdr.Source == event.SourceETWLive || r.hdr.Source == event.SourceETLFile
}

func (r *Report) errorGroups(n int) ([]ErrorGroup, uint64) {
	total := r.errOther
	out := make([]ErrorGroup, 0, len(r.errs))
	for k, g := range r.errs {
		total += g.count
		out = append(out, ErrorGroup{Op: k.op.String(), Status: k.status.String(), Result: r.resultName(k.code, k.status),
			Code: k.code, Path: k.path, Count: g.count, First: g.first, Comm: g.comm, Pid: g.pid})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Op < out[j].Op
	})
	if len(out) > n {
		out = out[:n]
	}
	return out, total
}

func (s *slowHeap) sorted(r *Report) []SlowOp {
	ops := append([]*slowOp(nil), s.h...)
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].dur != ops[j].dur {
			return ops[i].dur > ops[j].dur
		}
		return ops[i].ev.ID < ops[j].ev.ID
	})
	out := make([]SlowOp, 0, len(ops))
	for _, o := range ops {
		e := &o.ev
		so := SlowOp{ID: e.ID, Op: e.Op.String(), Native: e.Native, Time: e.Time, Duration: int64(o.dur),
			Wait: e.Wait, Pid: e.Pid, Tid: e.Tid, Comm: e.Comm, Path: e.Path, Offset: e.Offset, Bytes: e.Bytes,
			Result: r.resultName(e.Code, e.Status), Cause: e.Cause, CausedIOs: e.CausedIOs}
		if e.Layer == event.LayerBlock {
			so.Device = r.devLabel(e.Dev)
			so.Offset = int64(e.Sector * 512)
			so.Bytes = int64(dataBytes(e))
		}
		blocks := append([]blockRef(nil), o.blocks...)
		sort.Slice(blocks, func(i, j int) bool { return blocks[i].Time < blocks[j].Time })
		for _, b := range blocks {
			so.Blocks = append(so.Blocks, BlockRef{ID: b.ID, Op: b.Op.String(), Device: r.devLabel(b.Dev),
				Sector: b.Sector, Bytes: b.Bytes, Time: b.Time, Wait: b.Wait, Duration: b.Duration,
				Result: r.resultName(0, b.Status)})
		}
		out = append(out, so)
	}
	return out
}

func (r *Report) devLabel(d event.Device) string {
	if n := r.deviceName(d); n != "" {
		return n
	}
	return d.String()
}

// sketchData returns the encoding of s, nil when s is empty.
func sketchData(s *hist.Sketch) *hist.SketchData {
	if s.Count() == 0 {
		return nil
	}
	d := s.Data()
	return &d
}
