package filter

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// Options select events. The zero value selects everything. Within one
// field any value may match; all set fields must match.
type Options struct {
	// Pids selects events of these processes.
	Pids []uint32
	// FollowChildren extends Pids to their descendants: on live traces
	// through the backend, on recorded traces through the parent pids of
	// the trace's process facts.
	FollowChildren bool
	// Comms selects process names; each is a glob ('*', '?', [...], {a,b},
	// "cc*") matched against the whole name.
	Comms []string
	// PathGlobs select file paths (an event's path or a rename's new
	// name). '*', '?', [...] and {a,b} match within one path element, "**"
	// matches any number of elements. A glob with no separator matches the
	// last element of the path ("*.so"); any other glob matches the whole
	// path. '\' and '/' both separate elements, and Windows traces match
	// case-insensitively.
	PathGlobs []string
	// Ops selects normalized ops.
	Ops []event.Op
	// Layers selects layers.
	Layers []event.Layer
	// MinLatency selects events that took at least this long.
	MinLatency time.Duration
	// Failed selects failed operations.
	Failed bool
}

// IsZero reports whether o selects everything.
func (o *Options) IsZero() bool {
	return len(o.Pids) == 0 && !o.FollowChildren && len(o.Comms) == 0 && len(o.PathGlobs) == 0 &&
		len(o.Ops) == 0 && len(o.Layers) == 0 && o.MinLatency == 0 && !o.Failed
}

