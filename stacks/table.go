// Package stacks turns the stacks a trace records (raw return addresses,
// see event.FactStack) into frames at read time: it keeps the trace's
// stack, module and kernel symbol facts with their time history, finds
// the module that held each address in the event's process at the
// event's time, and names it through package symbolize (user space and
// kernel modules) or the trace's own kernel symbols. Frames it cannot
// name stay module+0xoffset (or the bare address) and are counted by
// reason, for the trace's problem summary.
//
// A Table is fed the trace's facts as they stream (Feed, placed where
// the facts come in stream order, before any reordering) and asked for
// the frames of events (Frames); Summary adds its counts to the trailer.
package stacks

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
)

// Options configure a Table.
type Options struct {
	// Symbols says where symbol files are searched (--symbols DIR).
	Symbols symbolize.Options
}

// Frame is one frame of an event's stack.
type Frame struct {
	symbolize.Frame
	// Kernel marks a frame of the stack's kernel part.
	Kernel bool
}

// Stack is an event's stack, symbolized.
type Stack struct {
	Frames []Frame
	// Flags are the stack's truncation marks (event.FactUserTruncated,
	// ...).
	Flags event.FactFlags
	strs  []string // FrameStrings' renderings
}

// MaxFrames is the most frames of a stack's kernel part, and of its user
// part, that a Table keeps: a stack fact holding more is cut there and
// flagged truncated (event.FactKernelTruncated, event.FactUserTruncated).
// It is event.MaxStackFrames, the readers' own bound (recorders capture
// fewer: 127 on Linux, 192 in ETW); it keeps a trace from elsewhere from
// making each event cost millions of frames.
const MaxFrames = event.MaxStackFrames

// Reasons beyond symbolize's, for frames and stacks this package cannot
// hand to it.
const (
	// unknownStack counts events whose stack ID no FactStack defines.
	unknownStack = "events whose stack is not in the trace (damaged or cut)"
	// noKernelSyms counts kernel frames with neither kernel symbols nor
	// a kernel module with a matching file.
	noKernelSyms = "kernel frames not named: the trace has no kernel symbols for them"
)

// mapping is one module fact's interval of validity.
type mapping struct {
	mod      symbolize.Module
	from, to int64 // [from, to): from is minInt for rundowns, to maxInt until unmapped
}

type ksym struct {
	addr, size uint64
	name, mod  string
}

// Table holds a trace's stacks, modules and kernel symbols.
type Table struct {
	sym     *symbolize.Symbolizer
	stacks  map[uint64]*event.Fact
	modules map[event.ProcessKey][]mapping // by process; {0, 0} is the kernel
	ksyms   []ksym
	ksorted bool
	// changes logs the address ranges whose naming facts changed, by
	// process ({0, 0}: the kernel's modules and symbols); see cache.go.
	changes    map[event.ProcessKey][]addrRange
	cache      map[cacheKey]*cached
	cacheBytes int
	counts     map[string]uint64
	resolved   uint64
}

// New returns an empty Table.
func New(opts Options) *Table {
	return &Table{
		sym:     symbolize.New(opts.Symbols),
		stacks:  map[uint64]*event.Fact{},
		modules: map[event.ProcessKey][]mapping{},
		changes: map[event.ProcessKey][]addrRange{},
		cache:   map[cacheKey]*cached{},
		counts:  map[string]uint64{},
	}
}

// Close releases what the table's symbolizer holds (on Windows, the
// dbghelp session); the table must not be used after.
func (t *Table) Close() error { return t.sym.Close() }

// FrameStrings returns e's stack as Frames does, each frame rendered by
// FrameString; nil when e has no stack. A stack is rendered once: events
// with the same stack in the same process get the same slice, which the
// caller must not modify.
func (t *Table) FrameStrings(e *event.Event) []string {
	st := t.Frames(e)
	if st == nil {
		return nil
	}
	if st.strs != nil {
		return st.strs
	}
	s := make([]string, len(st.Frames))
	n := 0
	for i, fr := range st.Frames {
		s[i] = FrameString(fr)
		n += stringHeader + len(s[i])
	}
	st.strs = s
	if c, ok := t.cache[cacheKey{e.Stack, e.Process()}]; ok && c.st == st {
		c.bytes += n
		t.cacheBytes += n
		t.trim()
	}
	return s
}

