package perfetto

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/iotrace/iotrace/event"
)

// Options configure a Writer.
type Options struct {
	// FlowWindow bounds how many possible causes (file events that caused
	// block I/O) are remembered, and how many block I/Os may wait for a
	// cause delivered after them; 1<<20 when 0. Links beyond it are
	// counted, not drawn.
	FlowWindow int
	// MaxLanes bounds the lanes of one thread or device; 256 when 0.
	// Slices beyond it are drawn on the last lane and counted.
	MaxLanes int
	// CounterColumns is the number of throughput samples per counter;
	// 1000 when 0 (the interval doubles as the trace gets longer).
	CounterColumns int
}

// synthBase starts the pids and tids iotrace makes up (device processes,
// lanes, idle threads, reused pids), above any real Linux or Windows id
// seen in practice.
const synthBase = 0x70000000

type proc struct {
	cpid  uint32
	named string
}

type threadKey struct {
	cpid uint32
	key  event.ThreadKey
}

// lane is one row of non-overlapping (or properly nested) slices.
type lane struct {
	tid       uint32
	ends      []int64 // open slices, outermost first
	lastStart int64
}

// track is a thread or a device: the lanes it draws on.
type track struct {
	cpid   uint32
	name   string
	lanes  []*lane
	device bool
}

type place struct {
	cpid, ctid uint32
	ts, end    int64
}

type pendingFlow struct {
	at    place
	cause uint64
}

// Writer is an event.Sink that writes trace-event JSON. Create it with
// [New]; it writes everything by End (or Close, for a stream that failed).
type Writer struct {
	w    *bufio.Writer
	opts Options
	buf  []byte
	n    uint64 // trace events written
	err  error
	done bool

	hdr       event.Header
	procs     map[event.ProcessKey]*proc
	pidTaken  map[uint32]bool
	procNames map[event.ProcessKey]string
	threads   map[threadKey]*track
	devs      map[event.Device]*track
	devNames  map[event.Device]string
	nextSynth uint32

	causes    map[uint64]place
	causeFIFO []uint64
	causeNext int
	pending   map[uint64][]place
	npending  int
	flowID    uint64

	devSeries map[event.Device]*series
	devOrder  []event.Device
	fileSer   *series
	end       int64

	stats event.Stats
}

// New returns a Writer writing to w.
func New(w io.Writer, opts Options) *Writer {
	if opts.FlowWindow <= 0 {
		opts.FlowWindow = 1 << 20
	}
	if opts.MaxLanes <= 0 {
		opts.MaxLanes = 256
	}
	if opts.CounterColumns <= 0 {
		opts.CounterColumns = 1000
	}
	return &Writer{
		w: bufio.NewWriterSize(w, 1<<16), opts: opts, buf: make([]byte, 0, 512),
		procs: make(map[event.ProcessKey]*proc), pidTaken: make(map[uint32]bool),
		procNames: make(map[event.ProcessKey]string), threads: make(map[threadKey]*track),
		devs: make(map[event.Device]*track), devNames: make(map[event.Device]string),
		nextSynth: synthBase, causes: make(map[uint64]place), causeFIFO: make([]uint64, 0, 1024),
		pending: make(map[uint64][]place), devSeries: make(map[event.Device]*series),
		fileSer: newSeries(opts.CounterColumns),
	}
}

// Stats returns what could not be drawn: block I/Os whose cause never
// came, flows beyond the window, slices on crowded lanes.
func (w *Writer) Stats() event.Stats { return w.stats }

// Count returns the number of trace events written so far.
func (w *Writer) Count() uint64 { return w.n }

func (w *Writer) synth() uint32 {
	w.nextSynth++
	return w.nextSynth
}

// emit writes one trace event from w.buf.
func (w *Writer) emit() {
	if w.err != nil {
		return
	}
	if w.n > 0 {
		w.w.WriteByte(',')
	}
	w.w.WriteByte('\n')
	_, w.err = w.w.Write(w.buf)
	w.n++
}