// PushDown copies into b what a live backend can filter in the kernel:
// pids (with FollowChildren), exact process names, layers and ops. The
// rest (paths, latency, outcome, comm globs) stays with the Filter, which
// is applied after the backend as well.
func (o *Options) PushDown(b *backend.Options) {
	b.Pids = append(b.Pids[:0:0], o.Pids...)
	b.FollowChildren = o.FollowChildren
	b.Comms = nil
	for _, c := range o.Comms {
		if strings.ContainsAny(c, `*?[{\`) {
			// One glob among the names: the kernel cannot select by it,
			// so it must see every process.
			b.Comms = nil
			break
		}
		b.Comms = append(b.Comms, c)
	}
	b.Layers = append(b.Layers[:0:0], o.Layers...)
	b.Ops = append(b.Ops[:0:0], o.Ops...)
	if len(b.Ops) > 0 && len(b.Layers) == 0 {
		// Ops imply their layers.
		for _, op := range b.Ops {
			if l := op.Layer(); !containsLayer(b.Layers, l) {
				b.Layers = append(b.Layers, l)
			}
		}
	}
}

func containsLayer(ls []event.Layer, l event.Layer) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

// Filter is validated Options. It is not safe for concurrent use; Match
// and the sink of one Filter must run on one goroutine.
type Filter struct {
	opts   Options
	pids   map[uint32]bool
	ops    [256]bool
	layers [256]bool
	globs  []glob
	comms  []string // Comms lower-cased, for fold
	fold   bool     // Windows trace: paths and names match case-insensitively
	// Process tree for FollowChildren: parent of each pid seen in process
	// facts, and the memoized answer per pid.
	parent map[uint32]uint32
	follow map[uint32]bool
}

// New validates opts and returns the filter.
func New(opts Options) (*Filter, error) {
	f := &Filter{opts: opts}
	if len(opts.Pids) > 0 {
		f.pids = make(map[uint32]bool, len(opts.Pids))
		for _, p := range opts.Pids {
			f.pids[p] = true
		}
	} else if opts.FollowChildren {
		return nil, fmt.Errorf("--follow-children needs --pid")
	}
	if opts.FollowChildren {
		f.parent = make(map[uint32]uint32)
		f.follow = make(map[uint32]bool)
	}
	for _, c := range opts.Comms {
		if !validComm(c) {
			return nil, fmt.Errorf("bad --comm pattern %q: %w", c, errSyntax)
		}
		f.comms = append(f.comms, strings.ToLower(c))
	}
	for _, op := range opts.Ops {
		if int(op) >= event.NumOps || op == event.OpUnknown {
			return nil, fmt.Errorf("bad op %d (valid: %s)", op, ValidOps())
		}
		f.ops[op] = true
	}
	for _, l := range opts.Layers {
		if l == event.LayerUnknown || l.String() == fmt.Sprintf("layer(%d)", uint8(l)) {
			return nil, fmt.Errorf("bad layer %d (valid: file, block, marker)", l)
		}
		f.layers[l] = true
	}
	for _, g := range opts.PathGlobs {
		pg, err := compileGlob(g)
		if err != nil {
			return nil, fmt.Errorf("bad --path glob %q: %w", g, err)
		}
		f.globs = append(f.globs, pg)
	}
	if opts.MinLatency < 0 {
		return nil, fmt.Errorf("--min-latency must not be negative (got %v)", opts.MinLatency)
	}
	return f, nil
}

// keptLayers are the layers whose events can pass the filter: those
// selected, and of those the layers of the ops selected.
func (f *Filter) keptLayers() event.Layers {
	kept := ^event.Layers(0)
	if len(f.opts.Layers) > 0 {
		kept = event.LayersOf(f.opts.Layers...)
	}
	if len(f.opts.Ops) > 0 {
		var k event.Layers
		for _, op := range f.opts.Ops {
			k = k.With(op.Layer())
		}
		kept &= k
	}
	return kept
}

// Options returns the options the filter was built from.
func (f *Filter) Options() Options { return f.opts }

// SetOS tells the filter which OS the trace comes from ("windows" paths
// and process names match case-insensitively). The sink calls it from
// Begin.
func (f *Filter) SetOS(os string) { f.fold = os == "windows" }

// ValidOps lists the op names --op accepts.
func ValidOps() string {
	names := make([]string, 0, event.NumOps)
	for o := event.Op(1); int(o) < event.NumOps; o++ {
		names = append(names, o.String())
	}
	return strings.Join(names, ", ")
}

// Match reports whether e passes every filter. Markers pass every filter
// except an --op or --layer selection that leaves them out: they are
// annotations of the whole trace.
func (f *Filter) Match(e *event.Event) bool {
	if len(f.opts.Ops) > 0 && !f.ops[e.Op] {
		return false
	}
	if len(f.opts.Layers) > 0 && !f.layers[e.Layer] {
		return false
	}
	if e.Op == event.OpMarker || e.Layer == event.LayerMarker {
		return true
	}
	if f.pids != nil && !f.matchPid(e.Pid) {
		return false
	}
	if f.opts.Failed && !e.Failed() {
		return false
	}
	if f.opts.MinLatency > 0 && e.Duration < int64(f.opts.MinLatency) {
		return false
	}
	if len(f.opts.Comms) > 0 && !f.matchComm(e.Comm) {
		return false
	}
	if len(f.globs) > 0 && !f.matchPath(e.Path) && (e.Path2 == "" || !f.matchPath(e.Path2)) {
		return false
	}
	return true
}

func (f *Filter) matchComm(c string) bool {
	pats := f.opts.Comms
	if f.fold {
		c = strings.ToLower(c)
		pats = f.comms
	}
	for _, p := range pats {
		if globMatchComm(p, c) {
			return true
		}
	}
	return false
}

func (f *Filter) matchPath(p string) bool {
	if p == "" {
		return false
	}
	for i := range f.globs {
		if f.globs[i].match(p, f.fold) {
			return true
		}
	}
	return false
}

// matchPid reports whether pid is selected, directly or (with
// FollowChildren) as a descendant of a selected pid.
func (f *Filter) matchPid(pid uint32) bool {
	if f.pids[pid] {
		return true
	}
	if f.follow == nil {
		return false
	}
	if v, ok := f.follow[pid]; ok {
		return v
	}
	v := false
	p := pid
	for range 64 { // bounded: a corrupt trace may hold a parent loop
		pp, ok := f.parent[p]
		if !ok || pp == p {
			break
		}
		if f.pids[pp] {
			v = true
			break
		}
		p = pp
	}
	f.follow[pid] = v
	return v
}

// Observe learns the process tree from a process fact, so that
// FollowChildren selects descendants of the selected pids. The sink calls
// it for every fact; callers that use Match directly must too.
func (f *Filter) Observe(ft *event.Fact) {
	if f.parent == nil || ft.Kind != event.FactProcess || ft.End {
		return
	}
	if old, ok := f.parent[ft.Pid]; ok && old == ft.PPid {
		return
	}
	f.parent[ft.Pid] = ft.PPid
	clear(f.follow) // a new link may change any descendant's answer
}

// String renders the filter as the flags that select it.
func (f *Filter) String() string {
	var parts []string
	o := &f.opts
	if len(o.Pids) > 0 {
		ps := make([]string, len(o.Pids))
		for i, p := range o.Pids {
			ps[i] = strconv.FormatUint(uint64(p), 10)
		}
		parts = append(parts, "--pid "+strings.Join(ps, ","))
	}
	if o.FollowChildren {
		parts = append(parts, "--follow-children")
	}
	for _, c := range o.Comms {
		parts = append(parts, "--comm "+c)
	}
	for _, g := range o.PathGlobs {
		parts = append(parts, "--path "+g)
	}
	for _, op := range o.Ops {
		parts = append(parts, "--op "+op.String())
	}
	for _, l := range o.Layers {
		parts = append(parts, "--layer "+l.String())
	}
	if o.MinLatency > 0 {
		parts = append(parts, "--min-latency "+o.MinLatency.String())
	}
	if o.Failed {
		parts = append(parts, "--failed")
	}
	return strings.Join(parts, " ")
}
