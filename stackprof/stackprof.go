// Package stackprof writes a trace's events aggregated by stack as
// profiles that flame-graph tools read: pprof's protocol buffer format
// (written with github.com/google/pprof/profile: go tool pprof,
// speedscope, Pyroscope-style viewers) and the collapsed-stack text of
// Brendan Gregg's flamegraph.pl ("main;outer_fn;inner_fn 42").
//
// Every event is a sample, weighted by its count (1), its bytes done and
// its latency (ns), so that the values of a profile sum to the trace's
// totals for the events written; in pprof, file-layer events and block
// I/O have sample types of their own (file_bytes, block_bytes, ...),
// never added together. An event without a stack is a sample
// of its own "[no stack]" frame; an event whose stack is not in the
// trace one of "[stack not in the trace]". Frames are named through a
// stacks.Table (which counts the frames it cannot name).
package stackprof

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/termesc"
	"github.com/iotrace/iotrace/stacks"
)

// Weight selects the value of a collapsed-stack line.
type Weight uint8

// Weights.
const (
	WeightCount   Weight = iota // events
	WeightBytes                 // bytes done
	WeightLatency               // nanoseconds
)

// ParseWeight parses "count", "bytes" or "latency".
func ParseWeight(s string) (Weight, error) {
	switch strings.ToLower(s) {
	case "count", "":
		return WeightCount, nil
	case "bytes":
		return WeightBytes, nil
	case "latency", "time":
		return WeightLatency, nil
	}
	return 0, fmt.Errorf("unknown weight %q (valid: count, bytes, latency)", s)
}

// Pseudo-frames.
const (
	noStack      = "[no stack]"
	missingStack = "[stack not in the trace]"
)

// Totals are the sums of the samples' values.
type Totals struct {
	Count, Bytes, Latency int64
}

// key is a sample's identity: its frames (innermost first) and op.
type agg struct {
	frames []stacks.Frame
	root   string // the op, outermost frame
	comm   string
	block  bool
	Totals
}

// Aggregator sums events by stack and op.
type Aggregator struct {
	command string // the traced command line, when known
	tab     *stacks.Table
	byKey   map[aggKey]*agg
	// frameKeys remembers the key of each symbolized stack met, up to
	// maxFrameKeyBytes of keys (then it starts again).
	frameKeys     map[*stacks.Stack]string
	frameKeyBytes int
	order         []*agg
	totals        Totals
	end           int64
}

// maxFrameKeyBytes bounds the memory of frame keys: a stack is named per
// process that uses it, and a key holds every frame's name.
const maxFrameKeyBytes = 32 << 20

// NewAggregator returns an Aggregator naming frames with tab.
func NewAggregator(tab *stacks.Table) *Aggregator {
	return &Aggregator{tab: tab, byKey: map[aggKey]*agg{}, frameKeys: map[*stacks.Stack]string{}}
}

// Add adds e as a sample.
func (a *Aggregator) Add(e *event.Event) {
	var (
		frames []stacks.Frame
		fk     string // the frames' key
	)
	switch st := a.tab.Frames(e); {
	case st != nil:
		frames = st.Frames
		k, ok := a.frameKeys[st]
		if !ok {
			// Computed once per distinct symbolized stack: the same
			// frames from another process or time share a sample.
			var kb strings.Builder
			for _, f := range frames {
				kb.WriteByte(0)
				kb.WriteString(stacks.FrameString(f))
			}
			k = kb.String()
			if a.frameKeyBytes += len(k); a.frameKeyBytes > maxFrameKeyBytes {
				clear(a.frameKeys)
				a.frameKeyBytes = len(k)
			}
			a.frameKeys[st] = k
		}
		fk = k
	case e.Stack != 0:
		frames, fk = missingFrames, "\x00"+missingStack
	default:
		frames, fk = noFrames, "\x00"+noStack
	}
	k := aggKey{op: e.Op, comm: e.Comm, frames: fk}
	s, ok := a.byKey[k]
	if !ok {
		s = &agg{frames: frames, root: e.Op.String(), comm: e.Comm, block: isBlock(e.Op)}
		a.byKey[k] = s
		a.order = append(a.order, s)
	}
	var bytes int64
	if e.Bytes > 0 {
		bytes = e.Bytes
	}
	s.Count++
	s.Bytes += bytes
	s.Latency += e.Duration
	a.totals.Count++
	a.totals.Bytes += bytes
	a.totals.Latency += e.Duration
	if end := e.End(); end > a.end {
		a.end = end
	}
}