// Begin implements event.Sink.
func (w *Writer) Begin(h *event.Header) error {
	w.hdr = *h
	_, w.err = w.w.WriteString(`{"displayTimeUnit":"ns","traceEvents":[`)
	return w.err
}

// Fact implements event.Sink: process, thread and device names.
func (w *Writer) Fact(f *event.Fact) error {
	switch f.Kind {
	case event.FactProcess:
		if !f.End && f.Name != "" {
			k := event.ProcessKey{Pid: f.Pid, Start: f.ProcStart}
			w.procNames[k] = f.Name
			if p := w.procs[k]; p != nil {
				w.nameProcess(p, k, f.Name)
			}
		}
	case event.FactDevice:
		if f.Name != "" {
			w.devNames[f.Dev] = f.Name
		}
	}
	return w.err
}

func (w *Writer) meta(kind string, cpid, ctid uint32, withTid bool, key, val string, num int64, isNum bool) {
	b := append(w.buf[:0], `{"ph":"M","name":`...)
	b = appendString(b, kind)
	b = append(b, `,"pid":`...)
	b = strconv.AppendUint(b, uint64(cpid), 10)
	if withTid {
		b = append(b, `,"tid":`...)
		b = strconv.AppendUint(b, uint64(ctid), 10)
	}
	b = append(b, `,"args":{`...)
	b = appendString(b, key)
	b = append(b, ':')
	if isNum {
		b = strconv.AppendInt(b, num, 10)
	} else {
		b = appendString(b, val)
	}
	b = append(b, "}}"...)
	w.buf = b
	w.emit()
}

func (w *Writer) nameProcess(p *proc, k event.ProcessKey, name string) {
	label := name
	if p.cpid != k.Pid {
		label = fmt.Sprintf("%s (pid %d, reused)", name, k.Pid)
	}
	if label == p.named {
		return
	}
	p.named = label
	w.meta("process_name", p.cpid, 0, false, "name", label, 0, false)
}

// process returns the Chrome pid of k, naming it on first use.
func (w *Writer) process(k event.ProcessKey, comm string) *proc {
	p := w.procs[k]
	if p != nil {
		if p.named == "" && comm != "" {
			w.nameProcess(p, k, comm)
		}
		return p
	}
	p = &proc{cpid: k.Pid}
	if w.pidTaken[k.Pid] || k.Pid >= synthBase {
		p.cpid = w.synth()
	}
	w.pidTaken[k.Pid] = true
	w.procs[k] = p
	name := w.procNames[k]
	if name == "" {
		name = comm
	}
	if k.Pid == 0 && name == "" {
		name = "idle"
	}
	if name != "" {
		w.nameProcess(p, k, name)
	}
	return p
}

// thread returns the track of e's thread.
func (w *Writer) thread(p *proc, e *event.Event) *track {
	tk := threadKey{cpid: p.cpid, key: e.Thread()}
	t := w.threads[tk]
	if t == nil {
		t = &track{cpid: p.cpid}
		tid := e.Tid
		switch {
		case tk.key.IsIdle():
			tid = w.synth()
			t.name = fmt.Sprintf("idle (cpu %d)", e.CPU)
		case tid >= synthBase:
			tid = w.synth()
			t.name = fmt.Sprintf("tid %d", e.Tid)
		default:
			t.name = fmt.Sprintf("%s %d", e.Comm, e.Tid)
			if e.Comm == "" {
				t.name = fmt.Sprintf("tid %d", e.Tid)
			}
		}
		t.lanes = []*lane{{tid: tid, lastStart: -1 << 62}}
		w.threads[tk] = t
		w.meta("thread_name", p.cpid, tid, true, "name", t.name, 0, false)
	}
	return t
}