const (
	minTime = -1 << 63
	maxTime = 1<<63 - 1
)

// Fact records a stack, module or kernel symbol fact; other facts are
// ignored.
func (t *Table) Fact(f *event.Fact) {
	switch f.Kind {
	case event.FactStack:
		if _, ok := t.stacks[f.Handle]; !ok && f.Handle != 0 {
			c := *f
			c.Kernel, c.User = bounded(f.Kernel), bounded(f.User)
			if len(f.Kernel) > MaxFrames {
				c.Flags |= event.FactKernelTruncated
			}
			if len(f.User) > MaxFrames {
				c.Flags |= event.FactUserTruncated
			}
			t.stacks[f.Handle] = &c
		}
	case event.FactModule:
		k := event.ProcessKey{Pid: f.Pid, Start: f.ProcStart}
		ms := t.modules[k]
		if f.End {
			// The mapping at Handle ends at Time.
			for i := len(ms) - 1; i >= 0; i-- {
				if ms[i].mod.Start == f.Handle && ms[i].to == maxTime {
					ms[i].to = f.Time
					t.changed(k, ms[i].span())
					break
				}
			}
			return
		}
		id := f.Detail
		if strings.HasPrefix(f.Image, "pdb:") {
			// A Windows module is named from its PDB: the CodeView
			// identity is the one symbol files are matched by.
			id = f.Image
		}
		m := mapping{from: f.Time, to: maxTime, mod: symbolize.Module{
			Path: f.Name, ID: id, Start: f.Handle, End: f.Handle + f.Size, Offset: f.Offset,
			Vaddr: f.Vaddr, VaddrKnown: f.Flags&event.FactVaddr != 0,
		}}
		if f.Rundown {
			m.from = minTime
		}
		if f.Size == 0 {
			m.mod.End = 0
		}
		t.modules[k] = append(ms, m)
		t.changed(k, m.span())
	case event.FactKernelSymbol:
		t.ksyms = append(t.ksyms, ksym{addr: f.Handle, size: f.Size, name: f.Name, mod: f.Detail})
		t.ksorted = false
		// The new symbol may name any address from its own up (the one
		// below an address names it).
		t.changed(event.ProcessKey{}, addrRange{f.Handle, math.MaxUint64})
	}
}

// bounded is a copy of the first MaxFrames addresses of a stack part.
func bounded(part []uint64) []uint64 {
	return slices.Clone(part[:min(len(part), MaxFrames)])
}

// span is the range of addresses a mapping holds.
func (m *mapping) span() addrRange {
	if m.mod.End == 0 || m.mod.End <= m.mod.Start {
		return addrRange{m.mod.Start, math.MaxUint64}
	}
	return addrRange{m.mod.Start, m.mod.End - 1}
}

// Len returns the number of stacks the table holds.
func (t *Table) Len() int { return len(t.stacks) }

// Raw returns the stack fact with the given ID.
func (t *Table) Raw(id uint64) (*event.Fact, bool) {
	f, ok := t.stacks[id]
	return f, ok
}

// Frames returns e's stack, symbolized, innermost frame first (kernel
// frames, then user frames); nil when e has no stack. Every frame it
// returns is counted, by whether and why it could not be named; an
// event whose stack ID is unknown is counted and gets nil.
func (t *Table) Frames(e *event.Event) *Stack {
	if e.Stack == 0 {
		return nil
	}
	p := e.Process()
	key := cacheKey{stack: e.Stack, proc: p}
	c, ok := t.cache[key]
	if !ok || !t.fresh(c, p) {
		f, known := t.stacks[e.Stack]
		if !known {
			t.counts[unknownStack]++
			return nil
		}
		c = t.symbolize(f, p, e.Time)
		t.store(key, c)
	}
	for _, fr := range c.st.Frames {
		t.count(fr)
	}
	return c.st
}