var (
	noFrames      = []stacks.Frame{pseudo(noStack)}
	missingFrames = []stacks.Frame{pseudo(missingStack)}
)

type aggKey struct {
	op     event.Op
	comm   string
	frames string
}

func pseudo(name string) stacks.Frame {
	f := stacks.Frame{}
	f.Function = name
	return f
}

// Totals returns the sums of every sample's values.
func (a *Aggregator) Totals() Totals { return a.totals }

// The pprof profile's sample types: file-layer operations and block I/O
// apart, never summed (a write's bytes and the block writes they caused
// would count twice; a read's latency holds its block I/O's).
var sampleTypes = []*profile.ValueType{
	{Type: "file_ops", Unit: "count"}, {Type: "file_bytes", Unit: "bytes"}, {Type: "file_latency", Unit: "nanoseconds"},
	{Type: "block_ios", Unit: "count"}, {Type: "block_bytes", Unit: "bytes"}, {Type: "block_latency", Unit: "nanoseconds"},
}

// Profile returns the samples as a pprof profile: sample types
// file_ops, file_bytes, file_latency (ns) for file-layer events and
// block_ios, block_bytes, block_latency for block I/O (a sample has the
// other layer's zero); the op as the outermost frame; labels op, layer
// and comm. Its first mapping (the one pprof takes for the program) is
// the traced program's: the command's, else the module named as the
// process of most samples, else the first user-space module.
func (a *Aggregator) Profile() *profile.Profile {
	p := &profile.Profile{
		SampleType:        sampleTypes,
		DefaultSampleType: "file_latency",
		PeriodType:        &profile.ValueType{Type: "io", Unit: "count"}, Period: 1,
		DurationNanos: a.end,
	}
	maps := map[string]*profile.Mapping{}
	if main := a.mainModule(); main != "" {
		maps[main] = &profile.Mapping{ID: 1, File: termesc.String(main), HasFunctions: true}
		p.Mapping = append(p.Mapping, maps[main])
	}
	funcs := map[[2]string]*profile.Function{}
	locs := map[string]*profile.Location{}
	mapping := func(name string) *profile.Mapping {
		if name == "" {
			return nil
		}
		m, ok := maps[name]
		if !ok {
			m = &profile.Mapping{ID: uint64(len(p.Mapping) + 1), File: termesc.String(name), HasFunctions: true}
			maps[name] = m
			p.Mapping = append(p.Mapping, m)
		}
		return m
	}
	function := func(name, file string) *profile.Function {
		k := [2]string{name, file}
		fn, ok := funcs[k]
		if !ok {
			shown := termesc.String(name)
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: shown, SystemName: shown, Filename: termesc.String(file)}
			funcs[k] = fn
			p.Function = append(p.Function, fn)
		}
		return fn
	}
	location := func(f stacks.Frame) *profile.Location {
		name := stacks.FrameString(f)
		k := name + "\x00" + f.File + "\x00" + strconv.Itoa(f.Line)
		l, ok := locs[k]
		if !ok {
			l = &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: mapping(f.Module)}
			if l.Mapping != nil {
				l.Address = f.Offset
			}
			fname := f.Function
			if fname == "" {
				fname = name
			} else if f.Kernel {
				fname = "[k] " + fname
			}
			l.Line = []profile.Line{{Function: function(fname, f.File), Line: int64(f.Line)}}
			locs[k] = l
			p.Location = append(p.Location, l)
		}
		return l
	}
	for _, s := range a.order {
		ls := make([]*profile.Location, 0, len(s.frames)+1)
		for _, f := range s.frames {
			ls = append(ls, location(f))
		}
		ls = append(ls, location(pseudo(s.root)))
		layer, v := "file", []int64{s.Count, s.Bytes, s.Latency, 0, 0, 0}
		if s.block {
			layer, v = "block", []int64{0, 0, 0, s.Count, s.Bytes, s.Latency}
		}
		labels := map[string][]string{"op": {s.root}, "layer": {layer}}
		if s.comm != "" {
			labels["comm"] = []string{termesc.String(s.comm)}
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: ls, Value: v, Label: labels})
	}
	return p
}