// device returns the track of a block device.
func (w *Writer) device(d event.Device) *track {
	t := w.devs[d]
	if t == nil {
		label := d.String()
		if label == "" {
			label = "unknown device"
		}
		if n := w.devNames[d]; n != "" {
			label = n + " (" + label + ")"
		}
		t = &track{cpid: w.synth(), name: "block " + label, device: true}
		t.lanes = []*lane{{tid: w.synth(), lastStart: -1 << 62}}
		w.devs[d] = t
		w.devOrder = append(w.devOrder, d)
		w.meta("process_name", t.cpid, 0, false, "name", t.name, 0, false)
		w.meta("process_sort_index", t.cpid, 0, false, "sort_index", "", -1000+int64(len(w.devs)), true)
		w.meta("thread_name", t.cpid, t.lanes[0].tid, true, "name", "lane 0", 0, false)
	}
	return t
}

// assign returns the lane tid for a slice [start, end] on t. inner are the
// ends of child slices drawn inside it from start (a block I/O's queued
// part): the lane remembers them, so that a later slice on it nests in
// the child or starts after it, never straddles its end.
func (w *Writer) assign(t *track, start, end int64, inner ...int64) uint32 {
	l := w.lane(t, start, end)
	for _, e := range inner {
		if e > start && e < end {
			l.ends = append(l.ends, e)
		}
	}
	return l.tid
}

// lane finds (or makes) the lane for a slice [start, end] on t.
func (w *Writer) lane(t *track, start, end int64) *lane {
	for _, l := range t.lanes {
		if start < l.lastStart {
			continue
		}
		for len(l.ends) > 0 && l.ends[len(l.ends)-1] <= start {
			l.ends = l.ends[:len(l.ends)-1]
		}
		if len(l.ends) == 0 || end <= l.ends[len(l.ends)-1] {
			l.ends = append(l.ends, end)
			l.lastStart = start
			return l
		}
	}
	if len(t.lanes) >= w.opts.MaxLanes {
		w.stats.Add(event.CountDropped, "slices drawn overlapping on a crowded lane", 1)
		return t.lanes[len(t.lanes)-1]
	}
	l := &lane{tid: w.synth(), ends: []int64{end}, lastStart: start}
	t.lanes = append(t.lanes, l)
	name := fmt.Sprintf("%s (overlap %d)", t.name, len(t.lanes)-1)
	if t.device {
		name = fmt.Sprintf("lane %d", len(t.lanes)-1)
	}
	w.meta("thread_name", t.cpid, l.tid, true, "name", name, 0, false)
	return l
}

// Event implements event.Sink.
func (w *Writer) Event(e *event.Event) error {
	if end := e.End(); end > w.end {
		w.end = end
	}
	switch e.Layer {
	case event.LayerFile:
		w.fileEvent(e)
	case event.LayerBlock:
		w.blockEvent(e)
	case event.LayerMarker:
		w.marker(e)
	default:
		w.stats.Add(event.CountDropped, "events of an unknown layer", 1)
	}
	return w.err
}

func dur(e *event.Event) int64 {
	if e.Duration < 0 || e.Flags&event.FlagNoCompletion != 0 {
		return 0
	}
	return e.Duration
}

// sliceHead starts an "X" event.
func (w *Writer) sliceHead(b []byte, name, cat string, cpid, ctid uint32, ts, d int64) []byte {
	b = append(b, `{"ph":"X","name":`...)
	b = appendString(b, name)
	b = append(b, `,"cat":"`...)
	b = append(b, cat...)
	b = append(b, `","pid":`...)
	b = strconv.AppendUint(b, uint64(cpid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendUint(b, uint64(ctid), 10)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, ts)
	b = append(b, `,"dur":`...)
	b = appendMicros(b, d)
	return b
}

func argUint(b []byte, key string, v uint64) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendUint(b, v, 10)
}

func argInt(b []byte, key string, v int64) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

func argStr(b []byte, key, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, v)
}

