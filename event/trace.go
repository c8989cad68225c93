package event

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"time"
)

// Header describes a trace. It comes first in every stream and every file.
type Header struct {
	// Source is where the events come from.
	Source Source
	// OS is the operating system the trace was recorded on: "linux" or
	// "windows".
	OS string
	// OSVersion is the kernel release or Windows version and build.
	OSVersion string
	// Hostname of the traced machine, when known.
	Hostname string
	// CPUs is the number of processors of the traced machine.
	CPUs uint32
	// PointerSize of the traced kernel in bytes (4 or 8), 0 if unknown.
	PointerSize uint8
	// StartWall is the UTC wall-clock time of event time 0 in nanoseconds
	// since the Unix epoch.
	StartWall int64
	// Clock describes the source's native clock and how it was converted.
	Clock Clock
	// Command is what was traced ("make -j8"), when a command was.
	Command string
	// Tool is the program and version that wrote the trace.
	Tool string
	// Layers are the layers the source was set to trace (file system
	// calls, block I/O): a layer not in it has no events because it was
	// not traced, not because nothing happened. 0 when the source did not
	// say (traces written before this field, conversions that cannot
	// tell): readers then make no claim either way. Trailer.Layers
	// narrows it.
	Layers Layers
}

// Start returns StartWall as a time.Time.
func (h *Header) Start() time.Time { return time.Unix(0, h.StartWall).UTC() }

// ClockKind is a source's native timestamp clock.
type ClockKind uint8

// Clock kinds.
const (
	ClockUnknown   ClockKind = iota
	ClockQPC                 // Windows QueryPerformanceCounter ticks, Freq Hz
	ClockFiletime            // Windows FILETIME / system time, 100 ns units
	ClockCycles              // CPU cycles, Freq Hz (the CPU speed)
	ClockMonotonic           // Linux CLOCK_MONOTONIC, ns
	ClockBoottime            // Linux CLOCK_BOOTTIME, ns (bpf_ktime_get_boot_ns)
	numClocks
)

var clockNames = [...]string{"unknown", "qpc", "filetime", "cycles", "monotonic", "boottime"}

func (c ClockKind) String() string {
	if c < numClocks {
		return clockNames[c]
	}
	return fmt.Sprintf("clock(%d)", uint8(c))
}

// Clock records the native clock of a trace and the native timestamp that
// became time 0, so that a reader can map native timestamps (in other
// tools' output) to iotrace time and back.
type Clock struct {
	Kind ClockKind
	// Freq is ticks per second (QPC frequency, CPU Hz; 1e9 for Linux
	// clocks, 1e7 for FILETIME).
	Freq uint64
	// Origin is the native timestamp of time 0.
	Origin int64
}

// ToNanos converts a native timestamp to nanoseconds from time 0. It is
// exact for 1 GHz clocks and avoids overflow for any frequency: a time
// beyond what int64 nanoseconds can hold (some 292 years from time 0, as
// only a damaged or forged timestamp is) saturates at math.MaxInt64 or
// math.MinInt64, never wraps.
func (c Clock) ToNanos(ts int64) int64 {
	n := ts - c.Origin
	if (ts^c.Origin)&(ts^n) < 0 {
		// ts − Origin does not fit in an int64.
		return saturate(ts >= c.Origin)
	}
	switch c.Freq {
	case 0, 1_000_000_000:
		return n
	case 10_000_000:
		if n > math.MaxInt64/100 || n < math.MinInt64/100 {
			return saturate(n > 0)
		}
		return n * 100
	}
	// |n| · 1e9 / Freq in 128 bits.
	neg := n < 0
	u := uint64(n)
	if neg {
		u = -u
	}
	hi, lo := bits.Mul64(u, 1_000_000_000)
	if hi >= c.Freq {
		return saturate(!neg)
	}
	q, _ := bits.Div64(hi, lo, c.Freq)
	if q > math.MaxInt64 {
		return saturate(!neg)
	}
	if neg {
		return -int64(q)
	}
	return int64(q)
}