func (t *Table) count(fr Frame) {
	switch {
	case fr.Reason == symbolize.Resolved:
		t.resolved++
	case fr.Kernel && fr.Reason == symbolize.NoModule:
		t.counts[noKernelSyms]++
	default:
		t.counts[fr.Reason.String()]++
	}
}

// symbolize names the frames of stack f in process p at time at, noting
// the addresses it looked up for the cache.
func (t *Table) symbolize(f *event.Fact, p event.ProcessKey, at int64) *cached {
	st := &Stack{Flags: f.Flags, Frames: make([]Frame, 0, len(f.Kernel)+len(f.User))}
	c := &cached{st: st, user: emptyRange, kernel: emptyRange,
		userSeen: len(t.changes[p]), kernelSeen: len(t.changes[event.ProcessKey{}])}
	for _, a := range f.Kernel {
		st.Frames = append(st.Frames, Frame{Frame: t.kernelFrame(a, at), Kernel: true})
		c.kernel.add(lookupAddr(a))
	}
	for _, a := range f.User {
		fr, inKernel := t.userFrame(p, a, at)
		st.Frames = append(st.Frames, Frame{Frame: fr})
		c.user.add(lookupAddr(a))
		if inKernel {
			c.kernel.add(lookupAddr(a))
		}
	}
	return c
}

// lookupAddr is the address a return address is looked up at: the call
// is the byte before it (a function ending in a call would otherwise be
// named after its neighbour).
func lookupAddr(addr uint64) uint64 {
	if addr > 0 {
		return addr - 1
	}
	return addr
}

// module returns the module of process p holding addr at time at.
func (t *Table) module(p event.ProcessKey, addr uint64, at int64) *symbolize.Module {
	ms := t.modules[p]
	for i := len(ms) - 1; i >= 0; i-- {
		m := &ms[i]
		if addr >= m.mod.Start && (m.mod.End == 0 || addr < m.mod.End) && at >= m.from && at < m.to {
			return &m.mod
		}
	}
	return nil
}

// userFrame names a return address, looked up at lookupAddr(addr); the
// frame keeps addr. inKernel reports that no module of p held it and the
// kernel's modules were asked.
func (t *Table) userFrame(p event.ProcessKey, addr uint64, at int64) (fr symbolize.Frame, inKernel bool) {
	look := lookupAddr(addr)
	m := t.module(p, look, at)
	if m == nil && p != (event.ProcessKey{}) && look >= kernelHalf {
		// A user part may hold kernel frames: a Windows user-mode
		// callback (user code calls the kernel, which calls back into
		// user code) is one user stack with kernel frames inside. A
		// user address is never one: no kernel module (Linux's
		// [kernel] fact has no range) may name it.
		m = t.module(event.ProcessKey{}, look, at)
		inKernel = true
	}
	fr = t.sym.Symbolize(m, look)
	fr.Addr = addr
	if fr.Module != "" {
		fr.Offset++
	}
	return fr, inKernel
}

func (t *Table) kernelFrame(addr uint64, at int64) symbolize.Frame {
	look := lookupAddr(addr)
	if fr, ok := t.ksym(look); ok {
		fr.Addr = addr
		fr.Offset++
		return fr
	}
	m := t.module(event.ProcessKey{}, look, at)
	fr := t.sym.Symbolize(m, look)
	fr.Addr = addr
	if fr.Module != "" {
		fr.Offset++
	}
	return fr
}