func (w *Writer) result(e *event.Event) string {
	if e.Status == event.StatusOK && e.Code == 0 {
		return "ok"
	}
	if w.hdr.OS == "windows" || e.Source == event.SourceETWLive || e.Source == event.SourceETLFile {
		return event.NTSTATUSName(e.Code)
	}
	if e.Code != 0 {
		return event.ErrnoName(e.Code)
	}
	return e.Status.String()
}

func (w *Writer) fileEvent(e *event.Event) {
	p := w.process(e.Process(), e.Comm)
	t := w.thread(p, e)
	d := dur(e)
	tid := w.assign(t, e.Time, e.Time+d)
	b := w.sliceHead(w.buf[:0], e.Op.String(), "file", p.cpid, tid, e.Time, d)
	b = append(b, `,"args":{"id":`...)
	b = strconv.AppendUint(b, e.ID, 10)
	if e.Native != "" {
		b = argStr(b, "native", e.Native)
	}
	if e.Path != "" {
		b = argStr(b, "path", e.Path)
	}
	if e.Path2 != "" {
		b = argStr(b, "path2", e.Path2)
	}
	if e.FD >= 0 {
		b = argInt(b, "fd", int64(e.FD))
	}
	if e.Offset >= 0 {
		b = argInt(b, "offset", e.Offset)
	}
	if e.Size > 0 {
		b = argUint(b, "size", e.Size)
	}
	if e.Bytes >= 0 {
		b = argInt(b, "bytes", e.Bytes)
	}
	b = argStr(b, "result", w.result(e))
	if e.Flags != 0 {
		b = argStr(b, "flags", e.Flags.String())
	}
	if e.CausedIOs > 0 {
		b = argUint(b, "caused_ios", uint64(e.CausedIOs))
		b = argUint(b, "caused_bytes", e.CausedBytes)
	}
	b = append(b, "}}"...)
	w.buf = b
	w.emit()

	if e.Bytes > 0 && (e.Op == event.OpRead || e.Op == event.OpWrite) {
		w.fileSer.add(e.Time, e.Op == event.OpWrite, uint64(e.Bytes))
	}
	if e.CausedIOs > 0 && e.ID != 0 {
		at := place{cpid: p.cpid, ctid: tid, ts: e.Time, end: e.Time + d}
		w.rememberCause(e.ID, at)
		if bios := w.pending[e.ID]; len(bios) > 0 {
			for _, bio := range bios {
				w.flow(at, bio)
			}
			w.npending -= len(bios)
			delete(w.pending, e.ID)
		}
	}
}

func (w *Writer) rememberCause(id uint64, at place) {
	if len(w.causeFIFO) < w.opts.FlowWindow {
		w.causeFIFO = append(w.causeFIFO, id)
	} else {
		delete(w.causes, w.causeFIFO[w.causeNext])
		w.causeFIFO[w.causeNext] = id
		w.causeNext = (w.causeNext + 1) % len(w.causeFIFO)
	}
	w.causes[id] = at
}

// flow draws an arrow from the cause slice to the block I/O slice.
func (w *Writer) flow(from, to place) {
	w.flowID++
	ts := to.ts
	if ts < from.ts {
		ts = from.ts
	}
	if ts > from.end {
		ts = from.end
	}
	for i, ph := range []string{"s", "f"} {
		at := from
		t := ts
		if i == 1 {
			at, t = to, to.ts
		}
		b := append(w.buf[:0], `{"ph":"`...)
		b = append(b, ph...)
		b = append(b, `","name":"caused","cat":"cause","id":`...)
		b = strconv.AppendUint(b, w.flowID, 10)
		if i == 1 {
			b = append(b, `,"bp":"e"`...)
		}
		b = append(b, `,"pid":`...)
		b = strconv.AppendUint(b, uint64(at.cpid), 10)
		b = append(b, `,"tid":`...)
		b = strconv.AppendUint(b, uint64(at.ctid), 10)
		b = append(b, `,"ts":`...)
		b = appendMicros(b, t)
		b = append(b, '}')
		w.buf = b
		w.emit()
	}
}