// saturate returns the largest int64, or the smallest when !up.
func saturate(up bool) int64 {
	if up {
		return math.MaxInt64
	}
	return math.MinInt64
}

// Fact is what a reader needs to resolve a trace after the fact: a
// handle → path binding, a process, a thread, a device or a volume. Facts
// are captured at record time and applied at read time (see package
// resolve). Which fields apply depends on Kind.
type Fact struct {
	Kind FactKind
	// Time is when the fact became true (ns from trace start). Facts that
	// held before the trace started (rundowns) carry the time they were
	// observed and set Rundown.
	Time int64
	// Rundown marks a fact learned from a snapshot of state (Linux /proc
	// walk, ETW rundown) rather than from an event: it applies to the
	// whole trace before Time too, unless an earlier fact says otherwise.
	Rundown bool
	// End marks the end of the fact: handle closed, process or thread
	// exited, name deleted.
	End bool

	// Space is the handle namespace of a FactName.
	Space HandleSpace
	// Pid and ProcStart key per-process handles (fds, cwd) and processes.
	Pid       uint32
	ProcStart int64
	// Tid of a FactThread.
	Tid uint32
	// PPid of a FactProcess.
	PPid uint32
	// Handle is the fd, FileObject or FileKey of a FactName.
	Handle uint64
	// Dev of a FactDevice.
	Dev Device
	// Name is the path of a FactName, the process name (comm) of a
	// FactProcess, the device name of a FactDevice, the NT device path of
	// a FactVolume.
	Name string
	// Image is the executable path of a FactProcess, the DOS path (drive
	// letter) of a FactVolume.
	Image string
	// Detail is the command line of a FactProcess, the disk a partition
	// belongs to for a FactDevice, the identity of a FactModule ("gnu:"
	// and the hex ELF build-id, "go:" and the Go build ID, "pe:" and the
	// PE TimeDateStamp and SizeOfImage as %08X%X, then "/%08X" and the
	// PE CheckSum when it is not 0), the module of a
	// FactKernelSymbol ("" for the kernel itself).
	Detail string

	// The fields below describe stacks and modules (see docs/stacks.md).

	// Size is the length of a FactModule's mapping, the size of a
	// FactKernelSymbol's function (0 when unknown).
	Size uint64
	// Offset is the file offset mapped at a FactModule's load address
	// (Handle).
	Offset uint64
	// Vaddr is the ELF virtual address mapped at a FactModule's load
	// address, valid when Flags has FactVaddr: it lets a separate debug
	// file name the module's addresses.
	Vaddr uint64
	// Flags qualify a FactStack or FactModule.
	Flags FactFlags
	// Kernel and User are a FactStack's frames (return addresses),
	// innermost first: the kernel part, then the user part (the kernel
	// part is the deeper one).
	Kernel, User []uint64
}

// FactFlags qualify stack and module facts.
type FactFlags uint32

// Fact flags.
const (
	// FactUserTruncated marks a stack whose user part stops early (depth
	// limit, a frame without a frame pointer): the frames are right, the
	// outer ones are missing.
	FactUserTruncated FactFlags = 1 << iota
	// FactKernelTruncated is FactUserTruncated for the kernel part.
	FactKernelTruncated
	// FactVaddr marks a FactModule whose Vaddr is known.
	FactVaddr
	// FactUserLost marks a stack whose user part was asked for and not
	// captured (a fault while walking, a kernel thread).
	FactUserLost
	// FactKernelLost is FactUserLost for the kernel part.
	FactKernelLost
)

var factFlagNames = [...]string{"user-truncated", "kernel-truncated", "vaddr", "user-lost", "kernel-lost"}

// ParseFactFlag returns the flag named name (as String names one).
func ParseFactFlag(name string) (FactFlags, bool) {
	for i, n := range factFlagNames {
		if n == name {
			return 1 << i, true
		}
	}
	return 0, false
}