// ksym names a kernel address from the trace's kernel symbols: the
// symbol at or below it, within its size when known. Offset is from the
// symbol's start.
func (t *Table) ksym(addr uint64) (symbolize.Frame, bool) {
	if !t.ksorted {
		slices.SortStableFunc(t.ksyms, func(a, b ksym) int { return cmp.Compare(a.addr, b.addr) })
		t.ksorted = true
	}
	i := sort.Search(len(t.ksyms), func(i int) bool { return t.ksyms[i].addr > addr }) - 1
	if i < 0 {
		return symbolize.Frame{}, false
	}
	s := t.ksyms[i]
	if s.size != 0 && addr >= s.addr+s.size {
		return symbolize.Frame{}, false
	}
	mod := s.mod
	if mod == "" {
		mod = "kernel"
	}
	return symbolize.Frame{Addr: addr, Module: mod, Offset: addr - s.addr, Function: s.name}, true
}

// Problems returns the counters of frames and stacks that could not be
// named (kind unresolved), to add to a trace's trailer.
func (t *Table) Problems() []event.Counter {
	var out []event.Counter
	for name, n := range t.counts {
		if n > 0 {
			out = append(out, event.Counter{Kind: event.CountUnresolved, Name: "stack " + name, Value: n})
		}
	}
	slices.SortFunc(out, func(a, b event.Counter) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Resolved returns how many frames were named.
func (t *Table) Resolved() uint64 { return t.resolved }

// AddStats adds the table's counters to s: the unresolved frames by
// reason, and (informational) the frames named.
func (t *Table) AddStats(s *event.Stats) {
	for _, c := range t.Problems() {
		s.Add(c.Kind, c.Name, c.Value)
	}
	if t.resolved > 0 {
		s.Add(event.CountInfo, "stack frames named", t.resolved)
	}
	if n, err := t.sym.PEFailures(); n > 0 {
		s.Add(event.CountInfo, fmt.Sprintf("stack frames of Windows modules not looked up through dbghelp (%v)", err), n)
	}
}

// kernelHalf is where kernel addresses start on 64-bit systems (x86-64,
// arm64): addresses below it are user space's.
const kernelHalf = 1 << 63

// FrameString renders a frame for people: "inner_fn (a.c:12)",
// "libc.so.6+0x2a1f0" when not named, "[k] vfs_read" for kernel frames,
// "[unknown] 0x7f12…" for a user address no module of the process held.
func FrameString(f Frame) string {
	s := f.Frame.String()
	switch {
	case f.Kernel:
		return "[k] " + s
	case f.Module == "" && f.Function == "":
		return "[unknown] " + s
	}
	return s
}

// Feed returns a sink that records next's facts in t and passes
// everything on.
func (t *Table) Feed(next event.Sink) event.Sink { return feed{next, t} }

type feed struct {
	event.Sink
	t *Table
}

func (f feed) Fact(x *event.Fact) error {
	f.t.Fact(x)
	return f.Sink.Fact(x)
}

// Summary returns a sink that passes everything on and adds the table's
// counters to the trailer (see AddStats) at End.
func (t *Table) Summary(next event.Sink) event.Sink { return summary{next, t} }

type summary struct {
	event.Sink
	t *Table
}

func (s summary) End(tr *event.Trailer) error {
	c := *tr
	c.Stats = event.Stats{Counters: slices.Clone(tr.Stats.Counters)}
	s.t.AddStats(&c.Stats)
	return s.Sink.End(&c)
}

// String describes the table for debugging.
func (t *Table) String() string {
	return fmt.Sprintf("stacks.Table{%d stacks, %d processes with modules, %d kernel symbols}", len(t.stacks), len(t.modules), len(t.ksyms))
}

// Lines renders e's stack for people, innermost frame first (see
// FrameString), with a last line saying where a part is truncated or
// lost; nil when e has no stack or its stack is not in the trace.
func (t *Table) Lines(e *event.Event) []string {
	st := t.Frames(e)
	if st == nil {
		return nil
	}
	out := make([]string, 0, len(st.Frames)+1)
	for _, f := range st.Frames {
		out = append(out, FrameString(f))
	}
	if st.Flags&(event.FactUserTruncated|event.FactKernelTruncated|event.FactUserLost|event.FactKernelLost) != 0 {
		out = append(out, "... ("+st.Flags.String()+")")
	}
	return out
}