// mainModule names the traced program's module among the samples'
// frames: the command's file (Begin's header), else the module named as
// the process (comm, at most 15 bytes) of most samples, else the first
// module of a user frame; "" when no frame has one. A name matches its
// versioned file too: programs are recorded under their resolved paths,
// so "python3" runs as the module python3.11.
func (a *Aggregator) mainModule() string {
	user := map[string]bool{}
	var first string
	for _, s := range a.order {
		for _, f := range s.frames {
			if !f.Kernel && f.Module != "" {
				if first == "" {
					first = f.Module
				}
				user[f.Module] = true
			}
		}
	}
	if cmd := strings.Fields(a.command); len(cmd) > 0 {
		base := filepath.Base(cmd[0])
		best := ""
		for m := range user {
			if (m == base || versionOf(m, base)) && (best == "" || len(m) < len(best) || len(m) == len(best) && m < best) {
				best = m
			}
		}
		if best != "" {
			return best
		}
	}
	byComm := map[string]int64{}
	for _, s := range a.order {
		byComm[s.comm] += s.Count
	}
	best, bestN := "", int64(0)
	for m := range user {
		var n int64
		for comm, c := range byComm {
			if m == comm || len(m) > 15 && m[:15] == comm || versionOf(m, comm) {
				n += c
			}
		}
		if n > bestN || n == bestN && n > 0 && m < best {
			best, bestN = m, n
		}
	}
	if best != "" {
		return best
	}
	return first
}

// versionOf reports whether file is name with a version after it:
// python3.11 of python3, perl5.36.0 of perl5, ruby-3.1 of ruby.
func versionOf(file, name string) bool {
	rest, ok := strings.CutPrefix(file, name)
	if !ok || len(rest) < 2 || rest[0] != '.' && rest[0] != '-' {
		return false
	}
	for _, c := range rest[1:] {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return rest[1] != '.'
}

// WriteFolded writes the samples as collapsed stacks, outermost frame
// first, the op as the root ("write;main;outer_fn;inner_fn;write_block
// 4096"), one line per stack with its weight, sorted; lines of weight 0
// are left out. Frame names have ';' and newlines replaced, as the
// format needs, and other control bytes shown as the text output shows
// them (package termesc).
func (a *Aggregator) WriteFolded(w io.Writer, weight Weight) error {
	lines := map[string]int64{}
	for _, s := range a.order {
		v := s.Count
		switch weight {
		case WeightBytes:
			v = s.Bytes
		case WeightLatency:
			v = s.Latency
		}
		if v == 0 {
			continue
		}
		parts := make([]string, 0, len(s.frames)+1)
		parts = append(parts, foldName(s.root))
		for i := len(s.frames) - 1; i >= 0; i-- {
			parts = append(parts, foldName(shortName(s.frames[i])))
		}
		lines[strings.Join(parts, ";")] += v
	}
	keys := make([]string, 0, len(lines))
	for k := range lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		bw.WriteString(k)
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatInt(lines[k], 10))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// shortName is a frame's function name without its source position (a
// flame graph merges frames by name), or module+0xoffset.
func shortName(f stacks.Frame) string {
	if f.Function == "" {
		return stacks.FrameString(f)
	}
	if f.Kernel {
		return "[k] " + f.Function
	}
	return f.Function
}

var foldReplacer = strings.NewReplacer(";", ":", "\n", " ", "\r", " ")

func foldName(s string) string { return termesc.String(foldReplacer.Replace(s)) }

// Sink is an event.Sink that aggregates every event and, at End, writes
// the profile in its format.
type Sink struct {
	*Aggregator
	w      io.Writer
	folded bool
	weight Weight
}

// NewPprof returns a sink writing a pprof profile (gzip-compressed
// protocol buffer) to w at End.
func NewPprof(w io.Writer, tab *stacks.Table) *Sink {
	return &Sink{Aggregator: NewAggregator(tab), w: w}
}

// NewFolded returns a sink writing collapsed stacks weighted by weight to
// w at End.
func NewFolded(w io.Writer, tab *stacks.Table, weight Weight) *Sink {
	return &Sink{Aggregator: NewAggregator(tab), w: w, folded: true, weight: weight}
}

// Begin implements event.Sink: the header's command names the traced
// program (the profile's main mapping).
func (s *Sink) Begin(h *event.Header) error {
	s.command = h.Command
	return nil
}

// Event implements event.Sink.
func (s *Sink) Event(e *event.Event) error {
	if e.Layer == event.LayerMarker {
		return nil
	}
	s.Add(e)
	return nil
}

// Fact implements event.Sink (the table is fed upstream, see
// stacks.Table.Feed).
func (s *Sink) Fact(*event.Fact) error { return nil }

// End implements event.Sink: it writes the profile.
func (s *Sink) End(*event.Trailer) error {
	if s.folded {
		return s.WriteFolded(s.w, s.weight)
	}
	return s.Profile().Write(s.w)
}