// String lists the set flags separated by '|'.
func (f FactFlags) String() string {
	var b []byte
	for i, n := range factFlagNames {
		if f&(1<<i) != 0 {
			if len(b) > 0 {
				b = append(b, '|')
			}
			b = append(b, n...)
		}
	}
	if rest := f &^ (1<<len(factFlagNames) - 1); rest != 0 {
		if len(b) > 0 {
			b = append(b, '|')
		}
		b = append(b, fmt.Sprintf("%#x", uint32(rest))...)
	}
	return string(b)
}

// FactKind selects what a Fact describes.
type FactKind uint8

// Fact kinds.
const (
	FactUnknown FactKind = iota
	FactName             // Space/Pid/Handle → Name (a path)
	FactProcess          // Pid/ProcStart → Name (comm), Image, Detail (cmdline), PPid
	FactThread           // Tid → Pid/ProcStart
	FactDevice           // Dev → Name, Detail (parent disk)
	FactVolume           // Name (NT device path) → Image (DOS path)
	// FactStack is stack Handle (the ID events refer to by Stack): its
	// Kernel and User frames and truncation Flags. A stack is written
	// once, before the first event that refers to it.
	FactStack
	// FactModule is a module (executable, library, kernel image or
	// driver) mapped into process Pid/ProcStart (Pid 0: the kernel's
	// address space) at Handle for Size bytes from file offset Offset:
	// Name is its path, Detail its identity, Vaddr (with FactVaddr) the
	// ELF virtual address at Handle, Image further identity (Windows: the
	// CodeView "pdb:" GUID+age and PDB name). End marks the unmapping.
	FactModule
	// FactKernelSymbol is a kernel symbol the trace's stacks need: Name
	// at address Handle, Size bytes long when known, in module Detail
	// ("" for the kernel image).
	FactKernelSymbol
	numFactKinds
)

var factNames = [...]string{"unknown", "name", "process", "thread", "device", "volume", "stack", "module", "ksym"}

func (k FactKind) String() string {
	if k < numFactKinds {
		return factNames[k]
	}
	return fmt.Sprintf("fact(%d)", uint8(k))
}

// HandleSpace is the namespace of a handle in a FactName.
type HandleSpace uint8

// Handle namespaces.
const (
	SpaceNone       HandleSpace = iota
	SpaceFD                     // Linux file descriptor of process Pid
	SpaceCwd                    // Linux working directory of process Pid (Handle 0)
	SpaceFileObject             // Windows FILE_OBJECT address
	SpaceFileKey                // Windows FileKey (FsContext)
	numSpaces
)

var spaceNames = [...]string{"none", "fd", "cwd", "fileobject", "filekey"}

func (s HandleSpace) String() string {
	if s < numSpaces {
		return spaceNames[s]
	}
	return fmt.Sprintf("space(%d)", uint8(s))
}

// Trailer ends a trace: when it ended and what was lost on the way.
type Trailer struct {
	// End is the time of the last event or the end of the recording (ns
	// from trace start).
	End int64
	// Stats counts what the source received, lost, left unpaired and
	// left unresolved.
	Stats Stats
	// Layers are the layers traced to the end when fewer than the
	// header said (a layer whose tracing failed to start after the header
	// was written); 0: as the header says.
	Layers Layers
}

// Layers is a set of layers: bit l for Layer l.
type Layers uint8

// LayersNone says that neither file nor block I/O was traced (0 says
// nothing): every layer filtered out, or the only one traced failed.
const LayersNone = Layers(1 << LayerUnknown)

// LayersOf returns the set of ls.
func LayersOf(ls ...Layer) Layers {
	var s Layers
	for _, l := range ls {
		s = s.With(l)
	}
	return s
}

// With returns s with l added.
func (s Layers) With(l Layer) Layers {
	if l >= 8 {
		return s
	}
	return s | 1<<l
}

// Has reports whether l is in s.
func (s Layers) Has(l Layer) bool { return l < 8 && s&(1<<l) != 0 }