func (w *Writer) blockEvent(e *event.Event) {
	t := w.device(e.Dev)
	d := dur(e)
	var tid uint32
	if e.Wait > 0 && e.Wait < d {
		tid = w.assign(t, e.Time, e.Time+d, e.Time+e.Wait) // the queued child below
	} else {
		tid = w.assign(t, e.Time, e.Time+d)
	}
	bytes := uint64(0)
	if e.Bytes >= 0 {
		bytes = uint64(e.Bytes)
	} else {
		bytes = e.Size
	}
	b := w.sliceHead(w.buf[:0], e.Op.String(), "block", t.cpid, tid, e.Time, d)
	b = append(b, `,"args":{"id":`...)
	b = strconv.AppendUint(b, e.ID, 10)
	b = argUint(b, "sector", e.Sector)
	b = argUint(b, "bytes", bytes)
	if e.Wait > 0 {
		b = append(b, `,"queue_us":`...)
		b = appendMicros(b, e.Wait)
		b = append(b, `,"service_us":`...)
		b = appendMicros(b, d-min(e.Wait, d))
	}
	b = argStr(b, "comm", e.Comm)
	b = argUint(b, "pid", uint64(e.Pid))
	b = argUint(b, "tid", uint64(e.Tid))
	if e.Path != "" {
		b = argStr(b, "path", e.Path)
	}
	if e.Cause != 0 {
		b = argUint(b, "cause", e.Cause)
	}
	if e.Flags != 0 {
		b = argStr(b, "flags", e.Flags.String())
	}
	b = argStr(b, "result", w.result(e))
	b = append(b, "}}"...)
	w.buf = b
	w.emit()
	if e.Wait > 0 && e.Wait < d {
		w.buf = append(w.sliceHead(w.buf[:0], "queued", "block", t.cpid, tid, e.Time, e.Wait), '}')
		w.emit()
	}

	s := w.devSeries[e.Dev]
	if s == nil {
		s = newSeries(w.opts.CounterColumns)
		w.devSeries[e.Dev] = s
	}
	if e.Op == event.OpBlockRead || e.Op == event.OpBlockWrite {
		s.add(e.Time, e.Op == event.OpBlockWrite, bytes)
	}

	if e.Cause != 0 {
		at := place{cpid: t.cpid, ctid: tid, ts: e.Time, end: e.Time + d}
		if c, ok := w.causes[e.Cause]; ok {
			w.flow(c, at)
		} else if w.npending < w.opts.FlowWindow {
			w.pending[e.Cause] = append(w.pending[e.Cause], at)
			w.npending++
		} else {
			w.stats.Add(event.CountUnpaired, "cause links beyond the flow window (not drawn)", 1)
		}
	}
}