// String lists the layers ("file,block"): "none" for LayersNone, "" for
// 0.
func (s Layers) String() string {
	if s == LayersNone {
		return "none"
	}
	var b strings.Builder
	for l := Layer(0); l < 8; l++ {
		if s.Has(l) {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l.String())
		}
	}
	return b.String()
}

// TracedLayers are the layers a trace's source traced: the trailer's
// when it narrows the header's, else the header's; 0 when the trace does
// not say (t may be nil: a trace without trailer).
func TracedLayers(h *Header, t *Trailer) Layers {
	if t != nil && t.Layers != 0 {
		return t.Layers
	}
	if h == nil {
		return 0
	}
	return h.Layers
}

// CounterKind classifies a Stats counter.
type CounterKind uint8

// Counter kinds. Lost, Unpaired and Unresolved counters are always shown to
// the user when non-zero.
const (
	CountInfo       CounterKind = iota // informational (events received, ...)
	CountLost                          // events lost before iotrace saw them
	CountUnpaired                      // a start without its end or an end without its start
	CountUnresolved                    // an event whose file name could not be resolved
	CountDropped                       // events iotrace dropped on purpose (queue overflow)
)

var counterKindNames = [...]string{"info", "lost", "unpaired", "unresolved", "dropped"}

func (k CounterKind) String() string {
	if int(k) < len(counterKindNames) {
		return counterKindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Counter is one named count.
type Counter struct {
	Kind  CounterKind
	Name  string // what was counted, with its reason: "ringbuf reserve failed (cpu 1)"
	Value uint64
}

// Stats is what every backend and reader reports: counts of events
// received, lost (with the reason), unpaired and unresolved. Nothing may be
// lost silently: every such count lives here.
type Stats struct {
	Counters []Counter
}

// Add adds v to the counter (kind, name), creating it when needed.
func (s *Stats) Add(kind CounterKind, name string, v uint64) {
	for i := range s.Counters {
		c := &s.Counters[i]
		if c.Kind == kind && c.Name == name {
			c.Value += v
			return
		}
	}
	s.Counters = append(s.Counters, Counter{Kind: kind, Name: name, Value: v})
}

// Set sets the counter (kind, name) to v, creating it when needed.
func (s *Stats) Set(kind CounterKind, name string, v uint64) {
	for i := range s.Counters {
		c := &s.Counters[i]
		if c.Kind == kind && c.Name == name {
			c.Value = v
			return
		}
	}
	s.Counters = append(s.Counters, Counter{Kind: kind, Name: name, Value: v})
}

// Get returns the value of counter (kind, name), 0 when absent.
func (s *Stats) Get(kind CounterKind, name string) uint64 {
	for _, c := range s.Counters {
		if c.Kind == kind && c.Name == name {
			return c.Value
		}
	}
	return 0
}

// Total returns the sum of all counters of kind.
func (s *Stats) Total(kind CounterKind) uint64 {
	var t uint64
	for _, c := range s.Counters {
		if c.Kind == kind {
			t += c.Value
		}
	}
	return t
}

// Merge adds every counter of o to s.
func (s *Stats) Merge(o Stats) {
	for _, c := range o.Counters {
		s.Add(c.Kind, c.Name, c.Value)
	}
}

// Sorted returns the counters ordered by kind, then name.
func (s *Stats) Sorted() []Counter {
	out := append([]Counter(nil), s.Counters...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Problems returns the non-zero lost, unpaired, unresolved and dropped
// counters: what must be shown to the user.
func (s *Stats) Problems() []Counter {
	var out []Counter
	for _, c := range s.Sorted() {
		if c.Kind != CountInfo && c.Value != 0 {
			out = append(out, c)
		}
	}
	return out
}

// Sink receives a trace as a stream: Begin once, then any mix of Event and
// Fact, then End once. The pointers passed are valid only for the duration
// of each call. A sink that returns an error stops the stream.
type Sink interface {
	Begin(h *Header) error
	Event(e *Event) error
	Fact(f *Fact) error
	End(t *Trailer) error
}