func (w *Writer) marker(e *event.Event) {
	p := w.process(e.Process(), e.Comm) // may emit metadata: before w.buf is built
	b := append(w.buf[:0], `{"ph":"i","s":"g","name":`...)
	name := e.Note
	if name == "" {
		name = "marker"
	}
	b = appendString(b, name)
	b = append(b, `,"cat":"marker","pid":`...)
	b = strconv.AppendUint(b, uint64(p.cpid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendUint(b, uint64(e.Tid), 10)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, e.Time)
	b = append(b, '}')
	w.buf = b
	w.emit()
}

// End implements event.Sink: it writes the counters, the metadata and the
// end of the document, and flushes.
func (w *Writer) End(t *event.Trailer) error {
	if t.End > w.end {
		w.end = t.End
	}
	return w.finish(t, true)
}

// Close ends the document of a stream that failed before End, so that the
// output is still valid JSON (marked incomplete). After End it does
// nothing.
func (w *Writer) Close() error {
	if w.done {
		return w.err
	}
	return w.finish(&event.Trailer{End: w.end}, false)
}

func (w *Writer) finish(t *event.Trailer, complete bool) error {
	if w.done {
		return w.err
	}
	w.done = true
	if w.npending > 0 {
		w.stats.Add(event.CountUnpaired, "block I/O whose causing event is not in the trace (no arrow)", uint64(w.npending))
	}
	// Counters: file-layer throughput in a process of its own, then one
	// per device.
	if w.fileSer.used() {
		cpid := w.synth()
		w.meta("process_name", cpid, 0, false, "name", "file I/O throughput (all processes)", 0, false)
		w.counters(cpid, "file read/write", w.fileSer)
	}
	for _, d := range w.devOrder {
		if s := w.devSeries[d]; s != nil && s.used() {
			w.counters(w.devs[d].cpid, "throughput", s)
		}
	}
	b := append(w.buf[:0], "\n],\"iotrace\":{\"complete\":"...)
	b = strconv.AppendBool(b, complete)
	b = argStr(b, "os", w.hdr.OS)
	b = argStr(b, "hostname", w.hdr.Hostname)
	b = argStr(b, "source", w.hdr.Source.String())
	b = argInt(b, "start_wall_ns", w.hdr.StartWall)
	b = argInt(b, "end_ns", w.end)
	b = append(b, `,"problems":[`...)
	all := t.Stats
	all.Merge(w.stats)
	for i, c := range all.Problems() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = appendString(b, c.Kind.String())
		b = argStr(b, "name", c.Name)
		b = argUint(b, "value", c.Value)
		b = append(b, '}')
	}
	b = append(b, "]}}\n"...)
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
	if err := w.w.Flush(); w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *Writer) counters(cpid uint32, name string, s *series) {
	secs := float64(s.width) / 1e9
	emit := func(ts int64, r, wr uint64) {
		b := append(w.buf[:0], `{"ph":"C","name":`...)
		b = appendString(b, name)
		b = append(b, `,"pid":`...)
		b = strconv.AppendUint(b, uint64(cpid), 10)
		b = append(b, `,"ts":`...)
		b = appendMicros(b, ts)
		b = append(b, `,"args":{"read MB/s":`...)
		b = strconv.AppendFloat(b, float64(r)/secs/1e6, 'f', 3, 64)
		b = append(b, `,"write MB/s":`...)
		b = strconv.AppendFloat(b, float64(wr)/secs/1e6, 'f', 3, 64)
		b = append(b, "}}"...)
		w.buf = b
		w.emit()
	}
	for i := 0; i <= s.last; i++ {
		emit(int64(i)*s.width, s.vals[i][0], s.vals[i][1])
	}
	emit(int64(s.last+1)*s.width, 0, 0)
}

// series is a throughput time series in bounded memory: when a sample
// falls beyond the last column, the column width doubles.
type series struct {
	width int64
	vals  [][2]uint64 // read, write bytes
	last  int
	n     uint64
}

func newSeries(cols int) *series {
	cols += cols & 1
	return &series{width: 10_000_000, vals: make([][2]uint64, cols)}
}

func (s *series) used() bool { return s.n > 0 }

func (s *series) add(t int64, write bool, bytes uint64) {
	if t < 0 {
		t = 0
	}
	col := t / s.width
	for col >= int64(len(s.vals)) {
		half := len(s.vals) / 2
		for i := 0; i < half; i++ {
			s.vals[i] = [2]uint64{s.vals[2*i][0] + s.vals[2*i+1][0], s.vals[2*i][1] + s.vals[2*i+1][1]}
		}
		clear(s.vals[half:])
		s.width *= 2
		s.last /= 2
		col = t / s.width
	}
	i := 0
	if write {
		i = 1
	}
	s.vals[col][i] += bytes
	if int(col) > s.last {
		s.last = int(col)
	}
	s.n++
}
